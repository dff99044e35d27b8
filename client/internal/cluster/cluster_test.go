package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRefresh reads topics, partitions and leaders from kfake, keeps an
// unknown topic's error, and follows a leader move on the next refresh.
func TestRefresh(t *testing.T) {
	fake, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(4, "known"))
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	c, err := New(Config{Bootstrap: fake.ListenAddrs(), ClientID: "test", RequestTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if err := c.Refresh(ctx, []string{"known", "unknown"}); err != nil {
		t.Fatal(err)
	}
	k := c.Topic("known")
	if k == nil || k.Err != nil || len(k.Partitions) != 4 || len(k.Available) != 4 {
		t.Fatalf("known: %+v", k)
	}
	for i, p := range k.Partitions {
		if p.ID != int32(i) || p.Leader != fake.LeaderFor("known", int32(i)) {
			t.Fatalf("partition %d: %+v, kfake's leader %d", i, p, fake.LeaderFor("known", int32(i)))
		}
	}
	if u := c.Topic("unknown"); u == nil || !errors.Is(u.Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("unknown: %+v", u)
	}
	if _, err := c.Conn(ctx, k.Partitions[0].Leader); err != nil {
		t.Fatal(err)
	}

	to := (k.Partitions[0].Leader + 1) % 3
	if err := fake.MoveTopicPartition("known", 0, to); err != nil {
		t.Fatal(err)
	}
	if err := c.Refresh(ctx, []string{"known"}); err != nil {
		t.Fatal(err)
	}
	if got := c.Topic("known").Partitions[0].Leader; got != to {
		t.Fatalf("leader after the move: %d, want %d", got, to)
	}
	c.Forget("known")
	if c.Topic("known") != nil {
		t.Fatal("forgotten topic still known")
	}
}
