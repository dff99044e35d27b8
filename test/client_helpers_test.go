//go:build e2e

package test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// leaderKill is the set-up the Go client tests (client/producer,
// client/consumer) share: one controller and three brokers, a
// one-partition topic on all three (min.insync.replicas=2, so writes go on
// with one broker down), and the waits around killing its leader.
type leaderKill struct {
	c     *cluster
	adm   *kadm.Client
	topic string
}

// startLeaderKill starts the cluster, with a short broker session so a
// killed broker is fenced quickly, and creates topic.
func startLeaderKill(t *testing.T, ctx context.Context, topic string) *leaderKill {
	t.Helper()
	c := startCluster(t, 1, 3, "broker.session.timeout.ms=1500")
	adm := kadm.NewClient(c.client())
	if _, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic); err != nil {
		t.Fatal(err)
	}
	return &leaderKill{c: c, adm: adm, topic: topic}
}

// waitLeader waits until the partition has a leader and all three replicas
// in sync, and returns the leader.
func (k *leaderKill) waitLeader(ctx context.Context, timeout time.Duration) int32 {
	var l int32
	k.c.eventually("leader and full ISR", timeout, func() error {
		md, err := k.adm.Metadata(ctx, k.topic)
		if err != nil {
			return err
		}
		pd := md.Topics[k.topic].Partitions[0]
		if pd.Leader < 0 || len(pd.ISR) != 3 {
			return fmt.Errorf("leader %d isr %v", pd.Leader, pd.ISR)
		}
		l = pd.Leader
		return nil
	})
	return l
}

// waitNewLeader waits until a broker other than old leads the partition.
func (k *leaderKill) waitNewLeader(ctx context.Context, old int32) {
	k.c.eventually("a new leader", 60*time.Second, func() error {
		md, err := k.adm.Metadata(ctx, k.topic)
		if err != nil {
			return err
		}
		if nl := md.Topics[k.topic].Partitions[0].Leader; nl < 0 || nl == old {
			return fmt.Errorf("leader %d", nl)
		}
		return nil
	})
}

// broker is the broker node with the given id.
func (c *cluster) broker(id int32) *node {
	for _, n := range c.brokers {
		if n.id == id {
			return n
		}
	}
	c.t.Fatalf("no broker %d", id)
	return nil
}
