//go:build e2e

package test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The group suites consume groupRecords records spread over groupPartitions
// partitions: record i goes to partition i%groupPartitions with value
// "<topic>-<i>", so every partition ends at groupRecords/groupPartitions.
const (
	groupRecords    = 2000
	groupPartitions = 4
	groupPerPart    = groupRecords / groupPartitions
)

// produceSpread creates topic with groupPartitions partitions and writes
// records first..first+n-1 round-robin over them with franz-go.
func produceSpread(t *testing.T, b *broker, topic string, create bool, first, n int) {
	t.Helper()
	cl := newKgo(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if create {
		createTopic(t, cl, topic, groupPartitions, nil)
	}
	recs := make([]*kgo.Record, 0, n)
	for i := first; i < first+n; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % groupPartitions),
			Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("%s-%d", topic, i))})
	}
	if err := cl.ProduceSync(ctxT(t, 30*time.Second), recs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
}

// TestGroupSarama runs two sarama ConsumerGroup members per balance
// strategy over a 4-partition topic: every record is processed once, the
// group's committed offsets equal the end offsets, and a later member of
// the same group starts at the commits.
func TestGroupSarama(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	for _, s := range []struct {
		name     string
		strategy func() sarama.BalanceStrategy
	}{
		{"range", sarama.NewBalanceStrategyRange},
		{"roundrobin", sarama.NewBalanceStrategyRoundRobin},
		{"sticky", sarama.NewBalanceStrategySticky},
	} {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			saramaGroupRun(t, b, s.name, s.strategy())
		})
	}
}

// saramaHandler records every message it processes, marks it, and commits
// synchronously every 100 messages and at the end of each session, so that
// all processed records are committed before partitions move to another
// member. It processes nothing until some session has 2 of the 4
// partitions, that is until both members share a generation.
type saramaHandler struct {
	member int
	state  *saramaGroupState
}

type saramaGroupState struct {
	mu        sync.Mutex
	seen      map[[2]int64]int // (partition, offset) -> times processed
	perMember [2]int
	claims    []string // "member gen [partitions]" per Setup, for failure messages
	initial   map[int32]int64
	ready     chan struct{}
	readyOnce sync.Once
	done      chan struct{}
	doneOnce  sync.Once
}

func (h *saramaHandler) Setup(s sarama.ConsumerGroupSession) error {
	st := h.state
	parts := append([]int32(nil), s.Claims()[topicOf(s)]...)
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	st.mu.Lock()
	st.claims = append(st.claims, fmt.Sprintf("member%d gen%d %v", h.member, s.GenerationID(), parts))
	st.mu.Unlock()
	if len(parts) == groupPartitions/2 {
		st.readyOnce.Do(func() { close(st.ready) })
	}
	return nil
}

func topicOf(s sarama.ConsumerGroupSession) string {
	for topic := range s.Claims() {
		return topic
	}
	return ""
}

func (h *saramaHandler) Cleanup(s sarama.ConsumerGroupSession) error {
	s.Commit()
	return nil
}

func (h *saramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	st := h.state
	select {
	case <-st.ready:
	case <-s.Context().Done():
		return nil
	}
	n := 0
	for {
		select {
		case m, ok := <-c.Messages():
			if !ok {
				return nil
			}
			st.mu.Lock()
			st.seen[[2]int64{int64(m.Partition), m.Offset}]++
			st.perMember[h.member]++
			total := len(st.seen)
			st.mu.Unlock()
			s.MarkMessage(m, "")
			if n++; n%100 == 0 {
				s.Commit()
			}
			if total >= groupRecords {
				st.doneOnce.Do(func() { close(st.done) })
			}
		case <-s.Context().Done():
			return nil
		}
	}
}

func saramaGroupConfig(strategy sarama.BalanceStrategy) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cfg.ClientID = "gregor-e2e-group"
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{strategy}
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Consumer.Return.Errors = true
	cfg.Metadata.AllowAutoTopicCreation = false
	return cfg
}

// runSaramaMember consumes in a loop until ctx ends, reporting errors to t.
// The returned function closes the member and waits for it.
func runSaramaMember(t *testing.T, b *broker, group, topic string, cfg *sarama.Config, h sarama.ConsumerGroupHandler) func() {
	t.Helper()
	cg, err := sarama.NewConsumerGroup([]string{b.addr()}, group, cfg)
	if err != nil {
		t.Fatalf("NewConsumerGroup: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{topic}, h); err != nil && !errors.Is(err, sarama.ErrClosedConsumerGroup) {
				t.Errorf("Consume: %v", err)
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		for err := range cg.Errors() {
			t.Errorf("consumer group error: %v", err)
		}
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := cg.Close(); err != nil {
				t.Errorf("close consumer group: %v", err)
			}
			wg.Wait()
		})
	}
	t.Cleanup(stop)
	return stop
}

func saramaGroupRun(t *testing.T, b *broker, strategy string, bs sarama.BalanceStrategy) {
	topic, group := "group-sarama-"+strategy, "sarama-"+strategy
	produceSpread(t, b, topic, true, 0, groupRecords)
	cfg := saramaGroupConfig(bs)

	st := &saramaGroupState{seen: map[[2]int64]int{}, ready: make(chan struct{}), done: make(chan struct{})}
	var stops []func()
	for m := 0; m < 2; m++ {
		stops = append(stops, runSaramaMember(t, b, group, topic, cfg, &saramaHandler{member: m, state: st}))
	}
	claims := func() []string {
		st.mu.Lock()
		defer st.mu.Unlock()
		return append([]string(nil), st.claims...)
	}
	select {
	case <-st.ready:
	case <-time.After(60 * time.Second):
		t.Fatalf("no generation with both members within 60s; sessions: %v\n%s", claims(), b.log())
	}

	admin, err := sarama.NewClusterAdmin([]string{b.addr()}, cfg)
	if err != nil {
		t.Fatalf("cluster admin: %v", err)
	}
	defer admin.Close()

	select {
	case <-st.done:
	case <-time.After(60 * time.Second):
		st.mu.Lock()
		n := len(st.seen)
		st.mu.Unlock()
		t.Fatalf("processed %d of %d records within 60s; sessions: %v", n, groupRecords, claims())
	}
	// While both members are in: DescribeGroups shows a stable group of
	// two running this strategy, with 2 partitions each.
	descs, err := admin.DescribeConsumerGroups([]string{group})
	if err != nil || len(descs) != 1 {
		t.Fatalf("DescribeConsumerGroups: %v %v", descs, err)
	}
	if d := descs[0]; d.Err != sarama.ErrNoError || d.State != "Stable" || d.ProtocolType != "consumer" ||
		d.Protocol != strategy || len(d.Members) != 2 {
		t.Errorf("DescribeConsumerGroups: err %v state %q type %q protocol %q members %d; want Stable consumer %s 2",
			d.Err, d.State, d.ProtocolType, d.Protocol, len(d.Members), strategy)
	} else {
		for id, m := range d.Members {
			a, err := m.GetMemberAssignment()
			if err != nil || len(a.Topics[topic]) != groupPartitions/2 {
				t.Errorf("member %s assignment %+v (%v), want 2 partitions of %s", id, a, err, topic)
			}
		}
	}
	if groups, err := admin.ListConsumerGroups(); err != nil || groups[group] != "consumer" {
		t.Errorf("ListConsumerGroups: %v %v; want %s as consumer", groups, err, group)
	}
	for _, stop := range stops {
		stop()
	}

	st.mu.Lock()
	for k, n := range st.seen {
		if n != 1 {
			t.Errorf("record %d/%d processed %d times", k[0], k[1], n)
		}
	}
	if len(st.seen) != groupRecords {
		t.Errorf("processed %d distinct records, want %d", len(st.seen), groupRecords)
	}
	if st.perMember[0] == 0 || st.perMember[1] == 0 {
		t.Errorf("records per member %v; want both members to take part", st.perMember)
	}
	st.mu.Unlock()
	t.Logf("sessions: %v", claims())

	parts := []int32{0, 1, 2, 3}
	committed, err := admin.ListConsumerGroupOffsets(group, map[string][]int32{topic: parts})
	if err != nil {
		t.Fatalf("ListConsumerGroupOffsets: %v", err)
	}
	for _, p := range parts {
		blk := committed.GetBlock(topic, p)
		if blk == nil || blk.Err != sarama.ErrNoError || blk.Offset != groupPerPart {
			t.Errorf("committed offset of %s/%d: %+v, want %d", topic, p, blk, groupPerPart)
		}
	}

	// A new member after everyone left resumes at the commits: its claims
	// start at the end offsets and it gets only records produced now.
	produceSpread(t, b, topic, false, groupRecords, groupPartitions)
	late := &saramaGroupState{seen: map[[2]int64]int{}, done: make(chan struct{}), initial: map[int32]int64{}}
	stop := runSaramaMember(t, b, group, topic, cfg, &lateHandler{state: late})
	select {
	case <-late.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("late member: got %v within 60s, want offset %d of every partition", late.snapshot(), groupPerPart)
	}
	stop()
	late.mu.Lock()
	defer late.mu.Unlock()
	for p := int32(0); p < groupPartitions; p++ {
		if off := late.initial[p]; off != groupPerPart {
			t.Errorf("late member claim %d starts at %d, want the commit %d", p, off, groupPerPart)
		}
	}
	for k := range late.seen {
		if k[1] != groupPerPart {
			t.Errorf("late member got %d/%d, want only offset %d", k[0], k[1], groupPerPart)
		}
	}
}

func (st *saramaGroupState) snapshot() []string {
	st.mu.Lock()
	defer st.mu.Unlock()
	var out []string
	for k := range st.seen {
		out = append(out, fmt.Sprintf("%d/%d", k[0], k[1]))
	}
	sort.Strings(out)
	return out
}

// lateHandler records the initial offset of each claim and every message;
// done closes once one message per partition has arrived.
type lateHandler struct{ state *saramaGroupState }

func (h *lateHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *lateHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *lateHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	st := h.state
	st.mu.Lock()
	st.initial[c.Partition()] = c.InitialOffset()
	st.mu.Unlock()
	for {
		select {
		case m, ok := <-c.Messages():
			if !ok {
				return nil
			}
			st.mu.Lock()
			st.seen[[2]int64{int64(m.Partition), m.Offset}]++
			parts := map[int64]bool{}
			for k := range st.seen {
				parts[k[0]] = true
			}
			st.mu.Unlock()
			if len(parts) == groupPartitions {
				st.doneOnce.Do(func() { close(st.done) })
			}
		case <-s.Context().Done():
			return nil
		}
	}
}

// confluentGroupScript runs two confluent-kafka consumers of one group in
// one process, polled in turn, with manual synchronous commits after every
// batch (so every processed record is committed before a rebalance can
// move its partition), until they hold every record; it prints what each
// consumed and the committed offsets. With "resume" it runs one new member
// of the group and prints the records it gets and where it started.
const confluentGroupScript = `
import json, sys, time
from confluent_kafka import Consumer, TopicPartition, KafkaException

bootstrap, topic, group, strategy, mode, want = sys.argv[1:7]
want = int(want)
parts = [TopicPartition(topic, p) for p in range(4)]
out = {"errors": []}

def new_consumer():
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                     "auto.offset.reset": "earliest", "enable.auto.commit": False,
                     "partition.assignment.strategy": strategy,
                     "session.timeout.ms": 10000, "enable.partition.eof": False})

n = 2 if mode == "consume" else 1
consumers = [new_consumer() for _ in range(n)]
assigned = [[] for _ in range(n)]
def on_assign(i):
    def cb(c, ps):
        assigned[i].append(sorted(p.partition for p in ps))
    return cb
for i, c in enumerate(consumers):
    c.subscribe([topic], on_assign=on_assign(i))
got = [[] for _ in range(n)]
deadline = time.time() + 60
while sum(len(g) for g in got) < want and time.time() < deadline:
    for i, c in enumerate(consumers):
        msgs = c.consume(num_messages=200, timeout=0.2)
        ok = False
        for m in msgs:
            if m.error():
                out["errors"].append(str(m.error()))
                continue
            got[i].append([m.partition(), m.offset()])
            ok = True
        if ok:
            c.commit(asynchronous=False)
out["got"] = got
out["assigned"] = assigned
out["committed"] = {str(tp.partition): tp.offset for tp in consumers[0].committed(parts, 20)}
for c in consumers:
    c.close()
print(json.dumps(out))
`

// TestGroupConfluent runs confluent-kafka (librdkafka) group consumers with
// the range and cooperative-sticky assignors: two members read a
// 4-partition topic exactly once with explicit commits, committed() shows
// the end offsets, and after a broker restart a new member resumes there.
func TestGroupConfluent(t *testing.T) {
	needPythonModule(t, "confluent_kafka")
	t.Parallel()
	b := startBroker(t)
	strategies := []string{"range", "cooperative-sticky"}
	t.Run("consume", func(t *testing.T) {
		for _, strategy := range strategies {
			t.Run(strategy, func(t *testing.T) {
				t.Parallel()
				topic, group := "group-confluent-"+strategy, "confluent-"+strategy
				produceSpread(t, b, topic, true, 0, groupRecords)
				var out struct {
					Errors    []string         `json:"errors"`
					Got       [][][2]int64     `json:"got"`
					Assigned  [][][]int32      `json:"assigned"`
					Committed map[string]int64 `json:"committed"`
				}
				pyRun(t, confluentGroupScript, &out, b.addr(), topic, group, strategy, "consume", fmt.Sprint(groupRecords))
				t.Logf("assignments per consumer: %v", out.Assigned)
				if len(out.Errors) > 0 {
					t.Errorf("consume errors: %v", out.Errors)
				}
				seen := map[[2]int64]int{}
				for i, g := range out.Got {
					if len(g) == 0 {
						t.Errorf("consumer %d got nothing; want both members to take part", i)
					}
					for _, r := range g {
						seen[r]++
					}
				}
				for k, n := range seen {
					if n != 1 {
						t.Errorf("record %d/%d consumed %d times", k[0], k[1], n)
					}
					if k[1] < 0 || k[1] >= groupPerPart {
						t.Errorf("record %d/%d beyond the end offset %d", k[0], k[1], groupPerPart)
					}
				}
				if len(seen) != groupRecords {
					t.Errorf("consumed %d distinct records, want %d", len(seen), groupRecords)
				}
				for p := 0; p < groupPartitions; p++ {
					if got := out.Committed[fmt.Sprint(p)]; got != groupPerPart {
						t.Errorf("committed() of partition %d = %d, want %d", p, got, groupPerPart)
					}
				}
			})
		}
	})
	// The commits live in __consumer_offsets: after a restart a new member
	// of each group starts at them and gets only the records produced now.
	start := time.Now()
	b.stop()
	stopped := time.Now()
	b.start()
	t.Logf("restart: stop %v, start %v", stopped.Sub(start), time.Since(stopped))
	t.Run("resume", func(t *testing.T) {
		for _, strategy := range strategies {
			t.Run(strategy, func(t *testing.T) {
				t.Parallel()
				topic, group := "group-confluent-"+strategy, "confluent-"+strategy
				produceSpread(t, b, topic, false, groupRecords, groupPartitions)
				var out struct {
					Errors    []string         `json:"errors"`
					Got       [][][2]int64     `json:"got"`
					Committed map[string]int64 `json:"committed"`
				}
				pyRun(t, confluentGroupScript, &out, b.addr(), topic, group, strategy, "resume", fmt.Sprint(groupPartitions))
				if len(out.Errors) > 0 {
					t.Errorf("consume errors: %v", out.Errors)
				}
				if len(out.Got) != 1 || len(out.Got[0]) != groupPartitions {
					t.Fatalf("resumed member got %v, want offset %d of each of %d partitions", out.Got, groupPerPart, groupPartitions)
				}
				for _, r := range out.Got[0] {
					if r[1] != groupPerPart {
						t.Errorf("resumed member got %d/%d, want only offset %d", r[0], r[1], groupPerPart)
					}
				}
				for p := 0; p < groupPartitions; p++ {
					if got := out.Committed[fmt.Sprint(p)]; got != groupPerPart+1 {
						t.Errorf("committed() of partition %d = %d after resume, want %d", p, got, groupPerPart+1)
					}
				}
			})
		}
	})
}

// kafkaPythonGroupScript reads the topic with one kafka-python group
// member, committing after every poll, and while it is still a member
// asks KafkaAdminClient to list and describe the groups.
const kafkaPythonGroupScript = `
import json, sys, time
from kafka import KafkaConsumer, KafkaAdminClient, TopicPartition

bootstrap, topic, group, want = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
out = {}
consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                         auto_offset_reset="earliest", enable_auto_commit=False)
got = []
deadline = time.time() + 60
while len(got) < want and time.time() < deadline:
    batch = consumer.poll(timeout_ms=500)
    for tp, msgs in batch.items():
        for m in msgs:
            got.append([m.partition, m.offset])
    if batch:
        consumer.commit()
out["got"] = got
out["assignment"] = sorted(tp.partition for tp in consumer.assignment())
out["committed"] = {str(p): consumer.committed(TopicPartition(topic, p)) for p in range(4)}

admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="gregor-e2e-group")
out["listed"] = [list(g) for g in admin.list_consumer_groups()]
d = admin.describe_consumer_groups([group])[0]
out["described"] = {"error": d.error_code, "group": d.group, "state": d.state,
                    "protocol_type": d.protocol_type, "protocol": d.protocol,
                    "members": [[m.client_id, m.client_host] for m in d.members]}
admin.close()
consumer.close()
print(json.dumps(out))
`

// TestGroupKafkaPython reads a 4-partition topic with one kafka-python
// KafkaConsumer in a group, with explicit commits, and checks what
// KafkaAdminClient lists and describes for the group.
func TestGroupKafkaPython(t *testing.T) {
	needPythonModule(t, "kafka")
	t.Parallel()
	b := startBroker(t)
	t.Run("consume", func(t *testing.T) {
		topic, group := "group-kafka-python", "kafka-python-group"
		produceSpread(t, b, topic, true, 0, groupRecords)
		var out struct {
			Got        [][2]int64       `json:"got"`
			Assignment []int32          `json:"assignment"`
			Committed  map[string]int64 `json:"committed"`
			Listed     [][2]string      `json:"listed"`
			Described  struct {
				Error        int16       `json:"error"`
				Group        string      `json:"group"`
				State        string      `json:"state"`
				ProtocolType string      `json:"protocol_type"`
				Protocol     string      `json:"protocol"`
				Members      [][2]string `json:"members"`
			} `json:"described"`
		}
		pyRun(t, kafkaPythonGroupScript, &out, b.addr(), topic, group, fmt.Sprint(groupRecords))
		seen := map[[2]int64]int{}
		for _, r := range out.Got {
			seen[r]++
		}
		for k, n := range seen {
			if n != 1 || k[1] < 0 || k[1] >= groupPerPart {
				t.Errorf("record %d/%d consumed %d times", k[0], k[1], n)
			}
		}
		if len(seen) != groupRecords || len(out.Got) != groupRecords {
			t.Errorf("consumed %d records (%d distinct), want %d", len(out.Got), len(seen), groupRecords)
		}
		if fmt.Sprint(out.Assignment) != "[0 1 2 3]" {
			t.Errorf("assignment %v, want all 4 partitions", out.Assignment)
		}
		for p := 0; p < groupPartitions; p++ {
			if got := out.Committed[fmt.Sprint(p)]; got != groupPerPart {
				t.Errorf("committed(%d) = %d, want %d", p, got, groupPerPart)
			}
		}
		listed := false
		for _, g := range out.Listed {
			listed = listed || g == [2]string{group, "consumer"}
		}
		if !listed {
			t.Errorf("list_consumer_groups %v, want [%s consumer] among them", out.Listed, group)
		}
		d := out.Described
		// kafka-python's default assignors are range then roundrobin.
		if d.Error != 0 || d.Group != group || d.State != "Stable" || d.ProtocolType != "consumer" ||
			d.Protocol != "range" || len(d.Members) != 1 {
			t.Errorf("describe_consumer_groups %+v, want Stable consumer range with one member", d)
		}
	})
}
