// Package clienttest starts the brokers the client packages' tests run
// against: an in-process Gregor node and franz-go's kfake, so one scenario
// runs against both (the differential of issue 19). Only tests import it.
package clienttest

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/internal/config"
	"gregor/internal/server"
)

// Broker is a running cluster of either kind.
type Broker struct {
	Name  string // "gregor" or "kfake"
	Addr  string
	Fake  *kfake.Cluster // nil for Gregor
	Admin *kadm.Client
}

// StartGregor starts a one-node Gregor (broker and controller) on loopback
// ports, shut down when the test ends.
func StartGregor(t testing.TB) *Broker {
	t.Helper()
	props := map[string]string{
		"listeners":                "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"controller.quorum.voters": "1@127.0.0.1:0",
		"log.dirs":                 t.TempDir(),
		"gregor.http.listen":       "127.0.0.1:0",
	}
	cfg, _, err := config.Load(props)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return newBroker(t, "gregor", srv.Addr("PLAINTEXT").String(), nil)
}

// StartKfake starts a kfake cluster (one broker unless opts say more),
// closed when the test ends.
func StartKfake(t testing.TB, opts ...kfake.Opt) *Broker {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return newBroker(t, "kfake", c.ListenAddrs()[0], c)
}

func newBroker(t testing.TB, name, addr string, fake *kfake.Cluster) *Broker {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &Broker{Name: name, Addr: addr, Fake: fake, Admin: kadm.NewClient(cl)}
}

// Both runs fn against Gregor and against kfake, as subtests.
func Both(t *testing.T, fn func(t *testing.T, b *Broker)) {
	t.Run("gregor", func(t *testing.T) { fn(t, StartGregor(t)) })
	t.Run("kfake", func(t *testing.T) { fn(t, StartKfake(t)) })
}

// CreateTopic creates topic with one replica per partition.
func (b *Broker) CreateTopic(t testing.TB, topic string, partitions int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	resp, err := b.Admin.CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create %s on %s: %v", topic, b.Name, err)
	}
}
