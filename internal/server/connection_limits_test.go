package server

import (
	"io"
	"log/slog"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/config"
	"gregor/internal/network"
)

func TestConnectionLimitsFromConfig(t *testing.T) {
	cfg, _, err := config.Load(map[string]string{
		"max.connections":                                     "100",
		"listener.name.internal.max.connections":              "20",
		"max.connections.per.ip":                              "10",
		"max.connections.per.ip.overrides":                    "127.0.0.2:3,::ffff:10.0.0.1:4,localhost:5",
		"listener.name.internal.max.connection.creation.rate": "7",
	})
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{cfg: cfg, logger: slog.New(slog.DiscardHandler)}
	l := s.connectionLimits(cfg, []string{"INTERNAL", "EXTERNAL"})
	if l.MaxConnections != 100 || l.MaxConnectionsPerIP != 10 || l.MaxConnectionCreationRate != network.Unlimited {
		t.Fatalf("broker limits %+v", l)
	}
	if got := l.Listeners["INTERNAL"]; got != (network.ListenerLimits{MaxConnections: 20, MaxConnectionCreationRate: 7}) {
		t.Fatalf("INTERNAL limits %+v", got)
	}
	// A listener without its own max.connections has the broker's.
	if got := l.Listeners["EXTERNAL"]; got != (network.ListenerLimits{MaxConnections: 100, MaxConnectionCreationRate: network.Unlimited}) {
		t.Fatalf("EXTERNAL limits %+v", got)
	}
	for ip, want := range map[string]int{"127.0.0.2": 3, "10.0.0.1": 4, "127.0.0.1": 5} {
		if got, ok := l.PerIPOverrides[netip.MustParseAddr(ip)]; !ok || got != want {
			t.Errorf("override of %s = %d (%v), want %d", ip, got, ok, want)
		}
	}
	props := connectionLimitProps(map[string]string{
		"max.connections": "1", "listener.name.x.max.connection.creation.rate": "2",
		"num.io.threads": "8", "listener.name.x.ssl.keystore.location": "k",
	})
	if len(props) != 2 {
		t.Fatalf("connection limit props %v", props)
	}
}

// TestIPConnectionCreationRateQuota: a connection_creation_rate quota of an
// ip entity, set with AlterClientQuotas, holds that address's connections
// over the rate unserved (then closes them) while other addresses are
// served; removing it lifts the throttle.
func TestIPConnectionCreationRateQuota(t *testing.T) {
	ts := startServer(t, t.TempDir(), nil)
	ctx := ctxT(t)
	adm := ts.admin()
	limited := quotaEntity("ip", "127.0.0.9")
	if _, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{setQuotas(limited, "connection_creation_rate", 1.0)}); err != nil {
		t.Fatal(err)
	}
	addr := ts.srv.Addr("PLAINTEXT").(*net.TCPAddr)
	// served reports whether a connection from source is answered an
	// ApiVersions request.
	served := func(source string) bool {
		nc, err := net.DialTCP("tcp", &net.TCPAddr{IP: net.ParseIP(source)}, addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
		req := kmsg.NewPtrApiVersionsRequest()
		frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("ip-quota-test")).AppendRequest(nil, req, 1)
		if _, err := nc.Write(frame); err != nil {
			return false
		}
		var size [4]byte
		_, err = io.ReadFull(nc, size[:])
		return err == nil
	}
	// The publisher applies the quota once the broker has the record.
	waitFor(t, "the ip quota to throttle 127.0.0.9", 30*time.Second, func() bool { return served("127.0.0.9") && !served("127.0.0.9") })
	for range 3 {
		if !served("127.0.0.10") {
			t.Fatal("an address without a quota was not served")
		}
	}
	if _, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: limited,
		Ops: []kadm.AlterClientQuotaOp{{Key: "connection_creation_rate", Remove: true}}}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the throttle to be lifted", 30*time.Second, func() bool { return served("127.0.0.9") && served("127.0.0.9") && served("127.0.0.9") })
}
