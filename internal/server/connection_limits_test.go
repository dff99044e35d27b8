package server

import (
	"log/slog"
	"net/netip"
	"testing"

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
