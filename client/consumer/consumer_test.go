package consumer

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var codecs = []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(),
	kgo.Lz4Compression(), kgo.ZstdCompression()}

// consumeScenario writes each partition with another codec and reads all
// of it back a few records per Poll; it returns what was read per
// partition, in order.
func consumeScenario(t *testing.T, b *broker) map[int32][]string {
	const topic, per = "scenario", 120
	b.createTopic(t, topic, int32(len(codecs)))
	for p, codec := range codecs {
		b.produce(t, topic, int32(p), fmt.Sprintf("p%d-v", p), per, codec)
	}
	cfg := testConfig(b.Addr)
	cfg.MaxPollRecords = 7
	cfg.MaxPartitionFetchBytes = 2048 // several fetches per partition
	c := newStringConsumer(t, cfg)
	var tps []TopicPartition
	for p := range codecs {
		tps = append(tps, TopicPartition{topic, int32(p)})
	}
	if err := c.Assign(tps); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	got := map[int32][]string{}
	total := 0
	for total < per*len(codecs) {
		recs, err := c.Poll(ctx)
		if err != nil {
			t.Fatalf("poll after %d records: %v", total, err)
		}
		if len(recs) > cfg.MaxPollRecords {
			t.Fatalf("poll returned %d records, max.poll.records is %d", len(recs), cfg.MaxPollRecords)
		}
		for _, r := range recs {
			if want := int64(len(got[r.Partition])); r.Offset != want {
				t.Fatalf("partition %d: offset %d, want %d", r.Partition, r.Offset, want)
			}
			got[r.Partition] = append(got[r.Partition], r.Key+"="+r.Value)
			total++
		}
	}
	pollNone(t, c)
	for _, tp := range tps {
		pos, err := c.Position(ctx, tp)
		if err != nil || pos != per {
			t.Fatalf("position of %v: %d, %v; want %d", tp, pos, err, per)
		}
	}
	return got
}

func TestConsumeAllCodecs(t *testing.T) {
	outcomes := map[string]map[int32][]string{}
	bothBrokers(t, func(t *testing.T, b *broker) { outcomes[b.Name] = consumeScenario(t, b) })
	if t.Failed() {
		return
	}
	if !reflect.DeepEqual(outcomes["gregor"], outcomes["kfake"]) {
		t.Fatalf("gregor and kfake differ:\n%v\n%v", outcomes["gregor"], outcomes["kfake"])
	}
	for p := range codecs {
		if len(outcomes["gregor"][int32(p)]) != 120 || outcomes["gregor"][int32(p)][119] != fmt.Sprintf("k119=p%d-v119", p) {
			t.Fatalf("partition %d: %v", p, outcomes["gregor"][int32(p)])
		}
	}
}

// transactions writes, with franz-go's transactional producer, a committed
// transaction (c0..c9), an aborted one (a0..a9), plain records (n0..n4)
// and another committed one interleaved with an aborted one from a second
// producer.
func (b *broker) transactions(t *testing.T, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	txn := func(id string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.TransactionalID(id),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	one, two := txn("txn-one"), txn("txn-two")
	send := func(cl *kgo.Client, prefix string, n int) {
		for i := range n {
			r := &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("%s%d", prefix, i))}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce %s%d: %v", prefix, i, err)
			}
		}
	}
	run := func(cl *kgo.Client, prefix string, commit bool) {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		send(cl, prefix, 10)
		end := kgo.TryAbort
		if commit {
			end = kgo.TryCommit
		}
		if err := cl.EndTransaction(ctx, end); err != nil {
			t.Fatalf("end transaction %s: %v", prefix, err)
		}
	}
	run(one, "c", true)
	run(one, "a", false)
	b.produce(t, topic, 0, "n", 5, kgo.NoCompression())
	// Interleaved: two's aborted records sit between one's committed ones.
	if err := one.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := two.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	send(one, "d", 3)
	send(two, "x", 3)
	send(one, "e", 3)
	if err := two.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	if err := one.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
}

func values(recs []Record[string, string]) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Value
	}
	return out
}

func TestReadCommittedSkipsAborted(t *testing.T) {
	seq := func(prefix string, n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("%s%d", prefix, i))
		}
		return out
	}
	var committed []string
	committed = append(committed, seq("c", 10)...)
	committed = append(committed, seq("n", 5)...)
	committed = append(committed, seq("d", 3)...)
	committed = append(committed, seq("e", 3)...)
	bothBrokers(t, func(t *testing.T, b *broker) {
		const topic = "txn"
		b.createTopic(t, topic, 1)
		b.transactions(t, topic)
		tp := TopicPartition{topic, 0}

		cfg := testConfig(b.Addr)
		cfg.IsolationLevel = "read_committed"
		rc := newStringConsumer(t, cfg)
		if err := rc.Assign([]TopicPartition{tp}); err != nil {
			t.Fatal(err)
		}
		got := values(pollN(t, rc, len(committed)))
		if !reflect.DeepEqual(got, committed) {
			t.Fatalf("read_committed read %v, want %v", got, committed)
		}
		pollNone(t, rc)
		// The position is past the last marker: the end offset.
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		end, err := rc.EndOffsets(ctx, []TopicPartition{tp})
		if err != nil {
			t.Fatal(err)
		}
		if pos, err := rc.Position(ctx, tp); err != nil || pos != end[tp] {
			t.Fatalf("position %d (%v), end offset %d", pos, err, end[tp])
		}

		cfg.IsolationLevel = "read_uncommitted"
		ru := newStringConsumer(t, cfg)
		if err := ru.Assign([]TopicPartition{tp}); err != nil {
			t.Fatal(err)
		}
		all := values(pollN(t, ru, len(committed)+10+3))
		if len(all) != 34 || all[10] != "a0" || all[28] != "x0" {
			t.Fatalf("read_uncommitted read %v", all)
		}
	})
}

func TestSeekPauseResume(t *testing.T) {
	bothBrokers(t, func(t *testing.T, b *broker) {
		const topic = "seek"
		b.createTopic(t, topic, 2)
		b.produce(t, topic, 0, "a", 50, kgo.NoCompression())
		b.produce(t, topic, 1, "b", 50, kgo.NoCompression())
		p0, p1 := TopicPartition{topic, 0}, TopicPartition{topic, 1}
		cfg := testConfig(b.Addr)
		cfg.AutoOffsetReset = "latest"
		c := newStringConsumer(t, cfg)
		if err := c.Assign([]TopicPartition{p0, p1}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		defer cancel()
		// latest: at the end, nothing to read.
		for _, tp := range []TopicPartition{p0, p1} {
			if pos, err := c.Position(ctx, tp); err != nil || pos != 50 {
				t.Fatalf("position of %v with latest: %d, %v", tp, pos, err)
			}
		}
		pollNone(t, c)

		if err := c.Seek(p0, 45); err != nil {
			t.Fatal(err)
		}
		if got := values(pollN(t, c, 5)); !reflect.DeepEqual(got, []string{"a45", "a46", "a47", "a48", "a49"}) {
			t.Fatalf("after seek: %v", got)
		}
		if err := c.SeekToBeginning([]TopicPartition{p1}); err != nil {
			t.Fatal(err)
		}
		if err := c.Pause([]TopicPartition{p1}); err != nil {
			t.Fatal(err)
		}
		if got := c.Paused(); !reflect.DeepEqual(got, []TopicPartition{p1}) {
			t.Fatalf("paused: %v", got)
		}
		pollNone(t, c)
		if err := c.Resume([]TopicPartition{p1}); err != nil {
			t.Fatal(err)
		}
		got := pollN(t, c, 50)
		if got[0].Value != "b0" || got[49].Value != "b49" || got[49].Partition != 1 {
			t.Fatalf("after resume: %v", values(got))
		}
		if err := c.SeekToEnd(nil); err != nil {
			t.Fatal(err)
		}
		if pos, err := c.Position(ctx, p1); err != nil || pos != 50 {
			t.Fatalf("position after SeekToEnd: %d, %v", pos, err)
		}
		if err := c.Seek(TopicPartition{topic, 7}, 0); err == nil {
			t.Fatal("seek of an unassigned partition succeeded")
		}

		// OffsetsForTimes: every record's timestamp is at most now.
		ot, err := c.OffsetsForTimes(ctx, map[TopicPartition]time.Time{p0: time.UnixMilli(0), p1: time.Now().Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		if ot[p0] == nil || ot[p0].Offset != 0 || ot[p1] != nil {
			t.Fatalf("offsets for times: %v %v", ot[p0], ot[p1])
		}
	})
}

func TestOffsetResetNone(t *testing.T) {
	bothBrokers(t, func(t *testing.T, b *broker) {
		const topic = "reset"
		b.createTopic(t, topic, 1)
		b.produce(t, topic, 0, "v", 10, kgo.NoCompression())
		tp := TopicPartition{topic, 0}
		cfg := testConfig(b.Addr)
		cfg.AutoOffsetReset = "none"
		c := newStringConsumer(t, cfg)
		if err := c.Assign([]TopicPartition{tp}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		defer cancel()
		var noOff *NoOffsetError
		if _, err := c.Poll(ctx); !errors.As(err, &noOff) {
			t.Fatalf("poll without a position and reset none: %v", err)
		}
		if err := c.Seek(tp, 100); err != nil {
			t.Fatal(err)
		}
		var oor *OffsetOutOfRangeError
		if _, err := c.Poll(ctx); !errors.As(err, &oor) || !errors.Is(err, kerr.OffsetOutOfRange) || oor.Offset != 100 {
			t.Fatalf("poll out of range with reset none: %v", err)
		}
		if err := c.Seek(tp, 8); err != nil {
			t.Fatal(err)
		}
		if got := values(pollN(t, c, 2)); !reflect.DeepEqual(got, []string{"v8", "v9"}) {
			t.Fatalf("after seek: %v", got)
		}

		// earliest resets an out-of-range position to the start.
		cfg.AutoOffsetReset = "earliest"
		e := newStringConsumer(t, cfg)
		if err := e.Assign([]TopicPartition{tp}); err != nil {
			t.Fatal(err)
		}
		if err := e.Seek(tp, 100); err != nil {
			t.Fatal(err)
		}
		if got := pollN(t, e, 10); got[0].Offset != 0 {
			t.Fatalf("reset to earliest started at %d", got[0].Offset)
		}
	})
}

// commitRecorder is an interceptor that records commits and counts
// consumed records.
type commitRecorder struct {
	mu       sync.Mutex
	commits  []map[TopicPartition]OffsetAndMetadata
	consumed int
}

func (r *commitRecorder) OnConsume(recs []Record[string, string]) []Record[string, string] {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.consumed += len(recs)
	return recs
}

func (r *commitRecorder) OnCommit(offs map[TopicPartition]OffsetAndMetadata) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.commits = append(r.commits, offs)
}

func TestCommitAndCommitted(t *testing.T) {
	bothBrokers(t, func(t *testing.T, b *broker) {
		const topic = "commit"
		b.createTopic(t, topic, 2)
		b.produce(t, topic, 0, "a", 20, kgo.NoCompression())
		b.produce(t, topic, 1, "b", 20, kgo.NoCompression())
		p0, p1 := TopicPartition{topic, 0}, TopicPartition{topic, 1}
		cfg := testConfig(b.Addr)
		cfg.GroupID = "g-" + b.Name
		cfg.EnableAutoCommit = false
		rec := &commitRecorder{}
		c := newStringConsumer(t, cfg, rec)
		if err := c.Assign([]TopicPartition{p0, p1}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		defer cancel()
		if got, err := c.Committed(ctx, []TopicPartition{p0, p1}); err != nil || len(got) != 0 {
			t.Fatalf("committed before any commit: %v, %v", got, err)
		}
		pollN(t, c, 40)
		if err := c.CommitSync(ctx, nil); err != nil {
			t.Fatal(err)
		}
		got, err := c.Committed(ctx, []TopicPartition{p0, p1})
		if err != nil || got[p0].Offset != 20 || got[p1].Offset != 20 || !got[p0].HasLeaderEpoch {
			t.Fatalf("committed after CommitSync of the positions (with their leader epoch): %v, %v", got, err)
		}
		done := make(chan error, 1)
		c.CommitAsync(map[TopicPartition]OffsetAndMetadata{p0: {Offset: 7, Metadata: "m"}},
			func(_ map[TopicPartition]OffsetAndMetadata, err error) { done <- err })
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-ctx.Done():
			t.Fatal("CommitAsync callback never ran")
		}
		got, err = c.Committed(ctx, []TopicPartition{p0})
		if err != nil || got[p0].Offset != 7 || got[p0].Metadata != "m" || got[p0].HasLeaderEpoch {
			t.Fatalf("committed after CommitAsync: %v, %v", got, err)
		}
		rec.mu.Lock()
		if len(rec.commits) != 2 || rec.consumed != 40 {
			t.Fatalf("interceptor saw %d commits, %d records", len(rec.commits), rec.consumed)
		}
		rec.mu.Unlock()

		// A new consumer of the group starts at the committed offsets;
		// with auto commit its Close commits where it stopped.
		cfg.EnableAutoCommit = true
		c2, err := New[string, string](cfg, StringDeserializer{}, StringDeserializer{})
		if err != nil {
			t.Fatal(err)
		}
		if err := c2.Assign([]TopicPartition{p0}); err != nil {
			t.Fatal(err)
		}
		r2 := pollN(t, c2, 13)
		if r2[0].Offset != 7 {
			t.Fatalf("second consumer started at %d, want the committed 7", r2[0].Offset)
		}
		if err := c2.Close(ctx); err != nil {
			t.Fatal(err)
		}
		got, err = c.Committed(ctx, []TopicPartition{p0})
		if err != nil || got[p0].Offset != 20 {
			t.Fatalf("committed after Close with auto commit: %v, %v", got, err)
		}

		noGroup := newStringConsumer(t, testConfig(b.Addr))
		if err := noGroup.CommitSync(ctx, map[TopicPartition]OffsetAndMetadata{p0: {Offset: 1}}); !errors.Is(err, errNoGroup) {
			t.Fatalf("commit without group.id: %v", err)
		}
	})
}

// TestLeaderChange moves a partition's leader to another broker while the
// consumer reads; the consumer follows it (NOT_LEADER_OR_FOLLOWER, then
// metadata) and reads every record once.
func TestLeaderChange(t *testing.T) {
	b := startKfake(t, kfake.NumBrokers(3))
	const topic = "moving"
	b.createTopic(t, topic, 1)
	b.produce(t, topic, 0, "v", 100, kgo.NoCompression())
	cfg := testConfig(b.Addr)
	cfg.MaxPollRecords = 10
	c := newStringConsumer(t, cfg)
	if err := c.Assign([]TopicPartition{{topic, 0}}); err != nil {
		t.Fatal(err)
	}
	got := values(pollN(t, c, 10))
	old := b.Fake.LeaderFor(topic, 0)
	if err := b.Fake.MoveTopicPartition(topic, 0, (old+1)%3); err != nil {
		t.Fatal(err)
	}
	b.produce(t, topic, 0, "w", 50, kgo.NoCompression())
	got = append(got, values(pollN(t, c, 140))...)
	for i := range 100 {
		if got[i] != fmt.Sprintf("v%d", i) {
			t.Fatalf("record %d is %s", i, got[i])
		}
	}
	if got[100] != "w0" || got[149] != "w49" {
		t.Fatalf("after the move: %v", got[100:])
	}
	pollNone(t, c)
}

// TestDeserializationError: a value the deserializer refuses stops Poll at
// that record until the application seeks past it.
func TestDeserializationError(t *testing.T) {
	b := startKfake(t)
	const topic = "des"
	b.createTopic(t, topic, 1)
	b.produce(t, topic, 0, "v", 5, kgo.NoCompression())
	tp := TopicPartition{topic, 0}
	des := DeserializerFunc[string](func(_ string, _ []Header, data []byte) (string, error) {
		if string(data) == "v3" {
			return "", errors.New("bad value")
		}
		return string(data), nil
	})
	c, err := New[string, string](testConfig(b.Addr), StringDeserializer{}, des)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if err := c.Assign([]TopicPartition{tp}); err != nil {
		t.Fatal(err)
	}
	got := values(pollN(t, c, 3))
	if !reflect.DeepEqual(got, []string{"v0", "v1", "v2"}) {
		t.Fatalf("before the bad record: %v", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var de *DeserializationError
	if _, err := c.Poll(ctx); !errors.As(err, &de) || de.Offset != 3 {
		t.Fatalf("poll at the bad record: %v", err)
	}
	if pos, _ := c.Position(ctx, tp); pos != 3 {
		t.Fatalf("position at the bad record: %d", pos)
	}
	if err := c.Seek(tp, 4); err != nil {
		t.Fatal(err)
	}
	if got := values(pollN(t, c, 1)); got[0] != "v4" {
		t.Fatalf("after seeking past: %v", got)
	}
}

func TestConfigFromProperties(t *testing.T) {
	cfg, err := ConfigFromProperties(map[string]string{
		"bootstrap.servers": "a:9092, b:9092", "group.id": "g", "max.poll.records": "10",
		"isolation.level": "read_committed", "auto.offset.reset": "earliest", "fetch.max.wait.ms": "250",
		"key.deserializer": "org.apache.kafka.common.serialization.StringDeserializer",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.BootstrapServers) != 2 || cfg.GroupID != "g" || cfg.MaxPollRecords != 10 ||
		cfg.IsolationLevel != "read_committed" || cfg.FetchMaxWait != 250*time.Millisecond {
		t.Fatalf("%+v", cfg)
	}
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := ConfigFromProperties(map[string]string{"partition.assignment.strategy": "range"}); err == nil {
		t.Fatal("a group membership property was accepted")
	}
	_, err = ConfigFromProperties(map[string]string{"fetch.max.wait.ms": "-1", "enable.auto.commit": "yes", "max.poll.records": "0"})
	for _, k := range []string{"fetch.max.wait.ms", "enable.auto.commit", "max.poll.records"} {
		if err == nil || !strings.Contains(err.Error(), k) {
			t.Fatalf("bad %s not reported: %v", k, err)
		}
	}
	bad := DefaultConfig("x:1")
	bad.AutoOffsetReset = "smallest"
	if err := bad.validate(); err == nil {
		t.Fatal("auto.offset.reset=smallest accepted")
	}
}

// TestBlockingCallsBounded: with no broker reachable, the blocking calls
// give up after default.api.timeout.ms even with a context that never ends.
func TestBlockingCallsBounded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	cfg := testConfig(addr)
	cfg.GroupID = "g"
	cfg.DefaultAPITimeout = 300 * time.Millisecond
	c := newStringConsumer(t, cfg)
	tp := TopicPartition{"t", 0}
	if err := c.Assign([]TopicPartition{tp}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Committed(ctx, []TopicPartition{tp}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("committed: %v", err)
	}
	if err := c.CommitSync(ctx, map[TopicPartition]OffsetAndMetadata{tp: {Offset: 1}}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("commit: %v", err)
	}
	if _, err := c.Position(ctx, tp); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("position: %v", err)
	}
	if _, err := c.EndOffsets(ctx, []TopicPartition{tp}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("end offsets: %v", err)
	}
}

// TestAutoCommit: with enable.auto.commit, Poll commits the positions every
// auto.commit.interval.ms; Poll without an assignment is an error.
func TestAutoCommit(t *testing.T) {
	b := startKfake(t)
	const topic = "auto"
	b.createTopic(t, topic, 1)
	b.produce(t, topic, 0, "v", 30, kgo.NoCompression())
	tp := TopicPartition{topic, 0}
	cfg := testConfig(b.Addr)
	cfg.GroupID = "auto"
	cfg.AutoCommitInterval = 50 * time.Millisecond
	rec := &commitRecorder{}
	c := newStringConsumer(t, cfg, rec)
	if _, err := c.Poll(context.Background()); !errors.Is(err, errNoAssignment) {
		t.Fatalf("poll without assignment: %v", err)
	}
	if err := c.Assign([]TopicPartition{tp}); err != nil {
		t.Fatal(err)
	}
	pollN(t, c, 30)
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		_, _ = c.Poll(ctx) // drives the auto commit
		cancel()
		got, err := c.Committed(context.Background(), []TopicPartition{tp})
		if err != nil {
			t.Fatal(err)
		}
		rec.mu.Lock()
		seen := len(rec.commits) // OnCommit runs once the response is in, maybe after Committed saw it
		rec.mu.Unlock()
		if got[tp].Offset == 30 && seen > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("auto commit: committed %v, OnCommit called %d times", got, seen)
		}
	}
}

// TestPrefetch: while the application does not poll, the fetcher keeps
// fetching a partition until max.partition.fetch.bytes is buffered, and no
// further; Poll then returns from the buffer.
func TestPrefetch(t *testing.T) {
	b := startKfake(t)
	const topic = "prefetch"
	b.createTopic(t, topic, 1)
	for range 20 { // 20 batches of 50 records, about 1.2 KiB each
		b.produce(t, topic, 0, "v", 50, kgo.NoCompression())
	}
	tp := TopicPartition{topic, 0}
	cfg := testConfig(b.Addr)
	cfg.MaxPollRecords = 1
	cfg.MaxPartitionFetchBytes = 4096
	c := newStringConsumer(t, cfg)
	if err := c.Assign([]TopicPartition{tp}); err != nil {
		t.Fatal(err)
	}
	pollN(t, c, 1)
	state := func() (buffered int, fetchPos, position int64, inFlight bool) {
		c.e.mu.Lock()
		defer c.e.mu.Unlock()
		ps := c.e.parts[tp]
		return ps.bufBytes, ps.fetchPos, ps.position, ps.inFlight
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		buffered, _, _, inFlight := state()
		if buffered >= int(cfg.MaxPartitionFetchBytes) && !inFlight {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fetcher buffered %d bytes, not the %d it may", buffered, cfg.MaxPartitionFetchBytes)
		}
		time.Sleep(5 * time.Millisecond)
	}
	buffered, fetchPos, position, _ := state()
	// One fetch past the bound at most: it started below it.
	if buffered > 2*int(cfg.MaxPartitionFetchBytes) || position != 1 || fetchPos <= 50 || fetchPos >= 1000 {
		t.Fatalf("buffered %d bytes, fetch position %d, position %d", buffered, fetchPos, position)
	}
	got := values(pollN(t, c, 1))
	if got[0] != "v1" {
		t.Fatalf("second poll: %v", got)
	}
}

// TestCommittedRequireStable: under read_committed, Committed asks the
// coordinator to wait for pending transactional offset commits
// (require_stable, KIP-447); under read_uncommitted it does not.
func TestCommittedRequireStable(t *testing.T) {
	for _, isolation := range []string{"read_committed", "read_uncommitted"} {
		t.Run(isolation, func(t *testing.T) {
			b := startKfake(t)
			var mu sync.Mutex
			var seen []bool
			b.Fake.ControlKey(int16(kmsg.OffsetFetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
				b.Fake.KeepControl()
				mu.Lock()
				seen = append(seen, req.(*kmsg.OffsetFetchRequest).RequireStable)
				mu.Unlock()
				return nil, nil, false // kfake answers it
			})
			const topic = "stable"
			b.createTopic(t, topic, 1)
			cfg := testConfig(b.Addr)
			cfg.GroupID, cfg.IsolationLevel = "g", isolation
			c := newStringConsumer(t, cfg)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if _, err := c.Committed(ctx, []TopicPartition{{topic, 0}}); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) == 0 {
				t.Fatal("no OffsetFetch reached the broker")
			}
			for _, rs := range seen {
				if rs != (isolation == "read_committed") {
					t.Fatalf("%s: OffsetFetch require_stable %v", isolation, rs)
				}
			}
		})
	}
}
