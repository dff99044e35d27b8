//go:build e2e

package test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator"
	"gregor/internal/coordinator/sharecoord"
	"gregor/internal/sharestate"
)

// kgoPeers sends a persister's requests through a franz-go client, as a
// broker's node-to-node client would.
type kgoPeers struct{ cl *kgo.Client }

func (p kgoPeers) Request(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error) {
	return p.cl.Broker(int(broker)).Request(ctx, req)
}

// TestShareStateCoordinatorFailover writes share-partition state through a
// Persister (over the wire: APIs 83-87 and FindCoordinator's SHARE key
// type) on a 3-broker cluster, checks that each write is committed when it
// returns (the __share_group_state high watermark has passed it), kills -9
// the share coordinator's broker, and reads the same state back from the
// coordinator that takes over, which also still fences the old leader
// epoch.
func TestShareStateCoordinatorFailover(t *testing.T) {
	c := startCluster(t, 1, 3,
		"share.coordinator.state.topic.num.partitions=3",
		"share.coordinator.snapshot.update.records.per.snapshot=2")
	c.createTopic("work", 1)
	cl := c.client()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	topics, err := adm.ListTopics(ctx, "work")
	if err != nil {
		t.Fatal(err)
	}
	key := sharestate.Key{GroupID: "workers", TopicID: topics["work"].ID, Partition: 0}
	statePartition := coordinator.PartitionFor(sharecoord.CoordinatorKey(key), 3)

	var coordinatorNode int32 = -1
	p := sharecoord.NewPersister(sharecoord.PersisterConfig{
		NodeID: -1, // not a broker: every call goes over the wire
		Coordinator: func(ctx context.Context, k string) (int32, error) {
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.CoordinatorType, req.CoordinatorKeys = 2, []string{k}
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return -1, fmt.Errorf("%w: %w", kerr.CoordinatorNotAvailable, err)
			}
			co := resp.Coordinators[0]
			if err := kerr.ErrorForCode(co.ErrorCode); err != nil {
				return -1, err
			}
			coordinatorNode = co.NodeID
			return co.NodeID, nil
		},
		Peers: kgoPeers{cl},
	})
	// highWatermark is the committed end of the key's __share_group_state
	// partition, as its leader reports it.
	highWatermark := func() int64 {
		t.Helper()
		var hw int64
		c.eventually("the high watermark of __share_group_state", 30*time.Second, func() error {
			ends, err := adm.ListEndOffsets(ctx, "__share_group_state")
			if err != nil {
				return err // the client's metadata may still name a killed leader
			}
			o, ok := ends.Lookup("__share_group_state", statePartition)
			if !ok {
				return fmt.Errorf("no partition %d", statePartition)
			}
			hw = o.Offset
			return o.Err
		})
		return hw
	}
	// committed runs a persister call that writes one record and checks
	// that the high watermark has passed it when the call returns.
	committed := func(what string, call func() error) {
		t.Helper()
		before := highWatermark()
		if err := call(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if after := highWatermark(); after < before+1 {
			t.Fatalf("%s returned before its record was committed: high watermark %d, was %d", what, after, before)
		}
	}

	if err := p.Initialize(ctx, key, 1, 0); err != nil { // creates __share_group_state on the way
		t.Fatal(err)
	}
	committed("read recording leader epoch 5", func() error { _, err := p.Read(ctx, key, 5); return err })
	for i := range int64(5) {
		u := sharestate.Update{StateEpoch: 1, LeaderEpoch: 5, StartOffset: i * 2, DeliveryCompleteCount: int32(i),
			Batches: []sharestate.Batch{
				{FirstOffset: i * 10, LastOffset: i*10 + 4, DeliveryState: sharestate.Acknowledged, DeliveryCount: 1},
				{FirstOffset: i*10 + 5, LastOffset: i*10 + 9, DeliveryState: sharestate.Available, DeliveryCount: int16(i + 1)},
			}}
		committed(fmt.Sprintf("write %d", i), func() error { return p.Write(ctx, key, u) })
	}
	before, err := p.Read(ctx, key, 5)
	if err != nil {
		t.Fatal(err)
	}
	if before.StartOffset != 8 || before.StateEpoch != 1 || len(before.Batches) != 9 {
		t.Fatalf("state before the failover: %+v", before)
	}

	old := coordinatorNode
	// Another broker does not coordinate the share-partition.
	for _, b := range c.brokers {
		if b.id == old {
			continue
		}
		req := kmsg.NewPtrReadShareGroupStateRequest()
		req.GroupID = key.GroupID
		rt := kmsg.NewReadShareGroupStateRequestTopic()
		rt.TopicID = key.TopicID
		rt.Partitions = []kmsg.ReadShareGroupStateRequestTopicPartition{{Partition: key.Partition, LeaderEpoch: 5}}
		req.Topics = append(req.Topics, rt)
		resp, err := kgoPeers{cl}.Request(ctx, b.id, req)
		if err != nil {
			t.Fatal(err)
		}
		if code := resp.(*kmsg.ReadShareGroupStateResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.NotCoordinator.Code {
			t.Errorf("ReadShareGroupState at broker %d, not the coordinator: %v, want NOT_COORDINATOR", b.id, kerr.ErrorForCode(code))
		}
		break
	}
	var victim *node
	for _, b := range c.brokers {
		if b.id == old {
			victim = b
		}
	}
	if victim == nil {
		t.Fatalf("share coordinator %d is not a broker of the cluster", old)
	}
	victim.kill9()

	after, err := p.Read(ctx, key, 5) // retried until a new coordinator has loaded the partition
	if err != nil {
		t.Fatalf("read after killing the share coordinator %d: %v\n%s", old, err, c.logs())
	}
	if coordinatorNode == old {
		t.Fatalf("read answered by the killed broker %d", old)
	}
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("state after the failover (coordinator %d -> %d):\n%+v\nbefore:\n%+v", old, coordinatorNode, after, before)
	}
	sum, err := p.ReadSummary(ctx, key)
	if err != nil || sum.StartOffset != 8 || sum.LeaderEpoch != 5 || sum.DeliveryCompleteCount != 4 {
		t.Fatalf("summary after the failover: %+v %v", sum, err)
	}
	if err := p.Write(ctx, key, sharestate.Update{StateEpoch: 1, LeaderEpoch: 4, StartOffset: -1, DeliveryCompleteCount: -1}); !errors.Is(err, kerr.FencedLeaderEpoch) {
		t.Fatalf("write of an older leader epoch after the failover: %v, want FENCED_LEADER_EPOCH", err)
	}
	committed("write after the failover", func() error {
		return p.Write(ctx, key, sharestate.Update{StateEpoch: 1, LeaderEpoch: 5, StartOffset: 45, DeliveryCompleteCount: 0})
	})
	if st, err := p.Read(ctx, key, 5); err != nil || st.StartOffset != 45 || len(st.Batches) != 1 {
		t.Fatalf("state after a write at the new coordinator: %+v %v", st, err)
	}
}
