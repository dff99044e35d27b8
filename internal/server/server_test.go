package server

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/config"
)

// testServer runs an in-process node on free ports with its data in dir.
type testServer struct {
	t   *testing.T
	dir string
	srv *Server
}

func startServer(t *testing.T, dir string, extra map[string]string) *testServer {
	t.Helper()
	return startServerWith(t, dir, extra, nil)
}

// startServerWith is startServer with a hook that adjusts the server
// between New and Start.
func startServerWith(t *testing.T, dir string, extra map[string]string, hook func(*Server)) *testServer {
	t.Helper()
	props := map[string]string{
		"listeners":                "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"controller.quorum.voters": "1@127.0.0.1:0",
		"log.dirs":                 dir,
		"gregor.http.listen":       "127.0.0.1:0",
	}
	for k, v := range extra {
		props[k] = v
	}
	cfg, _, err := config.Load(props)
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	srv, err := New(cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	if hook != nil {
		hook(srv)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ts := &testServer{t: t, dir: dir, srv: srv}
	t.Cleanup(ts.stop)
	return ts
}

func (ts *testServer) stop() {
	if ts.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ts.srv.Shutdown(ctx); err != nil {
		ts.t.Errorf("shutdown: %v", err)
	}
	ts.srv = nil
}

func (ts *testServer) addr() string { return ts.srv.Addr("PLAINTEXT").String() }

func (ts *testServer) client(opts ...kgo.Opt) *kgo.Client {
	ts.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(ts.addr())}, opts...)...)
	if err != nil {
		ts.t.Fatal(err)
	}
	ts.t.Cleanup(cl.Close)
	return cl
}

func (ts *testServer) admin() *kadm.Client { return kadm.NewClient(ts.client()) }

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestCreateTopicsErrors(t *testing.T) {
	ts := startServer(t, t.TempDir(), nil)
	adm := ts.admin()
	ctx := ctxT(t)

	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "orders"); err != nil {
		t.Fatalf("create: %v", err)
	}
	cases := []struct {
		name    string
		parts   int32
		rf      int16
		configs map[string]*string
		want    error
	}{
		{"orders", 3, 1, nil, kerr.TopicAlreadyExists},
		{"bad/name", 1, 1, nil, kerr.InvalidTopicException},
		{strings.Repeat("x", 250), 1, 1, nil, kerr.InvalidTopicException},
		{"..", 1, 1, nil, kerr.InvalidTopicException},
		{"zero-parts", 0, 1, nil, kerr.InvalidPartitions},
		{"rf-three", 1, 3, nil, kerr.InvalidReplicationFactor},
		{"bad-config", 1, 1, map[string]*string{"retention.ms": kadm.StringPtr("soon")}, kerr.InvalidConfig},
		{"unknown-config", 1, 1, map[string]*string{"no.such.config": kadm.StringPtr("1")}, kerr.InvalidConfig},
	}
	for _, c := range cases {
		resp, err := adm.CreateTopic(ctx, c.parts, c.rf, c.configs, c.name)
		if err == nil {
			err = resp.Err
		}
		if !errors.Is(err, c.want) {
			t.Errorf("create %q: got %v, want %v", c.name, err, c.want)
		}
	}

	// validate_only answers without creating.
	resp, err := adm.ValidateCreateTopics(ctx, 2, 1, nil, "validated")
	if err != nil || resp["validated"].Err != nil {
		t.Fatalf("validate only: %v %v", err, resp["validated"].Err)
	}
	md, err := adm.Metadata(ctx, "validated")
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(md.Topics["validated"].Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("validate_only created the topic: %v", md.Topics["validated"].Err)
	}
}

// produceConsume produces n records with a codec and reads them back.
func produceConsume(t *testing.T, ts *testServer, topic string, codec kgo.CompressionCodec, n int) {
	t.Helper()
	ctx := ctxT(t)
	p := ts.client(kgo.ProducerBatchCompression(codec), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	for i := 0; i < n; i++ {
		p.Produce(ctx, &kgo.Record{Key: []byte(fmt.Sprintf("k%d", i%7)), Value: []byte(fmt.Sprintf("value-%d", i))}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	c := ts.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := make(map[string]bool)
	for len(seen) < n {
		fs := c.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d: %v", len(seen), n, err)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
	for i := 0; i < n; i++ {
		if !seen[fmt.Sprintf("value-%d", i)] {
			t.Fatalf("value-%d missing", i)
		}
	}
}

func TestProduceConsumeEveryCodec(t *testing.T) {
	ts := startServer(t, t.TempDir(), nil)
	adm := ts.admin()
	codecs := map[string]kgo.CompressionCodec{
		"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
		"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
	}
	for name, codec := range codecs {
		t.Run(name, func(t *testing.T) {
			topic := "codec-" + name
			if _, err := adm.CreateTopic(ctxT(t), 3, 1, nil, topic); err != nil {
				t.Fatal(err)
			}
			produceConsume(t, ts, topic, codec, 500)
		})
	}
}

func TestListOffsets(t *testing.T) {
	ts := startServer(t, t.TempDir(), nil)
	adm := ts.admin()
	ctx := ctxT(t)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "lo"); err != nil {
		t.Fatal(err)
	}
	p := ts.client(kgo.DefaultProduceTopic("lo"))
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	for i := 0; i < 10; i++ {
		r := &kgo.Record{Value: []byte{byte(i)}, Timestamp: base.Add(time.Duration(i) * time.Minute)}
		if err := p.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	start, err := adm.ListStartOffsets(ctx, "lo")
	if err != nil {
		t.Fatal(err)
	}
	end, err := adm.ListEndOffsets(ctx, "lo")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := start.Lookup("lo", 0); o.Offset != 0 {
		t.Errorf("start offset %d", o.Offset)
	}
	if o, _ := end.Lookup("lo", 0); o.Offset != 10 {
		t.Errorf("end offset %d", o.Offset)
	}
	byTime, err := adm.ListOffsetsAfterMilli(ctx, base.Add(150*time.Second).UnixMilli(), "lo")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := byTime.Lookup("lo", 0); o.Offset != 3 || o.Timestamp != base.Add(3*time.Minute).UnixMilli() {
		t.Errorf("offset after 2.5 minutes: %d at %d", o.Offset, o.Timestamp)
	}
	future, err := adm.ListOffsetsAfterMilli(ctx, time.Now().Add(time.Hour).UnixMilli(), "lo")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := future.Lookup("lo", 0); o.Offset != 10 {
		// kadm maps "no such offset" (-1) to the end offset.
		t.Errorf("offset after the last timestamp: %d", o.Offset)
	}

	// Max timestamp (-3).
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = 7
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = "lo"
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = -3
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, ts.client())
	if err != nil {
		t.Fatal(err)
	}
	got := resp.Topics[0].Partitions[0]
	if got.ErrorCode != 0 || got.Offset != 9 || got.Timestamp != base.Add(9*time.Minute).UnixMilli() {
		t.Errorf("max timestamp: %+v", got)
	}
}

func TestConfigs(t *testing.T) {
	ts := startServer(t, t.TempDir(), nil)
	adm := ts.admin()
	ctx := ctxT(t)
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": kadm.StringPtr("3600000")}, "cfg"); err != nil {
		t.Fatal(err)
	}
	rc, err := adm.DescribeTopicConfigs(ctx, "cfg")
	if err != nil {
		t.Fatal(err)
	}
	if c := describedConfig(t, rc, "cfg", "retention.ms"); c.MaybeValue() != "3600000" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("retention.ms = %q from %v", c.MaybeValue(), c.Source)
	}
	if c := describedConfig(t, rc, "cfg", "segment.bytes"); c.MaybeValue() != "1073741824" || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("segment.bytes = %q from %v", c.MaybeValue(), c.Source)
	}

	// Incremental: set, then delete back to the default.
	res, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "cleanup.policy", Value: kadm.StringPtr("compact")}}, "cfg")
	if err != nil || res[0].Err != nil {
		t.Fatalf("alter: %v %v", err, res)
	}
	if v := describeOne(t, adm, "cfg", "cleanup.policy"); v != "compact" {
		t.Errorf("cleanup.policy = %q after set", v)
	}
	res, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "cleanup.policy"}}, "cfg")
	if err != nil || res[0].Err != nil {
		t.Fatalf("alter delete: %v %v", err, res)
	}
	if v := describeOne(t, adm, "cfg", "cleanup.policy"); v != "delete" {
		t.Errorf("cleanup.policy = %q after delete", v)
	}
	// Bad values and unknown topics.
	res, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kadm.StringPtr("x")}}, "cfg")
	if err != nil || !errors.Is(res[0].Err, kerr.InvalidConfig) {
		t.Errorf("bad value: %v %v", err, res)
	}
	res, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kadm.StringPtr("1")}}, "nope")
	if err != nil || !errors.Is(res[0].Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("unknown topic: %v %v", err, res)
	}
	// Broker dynamic config (cluster default) shows up as a synonym source.
	bres, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "log.retention.ms", Value: kadm.StringPtr("7200000")}})
	if err != nil || bres[0].Err != nil {
		t.Fatalf("alter broker default: %v %v", err, bres)
	}
	rc, err = adm.DescribeTopicConfigs(ctx, "cfg")
	if err != nil {
		t.Fatal(err)
	}
	if c := describedConfig(t, rc, "cfg", "retention.ms"); c.MaybeValue() != "3600000" {
		t.Errorf("topic override lost to broker default: %q", c.MaybeValue())
	}
}

func describeOne(t *testing.T, adm *kadm.Client, topic, key string) string {
	t.Helper()
	rc, err := adm.DescribeTopicConfigs(ctxT(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	return describedConfig(t, rc, topic, key).MaybeValue()
}

// describedConfig finds one key of one resource in a DescribeConfigs answer.
func describedConfig(t *testing.T, rc kadm.ResourceConfigs, resource, key string) *kadm.Config {
	t.Helper()
	cfgs, err := rc.On(resource, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range cfgs.Configs {
		if cfgs.Configs[i].Key == key {
			return &cfgs.Configs[i]
		}
	}
	t.Fatalf("%s of %s not described", key, resource)
	return nil
}

func TestCreatePartitionsAndDelete(t *testing.T) {
	ts := startServer(t, t.TempDir(), nil)
	adm := ts.admin()
	ctx := ctxT(t)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "grow"); err != nil {
		t.Fatal(err)
	}
	r, err := adm.UpdatePartitions(ctx, 4, "grow")
	if err != nil || r["grow"].Err != nil {
		t.Fatalf("grow: %v %v", err, r)
	}
	r, err = adm.UpdatePartitions(ctx, 3, "grow")
	if err != nil || !errors.Is(r["grow"].Err, kerr.InvalidPartitions) {
		t.Fatalf("shrink: %v %v", err, r)
	}
	md, err := adm.Metadata(ctx, "grow")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(md.Topics["grow"].Partitions); n != 4 {
		t.Fatalf("partitions after grow: %d", n)
	}
	produceConsume(t, ts, "grow", kgo.NoCompression(), 100)

	dr, err := adm.DeleteTopics(ctx, "grow")
	if err != nil || dr["grow"].Err != nil {
		t.Fatalf("delete: %v %v", err, dr)
	}
	dr, err = adm.DeleteTopics(ctx, "grow")
	if err != nil || !errors.Is(dr["grow"].Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("delete again: %v %v", err, dr)
	}
	// The partition directories are renamed away from their live names.
	deadline := time.Now().Add(10 * time.Second)
	for {
		matches, _ := filepath.Glob(filepath.Join(ts.dir, "grow-[0-9]"))
		if len(matches) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("partition dirs still live: %v", matches)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestProduceErrors(t *testing.T) {
	ts := startServer(t, t.TempDir(), nil)
	adm := ts.admin()
	ctx := ctxT(t)
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"max.message.bytes": kadm.StringPtr("1000")}, "small"); err != nil {
		t.Fatal(err)
	}
	p := ts.client(kgo.DefaultProduceTopic("small"), kgo.RecordRetries(0), kgo.ProducerBatchMaxBytes(1<<20))
	big := make([]byte, 5000)
	rand.Read(big) // incompressible, so the batch stays above the limit
	err := p.ProduceSync(ctx, &kgo.Record{Value: big}).FirstErr()
	if !errors.Is(err, kerr.MessageTooLarge) {
		t.Errorf("large record: %v", err)
	}
	p2 := ts.client(kgo.RecordRetries(0), kgo.UnknownTopicRetries(0))
	err = p2.ProduceSync(ctx, &kgo.Record{Topic: "no-such-topic", Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Errorf("unknown topic: %v", err)
	}
	// Fetch below the log start / beyond the end: OFFSET_OUT_OF_RANGE.
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MaxBytes = -1, 10, 1<<20
	md, err := ts.admin().Metadata(ctx, "small")
	if err != nil {
		t.Fatal(err)
	}
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = "small", md.Topics["small"].ID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.FetchOffset, fp.PartitionMaxBytes = 42, 1<<20
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	resp, err := req.RequestWith(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.OffsetOutOfRange.Code {
		t.Errorf("fetch beyond end: %v", kerr.ErrorForCode(code))
	}
}

func TestAutoCreateAndDescribe(t *testing.T) {
	ts := startServer(t, t.TempDir(), map[string]string{"num.partitions": "2"})
	ctx := ctxT(t)
	cl := ts.client()
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = true
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("auto")
	req.Topics = append(req.Topics, mt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) != 2 {
		t.Fatalf("auto-created topic: %+v", resp.Topics)
	}
	if resp.ClusterID == nil || *resp.ClusterID != ts.srv.ClusterID() || len(resp.Brokers) != 1 {
		t.Fatalf("cluster: %v %+v", resp.ClusterID, resp.Brokers)
	}

	adm := ts.admin()
	dreq := kmsg.NewPtrDescribeClusterRequest()
	dresp, err := dreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if dresp.ErrorCode != 0 || dresp.ClusterID != ts.srv.ClusterID() || dresp.ControllerID != 1 || len(dresp.Brokers) != 1 {
		t.Errorf("describe cluster: %+v", dresp)
	}
	dreq.EndpointType = 2 // controllers: not served on a broker listener
	dresp, err = dreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if dresp.ErrorCode != kerr.MismatchedEndpointType.Code {
		t.Errorf("describe cluster controllers on a broker listener: %v", kerr.ErrorForCode(dresp.ErrorCode))
	}
	dreq.EndpointType = 7 // no such type
	dresp, err = dreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if dresp.ErrorCode != kerr.UnsupportedEndpointType.Code {
		t.Errorf("describe cluster of an unknown endpoint type: %v", kerr.ErrorForCode(dresp.ErrorCode))
	}
	dirs, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	size := int64(-1)
	dirs.Each(func(d kadm.DescribedLogDir) {
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			if p.Topic == "auto" {
				size = p.Size
			}
		})
	})
	if size != 0 {
		t.Errorf("log dir size of auto-0: %d", size)
	}
}

func TestRestartKeepsEverything(t *testing.T) {
	dir := t.TempDir()
	ts := startServer(t, dir, nil)
	adm := ts.admin()
	ctx := ctxT(t)
	if _, err := adm.CreateTopic(ctx, 2, 1, map[string]*string{"retention.bytes": kadm.StringPtr("123456789")}, "durable"); err != nil {
		t.Fatal(err)
	}
	produceConsume(t, ts, "durable", kgo.ZstdCompression(), 300)
	clusterID := ts.srv.ClusterID()
	ts.stop()

	ts2 := startServer(t, dir, nil)
	if ts2.srv.ClusterID() != clusterID {
		t.Fatalf("cluster id changed: %s -> %s", clusterID, ts2.srv.ClusterID())
	}
	if v := describeOne(t, ts2.admin(), "durable", "retention.bytes"); v != "123456789" {
		t.Errorf("retention.bytes after restart: %q", v)
	}
	end, err := ts2.admin().ListEndOffsets(ctxT(t), "durable")
	if err != nil {
		t.Fatal(err)
	}
	total := int64(0)
	end.Each(func(o kadm.ListedOffset) { total += o.Offset })
	if total != 300 {
		t.Fatalf("records after restart: %d", total)
	}
	// The restarted broker keeps appending after the old records.
	produceConsume(t, ts2, "durable", kgo.NoCompression(), 300)
}

// TestDescribeTopicPartitionsPages: topics by name, partitions by id, at
// most ResponsePartitionLimit per answer, continued from NextCursor.
func TestDescribeTopicPartitionsPages(t *testing.T) {
	ts := startServer(t, t.TempDir(), nil)
	cl := ts.client()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctxT(t), 3, 1, nil, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctxT(t), 2, 1, nil, "b"); err != nil {
		t.Fatal(err)
	}
	type seen struct {
		topic     string
		partition int32
	}
	var got []seen
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	req.ResponsePartitionLimit = 2
	pages := 0
	for {
		resp, err := req.RequestWith(ctxT(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, rt := range resp.Topics {
			if rt.ErrorCode != 0 {
				t.Fatalf("topic %v: error %d", rt.Topic, rt.ErrorCode)
			}
			for _, p := range rt.Partitions {
				if p.LeaderID != 1 || len(p.Replicas) != 1 {
					t.Fatalf("%s-%d: leader %d replicas %v", *rt.Topic, p.Partition, p.LeaderID, p.Replicas)
				}
				got = append(got, seen{*rt.Topic, p.Partition})
			}
		}
		if resp.NextCursor == nil {
			break
		}
		c := kmsg.NewDescribeTopicPartitionsRequestCursor()
		c.Topic, c.Partition = resp.NextCursor.Topic, resp.NextCursor.Partition
		req.Cursor = &c
		if pages > 10 {
			t.Fatal("no end to the pages")
		}
	}
	want := []seen{{"a", 0}, {"a", 1}, {"a", 2}, {"b", 0}, {"b", 1}}
	if !slices.Equal(got, want) || pages != 3 {
		t.Fatalf("%d pages: %v, want 3 pages of %v", pages, got, want)
	}
	// A named topic that does not exist.
	req = kmsg.NewPtrDescribeTopicPartitionsRequest()
	rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
	rt.Topic = "nope"
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxT(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic: %+v", resp.Topics)
	}
}

// TestConsumerFetchParksOnlyWithAPlace: a consumer's long-poll fetch
// waits only while the broker has a place for it (network.Request.Park);
// with every place taken, the next one is answered at once with what it
// read, however long its max wait.
func TestConsumerFetchParksOnlyWithAPlace(t *testing.T) {
	ts := startServerWith(t, t.TempDir(), nil, func(s *Server) { s.maxParkedRequests = 1 })
	created, err := ts.admin().CreateTopic(ctxT(t), 1, 1, nil, "idle")
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 11, -1, 3600_000, 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = "idle", created.ID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = 0, 0, 1<<20
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)

	parked := ts.client() // a client of its own: a connection answers in order
	go func() { _, _ = req.RequestWith(context.Background(), parked) }()
	deadline := time.Now().Add(10 * time.Second)
	for ts.srv.replica.PurgatorySizes()["Fetch"] != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the first fetch never parked")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The test's deadline is far below the max wait: only an answer at
	// once meets it.
	resp, err := req.RequestWith(ctxT(t), ts.client())
	if err != nil {
		t.Fatalf("the second fetch, with no place to wait in: %v", err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 ||
		len(resp.Topics[0].Partitions[0].RecordBatches) != 0 {
		t.Fatalf("the second fetch: %+v, want an empty answer without error", resp.Topics)
	}
	if n := ts.srv.replica.PurgatorySizes()["Fetch"]; n != 1 {
		t.Fatalf("Fetch purgatory holds %d, want the first fetch alone", n)
	}
}

// TestShutdownAnswersLongPolls: a fetch waiting with a max wait of an hour
// does not hold up the broker's shutdown; it is answered (empty) at once.
func TestShutdownAnswersLongPolls(t *testing.T) {
	ts := startServer(t, t.TempDir(), nil)
	cl := ts.client()
	created, err := ts.admin().CreateTopic(ctxT(t), 1, 1, nil, "idle")
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 11, -1, 3600_000, 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = "idle", created.ID // kgo sends its highest version: ids from v13
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = 0, 0, 1<<20
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	answered := make(chan error, 1)
	go func() {
		resp, err := req.RequestWith(context.Background(), cl)
		if err == nil && len(resp.Topics) == 1 && len(resp.Topics[0].Partitions) == 1 {
			err = kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
		}
		answered <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for ts.srv.replica.PurgatorySizes()["Fetch"] != 1 {
		select {
		case err := <-answered:
			t.Fatalf("the fetch was answered before shutdown: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the fetch never parked")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Before, the drain waited for the fetch until stop's 30 s deadline
	// and reported it as a failed shutdown.
	ts.stop()
	select {
	case <-answered:
	case <-time.After(10 * time.Second):
		t.Fatal("the long poll was never answered or closed")
	}
}
