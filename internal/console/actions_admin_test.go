package console_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestAddPartitionsAction grows a topic through the console, and shows the
// broker's refusal of fewer partitions with its message.
func TestAddPartitionsAction(t *testing.T) {
	n := startNode(t)
	a := newActionClient(t, n.url(""))
	adm := kadm.NewClient(n.client())
	if _, err := adm.CreateTopic(ctxT(t), 2, 1, nil, "grow"); err != nil {
		t.Fatal(err)
	}
	a.expect("add", "/api/topics/grow/partitions", map[string]any{"count": "5"}, nil, 200, `"partitions":5`)
	tds, err := adm.ListTopics(ctxT(t), "grow")
	if err != nil || len(tds["grow"].Partitions) != 5 {
		t.Fatalf("grow has %d partitions after adding (%v)", len(tds["grow"].Partitions), err)
	}
	a.expect("fewer", "/api/topics/grow/partitions", map[string]any{"count": 3}, nil, 400, "INVALID_PARTITIONS: The topic grow currently has 5 partition(s); 3 would not be an increase.")
	a.expect("no count", "/api/topics/grow/partitions", map[string]any{}, nil, 400, "give the topic's new partition count")
	a.expect("not a number", "/api/topics/grow/partitions", map[string]any{"count": "lots"}, nil, 400, `partition count: "lots" is not a whole number`)
	a.expect("missing topic", "/api/topics/nope/partitions", map[string]any{"count": 4}, nil, 404, "UNKNOWN_TOPIC_OR_PARTITION")
	a.expect("without the header", "/api/topics/grow/partitions", map[string]any{"count": 9}, map[string]string{"X-Gregor-Console": ""}, 403, "X-Gregor-Console")
}

// TestElectLeadersAction runs a preferred election on a one-broker topic:
// every partition already has its preferred leader, which the answer says
// per partition.
func TestElectLeadersAction(t *testing.T) {
	n := startNode(t)
	a := newActionClient(t, n.url(""))
	if _, err := kadm.NewClient(n.client()).CreateTopic(ctxT(t), 3, 1, nil, "lead"); err != nil {
		t.Fatal(err)
	}
	out := a.expect("preferred", "/api/topics/lead/elect", map[string]any{"type": "preferred"}, nil, 200, `"type":"preferred"`)
	var r struct {
		Partitions []struct {
			Partition int32
			Result    string
			Error     bool
		}
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Partitions) != 3 {
		t.Fatalf("answer for %d partitions, want 3: %s", len(r.Partitions), out)
	}
	for _, p := range r.Partitions {
		if p.Result != "not needed" || p.Error {
			t.Errorf("partition %d: %q (error %v), want not needed", p.Partition, p.Result, p.Error)
		}
	}
	a.expect("bad type", "/api/topics/lead/elect", map[string]any{"type": "random"}, nil, 400, `election type "random"`)
	a.expect("missing topic", "/api/topics/nope/elect", map[string]any{}, nil, 404, `topic "nope" does not exist`)
}

// TestGroupActions resets a group's offsets (a dry run that changes
// nothing, then for real) and deletes it; both are refused while the
// group has a member, as Kafka refuses them.
func TestGroupActions(t *testing.T) {
	n := startNode(t)
	a := newActionClient(t, n.url(""))
	cl := n.client(kgo.DefaultProduceTopic("orders"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctxT(t), 2, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := cl.ProduceSync(ctxT(t), &kgo.Record{Partition: int32(i % 2), Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 5, LeaderEpoch: -1})
	offs.Add(kadm.Offset{Topic: "orders", Partition: 1, At: 2, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(ctxT(t), "billing", offs); err != nil {
		t.Fatal(err)
	}
	committed := func() map[int32]int64 {
		t.Helper()
		got, err := adm.FetchOffsets(ctxT(t), "billing")
		if err != nil {
			t.Fatal(err)
		}
		m := map[int32]int64{}
		got.Each(func(o kadm.OffsetResponse) { m[o.Partition] = o.At })
		return m
	}
	type planned struct {
		Executed bool
		Offsets  []struct {
			Topic     string
			Partition int32
			Current   int64
			New       int64
		}
	}
	reset := func(body map[string]any) planned {
		t.Helper()
		status, out := a.post("/api/groups/billing/reset-offsets", body, nil)
		if status != 200 {
			t.Fatalf("reset %v: %d %s", body, status, out)
		}
		var p planned
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	dry := reset(map[string]any{"to": "earliest"})
	if dry.Executed || len(dry.Offsets) != 2 || dry.Offsets[0].Current != 5 || dry.Offsets[0].New != 0 || dry.Offsets[1].Current != 2 {
		t.Errorf("dry run: %+v", dry)
	}
	if got := committed(); got[0] != 5 || got[1] != 2 {
		t.Errorf("a dry run changed the offsets: %v", got)
	}
	if p := reset(map[string]any{"topic": "orders", "to": "shift", "value": "-1", "execute": true}); !p.Executed {
		t.Errorf("execute: %+v", p)
	}
	if got := committed(); got[0] != 4 || got[1] != 1 {
		t.Errorf("after shift -1: %v, want 4 and 1", got)
	}
	reset(map[string]any{"to": "offset", "value": "100", "execute": true}) // kept within the log: its end
	if got := committed(); got[0] != 5 || got[1] != 5 {
		t.Errorf("after to offset 100: %v, want the log ends 5 and 5", got)
	}
	a.expect("bad target", "/api/groups/billing/reset-offsets", map[string]any{"to": "yesterday"}, nil, 400, `reset to "yesterday"`)
	a.expect("negative offset", "/api/groups/billing/reset-offsets", map[string]any{"to": "offset", "value": "-3"}, nil, 400, "offset -3 is negative")
	a.expect("bad time", "/api/groups/billing/reset-offsets", map[string]any{"to": "datetime", "value": "noon"}, nil, 400, `time "noon"`)

	// A member: the group is active, so both actions are refused.
	// franz-go joins the group when the client starts.
	member := n.client(kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("orders"))
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if d, err := adm.DescribeGroups(ctxT(t), "billing"); err == nil && d["billing"].State == "Stable" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the member did not join group billing")
		}
	}
	a.expect("reset while active", "/api/groups/billing/reset-offsets", map[string]any{"to": "latest"}, nil, 409, "offsets can only be reset if group \"billing\" is inactive")
	a.expect("delete while active", "/api/groups/billing/delete", map[string]any{"confirm": "billing"}, nil, 409, "NON_EMPTY_GROUP")
	member.Close()

	a.expect("delete without confirmation", "/api/groups/billing/delete", map[string]any{"confirm": "bill"}, nil, 400, `type the group's id, "billing"`)
	a.expect("delete", "/api/groups/billing/delete", map[string]any{"confirm": "billing"}, nil, 200, `"deleted":"billing"`)
	if l, err := adm.ListGroups(ctxT(t)); err != nil || len(l) != 0 {
		t.Errorf("groups after delete: %v %v", l.Groups(), err)
	}
	a.expect("delete again", "/api/groups/billing/delete", map[string]any{"confirm": "billing"}, nil, 404, "GROUP_ID_NOT_FOUND")
}
