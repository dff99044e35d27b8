package server

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceSegments produces n one-record batches, one at a time, with
// timestamps step apart from base. With segment.ms=1 every batch opens a
// segment of its own (the roll compares batch timestamps).
func produceSegments(t *testing.T, ts *testServer, topic string, n int, base time.Time, step time.Duration) {
	t.Helper()
	p := ts.client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := 0; i < n; i++ {
		r := &kgo.Record{Value: []byte(fmt.Sprintf("r%d", i)), Timestamp: base.Add(time.Duration(i) * step)}
		if err := p.ProduceSync(ctxT(t), r).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
}

func startOffset(t *testing.T, adm *kadm.Client, topic string) int64 {
	t.Helper()
	start, err := adm.ListStartOffsets(ctxT(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := start.Lookup(topic, 0)
	if !ok || o.Err != nil {
		t.Fatalf("list start offset of %s: %v", topic, o.Err)
	}
	return o.Offset
}

// fetchAt fetches partition 0 of topic at offset with a raw request.
func fetchAt(t *testing.T, ts *testServer, topic string, offset int64) kmsg.FetchResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.MaxBytes, req.MaxWaitMillis = 1<<20, 10
	topics, err := ts.admin().ListTopics(ctxT(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, topics[topic].ID // v13+ names topics by id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes = offset, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxT(t), ts.client())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0]
}

func TestDeleteRecordsEndToEnd(t *testing.T) {
	dir := t.TempDir()
	ts := startServer(t, dir, nil)
	adm := ts.admin()
	ctx := ctxT(t)
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"segment.ms": kadm.StringPtr("1")}, "dr"); err != nil {
		t.Fatal(err)
	}
	produceSegments(t, ts, "dr", 10, time.Now().Add(-time.Minute), 10*time.Millisecond)
	segs, _ := filepath.Glob(filepath.Join(dir, "dr-0", "*.log"))
	if len(segs) != 10 {
		t.Fatalf("%d segments, want one per batch", len(segs))
	}

	res, err := adm.DeleteRecords(ctx, kadm.Offsets{"dr": {0: {At: 4}}})
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := res.Lookup("dr", 0); r.Err != nil || r.LowWatermark != 4 {
		t.Fatalf("delete records before 4: low watermark %d, %v", r.LowWatermark, r.Err)
	}
	if got := startOffset(t, adm, "dr"); got != 4 {
		t.Fatalf("earliest offset %d, want 4", got)
	}
	// The four segments below 4 are gone from the live set at once.
	if segs, _ := filepath.Glob(filepath.Join(dir, "dr-0", "*.log")); len(segs) != 6 {
		t.Fatalf("%d live segments, want 6", len(segs))
	}
	if p := fetchAt(t, ts, "dr", 3); p.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Fatalf("fetch at 3: %v, want OFFSET_OUT_OF_RANGE", kerr.ErrorForCode(p.ErrorCode))
	}
	if p := fetchAt(t, ts, "dr", 4); p.ErrorCode != 0 || p.LogStartOffset != 4 || len(p.RecordBatches) == 0 {
		t.Fatalf("fetch at 4: err %v, log start %d, %d bytes", kerr.ErrorForCode(p.ErrorCode), p.LogStartOffset, len(p.RecordBatches))
	}

	// Errors, each with low watermark -1.
	res, err = adm.DeleteRecords(ctx, kadm.Offsets{"dr": {0: {At: 11}}})
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := res.Lookup("dr", 0); !errors.Is(r.Err, kerr.OffsetOutOfRange) || r.LowWatermark != -1 {
		t.Fatalf("delete above the high watermark: %d, %v", r.LowWatermark, r.Err)
	}
	raw := kmsg.NewPtrDeleteRecordsRequest()
	raw.TimeoutMillis = 1000
	for _, name := range []string{"no-such-topic"} {
		rt := kmsg.NewDeleteRecordsRequestTopic()
		rt.Topic = name
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Offset = 1
		rt.Partitions = append(rt.Partitions, rp)
		raw.Topics = append(raw.Topics, rt)
	}
	// Straight to the broker: the client would answer for an unknown topic itself.
	resp, err := raw.RequestWith(ctx, ts.client().Broker(1))
	if err != nil {
		t.Fatal(err)
	}
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != kerr.UnknownTopicOrPartition.Code || p.LowWatermark != -1 {
		t.Fatalf("unknown topic: %v, %d", kerr.ErrorForCode(p.ErrorCode), p.LowWatermark)
	}

	// -1 is the high watermark.
	res, err = adm.DeleteRecords(ctx, kadm.Offsets{"dr": {0: {At: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := res.Lookup("dr", 0); r.Err != nil || r.LowWatermark != 10 {
		t.Fatalf("delete records before the high watermark: %d, %v", r.LowWatermark, r.Err)
	}

	// The log start offset survives a restart.
	ts.stop()
	ts2 := startServer(t, dir, nil)
	if got := startOffset(t, ts2.admin(), "dr"); got != 10 {
		t.Fatalf("earliest offset after restart %d, want 10", got)
	}
	produceSegments(t, ts2, "dr", 1, time.Now(), 0)
	if p := fetchAt(t, ts2, "dr", 10); p.ErrorCode != 0 || p.HighWatermark != 11 {
		t.Fatalf("fetch after restart: %v, high watermark %d", kerr.ErrorForCode(p.ErrorCode), p.HighWatermark)
	}
}

// TestRetentionSetWithKadmTakesEffect: retention.ms changed with
// IncrementalAlterConfigs deletes the expired segments at the next check.
func TestRetentionSetWithKadmTakesEffect(t *testing.T) {
	dir := t.TempDir()
	ts := startServer(t, dir, map[string]string{
		"log.retention.check.interval.ms": "20",
		"log.segment.delete.delay.ms":     "10",
	})
	adm := ts.admin()
	ctx := ctxT(t)
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"segment.ms": kadm.StringPtr("1")}, "ret"); err != nil {
		t.Fatal(err)
	}
	// Six records two hours old, then one fresh: seven segments.
	produceSegments(t, ts, "ret", 6, time.Now().Add(-2*time.Hour), 10*time.Millisecond)
	produceSegments(t, ts, "ret", 1, time.Now(), 0)
	// The default retention (7 days) keeps everything through a few checks.
	time.Sleep(100 * time.Millisecond)
	if got := startOffset(t, adm, "ret"); got != 0 {
		t.Fatalf("earliest offset %d before retention.ms was set, want 0", got)
	}

	set, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kadm.StringPtr("3600000")}}, "ret")
	if err != nil || set[0].Err != nil {
		t.Fatalf("set retention.ms: %v %v", err, set)
	}
	deadline := time.Now().Add(10 * time.Second)
	for startOffset(t, adm, "ret") != 6 {
		if time.Now().After(deadline) {
			t.Fatalf("earliest offset %d, want 6 after the expired segments go", startOffset(t, adm, "ret"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	for {
		all, _ := filepath.Glob(filepath.Join(dir, "ret-0", "*"))
		logs, _ := filepath.Glob(filepath.Join(dir, "ret-0", "*.log"))
		deleted, _ := filepath.Glob(filepath.Join(dir, "ret-0", "*.deleted"))
		if len(logs) == 1 && len(deleted) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("files left after file.delete.delay.ms: %v", all)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A consumer from the start sees only the record retention kept.
	c := ts.client(kgo.ConsumeTopics("ret"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	fs := c.PollFetches(ctx)
	if err := fs.Err0(); err != nil {
		t.Fatal(err)
	}
	recs := fs.Records()
	if len(recs) != 1 || recs[0].Offset != 6 || string(recs[0].Value) != "r0" {
		t.Fatalf("consumed %d records from the start, want only offset 6", len(recs))
	}

	// retention.bytes takes effect too: a limit below one segment leaves the
	// active one (Kafka never deletes below a log's last segment unless it
	// breaches on its own).
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.bytes", Value: kadm.StringPtr("1")}}, "ret"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if got := startOffset(t, adm, "ret"); got != 6 {
		t.Fatalf("earliest offset %d after retention.bytes=1, want 6", got)
	}
}
