package server

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func alterShareOffsets(t *testing.T, cl *kgo.Client, group, topic string, offsets map[int32]int64) *kmsg.AlterShareGroupOffsetsResponse {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
		req.GroupID = group
		rt := kmsg.NewAlterShareGroupOffsetsRequestTopic()
		rt.Topic = topic
		for p, o := range offsets {
			rp := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
			rp.Partition, rp.StartOffset = p, o
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp := rawRequest[*kmsg.AlterShareGroupOffsetsResponse](t, cl, req)
		if !retriable(resp.ErrorCode) || time.Now().After(deadline) {
			return resp
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func describeShareOffsets(t *testing.T, cl *kgo.Client, group string, topics map[string][]int32) kmsg.DescribeShareGroupOffsetsResponseGroup {
	t.Helper()
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	rg.GroupID = group
	for topic, ps := range topics {
		rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
		rt.Topic, rt.Partitions = topic, ps
		rg.Topics = append(rg.Topics, rt)
	}
	req.Groups = append(req.Groups, rg)
	return rawRequest[*kmsg.DescribeShareGroupOffsetsResponse](t, cl, req).Groups[0]
}

func deleteShareOffsets(t *testing.T, cl *kgo.Client, group string, topics ...string) *kmsg.DeleteShareGroupOffsetsResponse {
	t.Helper()
	req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	req.GroupID = group
	for _, topic := range topics {
		rt := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
		rt.Topic = topic
		req.Topics = append(req.Topics, rt)
	}
	return rawRequest[*kmsg.DeleteShareGroupOffsetsResponse](t, cl, req)
}

// TestShareGroupOffsetsAdminAPIs drives DescribeShareGroupOffsets,
// AlterShareGroupOffsets and DeleteShareGroupOffsets on a node with an
// in-memory persister: their effect on the persisted state, Kafka's error
// codes and the ACLs each needs.
func TestShareGroupOffsetsAdminAPIs(t *testing.T) {
	fa := &fakeAuthorizer{open: true}
	persister := newMemPersister()
	ts := startServerWith(t, t.TempDir(), map[string]string{"offsets.topic.num.partitions": "1"}, func(s *Server) {
		s.authorizer, s.sharePersister = fa, persister
	})
	cl := ts.client()
	if _, err := ts.admin().CreateTopics(ctxT(t), 2, 1, nil, "a", "b"); err != nil {
		t.Fatal(err)
	}

	// The raw requests below skip FindCoordinator, which makes
	// __consumer_offsets: look the coordinator up once first.
	ts.admin().FindGroupCoordinators(ctxT(t), "sg")

	// Alter on a new id makes the group and initializes the partitions.
	resp := alterShareOffsets(t, cl, "sg", "a", map[int32]int64{1: 7})
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("alter: %+v", resp)
	}
	keys := persister.keys()
	if len(keys) != 1 || keys[0].Partition != 1 {
		t.Fatalf("persisted %+v", keys)
	}
	st, _ := persister.Read(ctxT(t), keys[0], 0)
	if st.StartOffset != 7 || st.StateEpoch < 1 {
		t.Fatalf("state %+v", st)
	}
	resp = alterShareOffsets(t, cl, "sg", "a", map[int32]int64{1: 3, 5: 0})
	for _, p := range resp.Topics[0].Partitions {
		want := int16(0)
		if p.Partition == 5 {
			want = kerr.UnknownTopicOrPartition.Code
		}
		if p.ErrorCode != want {
			t.Fatalf("alter of partitions 1 and 5: %+v", resp.Topics[0].Partitions)
		}
	}
	if st2, _ := persister.Read(ctxT(t), keys[0], 0); st2.StartOffset != 3 || st2.StateEpoch <= st.StateEpoch {
		t.Fatalf("re-altered state %+v after %+v: want offset 3 and a newer state epoch", st2, st)
	}
	codeOf(t, "alter of a missing topic", alterShareOffsets(t, cl, "sg", "nope", map[int32]int64{0: 0}).Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)

	// Describe: named partitions (0 has no state) and all of the group's.
	g := describeShareOffsets(t, cl, "sg", map[string][]int32{"a": {0, 1}})
	if g.ErrorCode != 0 || len(g.Topics) != 1 || g.Topics[0].Partitions[0].StartOffset != -1 || g.Topics[0].Partitions[1].StartOffset != 3 {
		t.Fatalf("describe a: %+v", g)
	}
	g = describeShareOffsets(t, cl, "sg", nil)
	if len(g.Topics) != 1 || g.Topics[0].Topic != "a" || len(g.Topics[0].Partitions) != 1 || g.Topics[0].Partitions[0].StartOffset != 3 {
		t.Fatalf("describe all: %+v", g)
	}
	codeOf(t, "describe of an unknown group", describeShareOffsets(t, cl, "nope", nil).ErrorCode, kerr.GroupIDNotFound)

	// ACLs.
	fa.only(groupGrant(kmsg.ACLOperationRead, "sg"))
	codeOf(t, "describe without DESCRIBE", describeShareOffsets(t, cl, "sg", nil).ErrorCode, kerr.GroupAuthorizationFailed)
	fa.only(groupGrant(kmsg.ACLOperationDescribe, "sg"))
	codeOf(t, "describe without DESCRIBE on a", describeShareOffsets(t, cl, "sg", map[string][]int32{"a": {1}}).Topics[0].Partitions[0].ErrorCode, kerr.TopicAuthorizationFailed)
	if g := describeShareOffsets(t, cl, "sg", nil); g.ErrorCode != 0 || len(g.Topics) != 0 {
		t.Errorf("describe all without DESCRIBE on a: %+v", g)
	}
	r := alterShareOffsets(t, cl, "sg", "a", map[int32]int64{1: 0})
	codeOf(t, "alter without READ", r.ErrorCode, kerr.GroupAuthorizationFailed)
	codeOf(t, "alter without READ: partition", r.Topics[0].Partitions[0].ErrorCode, kerr.GroupAuthorizationFailed)
	fa.only(groupGrant(kmsg.ACLOperationRead, "sg"))
	codeOf(t, "alter without READ on a", alterShareOffsets(t, cl, "sg", "a", map[int32]int64{1: 0}).Topics[0].Partitions[0].ErrorCode, kerr.TopicAuthorizationFailed)
	codeOf(t, "delete without DELETE", deleteShareOffsets(t, cl, "sg", "a").ErrorCode, kerr.GroupAuthorizationFailed)
	fa.only(groupGrant(kmsg.ACLOperationDelete, "sg"))
	codeOf(t, "delete without READ on a", deleteShareOffsets(t, cl, "sg", "a").Topics[0].ErrorCode, kerr.TopicAuthorizationFailed)
	fa.only()
	fa.mu.Lock()
	fa.open = true
	fa.mu.Unlock()

	// A member makes the group non-empty: alter and delete are refused.
	join := shareHeartbeat(t, cl, "sg", "m1", 0, []string{"a"})
	if join.ErrorCode != 0 {
		t.Fatalf("join: %+v", join)
	}
	codeOf(t, "alter of a non-empty group", alterShareOffsets(t, cl, "sg", "a", map[int32]int64{1: 0}).ErrorCode, kerr.NonEmptyGroup)
	codeOf(t, "delete of a non-empty group", deleteShareOffsets(t, cl, "sg", "a").ErrorCode, kerr.NonEmptyGroup)
	leave := shareHeartbeat(t, cl, "sg", "m1", -1, nil)
	if leave.ErrorCode != 0 {
		t.Fatalf("leave: %+v", leave)
	}

	// Delete: the topic's state goes (both partitions: the member's join
	// initialized 0), a topic without state is UNKNOWN_TOPIC_OR_PARTITION.
	d := deleteShareOffsets(t, cl, "sg", "a", "b")
	if d.ErrorCode != 0 || d.Topics[0].ErrorCode != 0 || d.Topics[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("delete: %+v", d)
	}
	if keys := persister.keys(); len(keys) != 0 {
		t.Fatalf("state left after delete: %+v", keys)
	}
	if g := describeShareOffsets(t, cl, "sg", nil); g.ErrorCode != 0 || len(g.Topics) != 0 {
		t.Fatalf("describe after delete: %+v", g)
	}
}

// TestDescribeShareGroupOffsetsLag: DescribeShareGroupOffsets v1's lag
// (KIP-1226) is the records from the share-partition start offset to the
// partition's end that are not delivery-complete: a record released
// (available again) counts, records accepted past it do not; records
// produced later count; a partition without state has none (-1).
func TestDescribeShareGroupOffsetsLag(t *testing.T) {
	ts := startServer(t, t.TempDir(), nil)
	cl := ts.client()
	ctx := ctxT(t)
	if _, err := ts.admin().CreateTopics(ctx, 1, 1, nil, "lag", "other"); err != nil {
		t.Fatal(err)
	}
	prod := ts.client(kgo.DefaultProduceTopic("lag"))
	produce := func(n int) {
		for i := range n {
			if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte{byte(i)}}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce(10)
	alterGroupConfig(t, cl, "lag-g", "share.auto.offset.reset", "earliest")
	consumer := ts.client(kgo.ShareGroup("lag-g"), kgo.ConsumeTopics("lag"), kgo.ShareMaxRecords(4), kgo.ShareMaxRecordsStrict())
	var polled []*kgo.Record
	for len(polled) == 0 {
		fs := consumer.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("poll: %v", err)
		}
		polled = fs.Records()
	}
	// The first record polled is released, the others accepted.
	consumer.MarkAcks(kgo.AckRelease, polled[0])
	if len(polled) > 1 {
		consumer.MarkAcks(kgo.AckAccept, polled[1:]...)
	}
	if err := consumer.FlushAcks(ctx); err != nil {
		t.Fatal(err)
	}
	if polled[0].Offset != 0 {
		t.Fatalf("first record polled at offset %d", polled[0].Offset)
	}
	lagIs := func(want int64) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			g := describeShareOffsets(t, cl, "lag-g", map[string][]int32{"lag": {0}, "other": {0}})
			var got, other int64 = -2, -2
			for _, tp := range g.Topics {
				if len(tp.Partitions) == 1 && tp.Topic == "lag" {
					got = tp.Partitions[0].Lag
				} else if len(tp.Partitions) == 1 {
					other = tp.Partitions[0].Lag
				}
			}
			if got == want && other == -1 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("lag %d (other %d), want %d: %+v", got, other, want, g)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	accepted := int64(len(polled) - 1)
	lagIs(10 - accepted)
	produce(5)
	lagIs(15 - accepted)
}
