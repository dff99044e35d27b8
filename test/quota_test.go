//go:build e2e

package test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestClusterClientQuotas: a client quota altered through any broker is
// committed by the active controller and described by every broker: also
// by a broker that joins after the controllers snapshotted the metadata
// log and cleaned it away, and after the active controller failed over.
func TestClusterClientQuotas(t *testing.T) {
	c := startCluster(t, 3, 2,
		"metadata.log.max.record.bytes.between.snapshots=2048",
		"metadata.log.segment.bytes=4096")
	// describeOn asks one broker, which answers from its own image.
	describeOn := func(addr string) (string, error) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
		if err != nil {
			return "", err
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		described, err := kadm.NewClient(cl).DescribeClientQuotas(ctx, false, nil)
		if err != nil {
			return "", err
		}
		var parts []string
		for _, d := range described {
			for _, v := range d.Values {
				parts = append(parts, fmt.Sprintf("%s:%s=%v", d.Entity, v.Key, v.Value))
			}
		}
		return strings.Join(parts, " "), nil
	}
	everyBroker := func(want string) {
		t.Helper()
		for _, b := range c.brokers {
			c.eventually(fmt.Sprintf("broker %d describes %q", b.id, want), 20*time.Second, func() error {
				got, err := describeOn(b.addr())
				if err == nil && got != want {
					err = fmt.Errorf("got %q", got)
				}
				return err
			})
		}
	}
	alter := func(b *node, user string, value float64) {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		entity := kadm.ClientQuotaEntity{{Type: "user", Name: kmsg.StringPtr(user)}}
		res, err := kadm.NewClient(cl).AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{
			{Entity: entity, Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: value}}}})
		if err == nil && (len(res) != 1 || res[0].Err != nil) {
			err = fmt.Errorf("results %+v", res)
		}
		if err != nil {
			t.Fatalf("alter through broker %d: %v", b.id, err)
		}
	}
	alter(c.brokers[0], "alice", 1024)
	everyBroker("{user=alice}:producer_byte_rate=1024")

	// Enough metadata for the controllers to snapshot and drop the log's
	// first segment, which holds the quota record.
	for i := range 30 {
		c.createTopic(fmt.Sprintf("q%02d", i), 2)
	}
	c.joinAfterSnapshot(150)
	everyBroker("{user=alice}:producer_byte_rate=1024")

	c.killActiveController()
	alter(c.brokers[1], "bob", 2048)
	everyBroker("{user=alice}:producer_byte_rate=1024 {user=bob}:producer_byte_rate=2048")
}
