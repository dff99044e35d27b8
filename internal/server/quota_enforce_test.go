package server

import (
	"context"
	"crypto/rand"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/auth"
	"gregor/internal/quota"
	"gregor/internal/rpc"
)

// End-to-end client quota enforcement: quotas set with AlterClientQuotas,
// clients throttled by the broker and by themselves (KIP-219), as Kafka.
//
// The brokers here measure rates over quota.window.num=2 windows of 1 s,
// so a rate settles within seconds; Kafka's 11 windows would let a client
// burst 10 s worth of its quota first. Over a run of T seconds a client
// held to quota Q moves at most about Q·(T + 1 s): the one window's worth
// a client may take at once (Kafka's allowance), plus a request or fetch
// in flight when the throttle came.

const quotaRate = 1 << 20 // 1 MiB/s

func quotaTestServer(t *testing.T) *testServer {
	t.Helper()
	return startServer(t, t.TempDir(), map[string]string{"quota.window.num": "2"})
}

// setClientQuota sets a quota of a client id and waits until the broker
// enforces it.
func setClientQuota(t *testing.T, ts *testServer, clientID, key string, value float64) {
	t.Helper()
	entry := setQuotas(quotaEntity("client-id", clientID), key, value)
	res, err := ts.admin().AlterClientQuotas(ctxT(t), []kadm.AlterClientQuotaEntry{entry})
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("alter client quotas: %+v, %v", res, err)
	}
	var m *quota.Manager
	for _, mgr := range ts.srv.quotas.All() {
		if mgr.Type().Key() == key {
			m = mgr
		}
	}
	waitFor(t, key+" enforced", 10*time.Second, func() bool { return m.Bound(auth.Anonymous.Name, clientID) == value })
}

// throttleCounter counts the throttles a client was told of
// (kgo.HookBrokerThrottle).
type throttleCounter struct{ n atomic.Int64 }

func (c *throttleCounter) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	if d > 0 {
		c.n.Add(1)
	}
}

// produceRun is one producer's run: bytes acknowledged, records failed,
// throttles told, time taken.
type produceRun struct {
	acked, failed int64
	throttles     int64
	elapsed       time.Duration
}

func (r produceRun) rate() float64 { return float64(r.acked) / r.elapsed.Seconds() }

// produceFor produces 10 KiB records as clientID for d (or until maxBytes
// are sent) and waits for every acknowledgement.
func produceFor(t *testing.T, ts *testServer, clientID, topic string, d time.Duration, maxBytes int64) produceRun {
	var throttles throttleCounter
	// Uncompressed, random values: the quota counts request bytes.
	cl := ts.client(kgo.ClientID(clientID), kgo.DefaultProduceTopic(topic), kgo.WithHooks(&throttles),
		kgo.ProducerBatchMaxBytes(64<<10), kgo.MaxBufferedBytes(256<<10), kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx := ctxT(t)
	value := make([]byte, 10<<10)
	_, _ = rand.Read(value)
	var acked, failed atomic.Int64
	start := time.Now()
	for sent := int64(0); time.Since(start) < d && sent < maxBytes; sent += int64(len(value)) {
		cl.Produce(ctx, &kgo.Record{Value: value}, func(r *kgo.Record, err error) {
			if err != nil {
				failed.Add(1)
				return
			}
			acked.Add(int64(len(r.Value)))
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Errorf("%s: flush: %v", clientID, err)
	}
	return produceRun{acked: acked.Load(), failed: failed.Load(), throttles: throttles.n.Load(), elapsed: time.Since(start)}
}

// withinQuota checks that a quota'd client moved no more than its quota
// allows over elapsed (plus slack bytes in flight) and not far less.
func withinQuota(t *testing.T, who string, bytes int64, elapsed time.Duration, slack float64) {
	t.Helper()
	most := quotaRate*(elapsed.Seconds()+1) + slack
	least := quotaRate * elapsed.Seconds() * 0.4
	if float64(bytes) > most || float64(bytes) < least {
		t.Errorf("%s moved %d bytes in %v (%.2f MiB/s); want %.0f-%.0f at a %d B/s quota",
			who, bytes, elapsed, float64(bytes)/elapsed.Seconds()/(1<<20), least, most, quotaRate)
	}
}

// TestProduceQuota: a producer held to producer_byte_rate=1 MiB/s and an
// unlimited one in the same run. The limited one moves at its quota,
// every record acknowledged (a produce over the quota is appended, then
// throttled), told to back off by throttle_time_ms; the other is not
// throttled and moves much faster. The sensors show in /metrics.
func TestProduceQuota(t *testing.T) {
	ts := quotaTestServer(t)
	if _, err := ts.admin().CreateTopic(ctxT(t), 1, 1, nil, "quota"); err != nil {
		t.Fatal(err)
	}
	setClientQuota(t, ts, "limited", "producer_byte_rate", quotaRate)

	var limited, unlimited produceRun
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		limited = produceFor(t, ts, "limited", "quota", 4*time.Second, math.MaxInt64)
	}()
	go func() {
		defer wg.Done()
		unlimited = produceFor(t, ts, "unlimited", "quota", 4*time.Second, 32<<20)
	}()
	wg.Wait()
	t.Logf("limited: %d B in %v, %d throttles; unlimited: %d B in %v", limited.acked, limited.elapsed, limited.throttles, unlimited.acked, unlimited.elapsed)

	if limited.failed != 0 || unlimited.failed != 0 {
		t.Fatalf("records failed: limited %d, unlimited %d", limited.failed, unlimited.failed)
	}
	// In flight when throttled: the buffered bytes (256 KiB) and a batch.
	withinQuota(t, "the limited producer", limited.acked, limited.elapsed, 320<<10)
	if limited.throttles == 0 {
		t.Error("the limited producer was never told of a throttle")
	}
	if unlimited.throttles != 0 {
		t.Errorf("the unlimited producer was throttled %d times", unlimited.throttles)
	}
	if unlimited.rate() < 2*limited.rate() {
		t.Errorf("unlimited producer at %.0f B/s, limited at %.0f B/s: want the unlimited one well above", unlimited.rate(), limited.rate())
	}

	_, text := scrape(t, ts, "/metrics")
	for _, series := range []string{
		`kafka_server_produce_byte_rate{client_id="limited",user=""}`,
		`kafka_server_produce_throttle_time{client_id="limited",user=""}`,
	} {
		if v := sample(text, series); v <= 0 {
			t.Errorf("/metrics: %s = %v, want > 0", series, v)
		}
	}
	// Every client is measured once a quota of the type exists (Kafka's
	// sensors); the unlimited one, long done, at 0 B/s by now, and never
	// throttled.
	if v := sample(text, `kafka_server_produce_byte_rate{client_id="unlimited",user=""}`); v < 0 {
		t.Error("/metrics: no byte-rate of the unlimited producer")
	}
	if !strings.Contains(text, `kafka_server_produce_throttle_time{client_id="unlimited",user=""} NaN`) {
		t.Error("/metrics: the unlimited producer's throttle-time is not NaN (never throttled)")
	}
}

// TestProduceQuotaAcksZero: an acks=0 producer gets no response to read a
// throttle from; the broker mutes its connection instead, and what it
// appends stays within the quota.
func TestProduceQuotaAcksZero(t *testing.T) {
	ts := quotaTestServer(t)
	adm := ts.admin()
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, nil, "quota"); err != nil {
		t.Fatal(err)
	}
	setClientQuota(t, ts, "fire-and-forget", "producer_byte_rate", quotaRate)
	cl := ts.client(kgo.ClientID("fire-and-forget"), kgo.DefaultProduceTopic("quota"),
		kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite(),
		kgo.ProducerBatchMaxBytes(64<<10), kgo.MaxBufferedBytes(256<<10), kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx := ctxT(t)
	value := make([]byte, 10<<10)
	_, _ = rand.Read(value)
	const run = 4 * time.Second
	start := time.Now()
	for time.Since(start) < run {
		cl.Produce(ctx, &kgo.Record{Value: value}, nil)
	}
	// What the broker appended by now, not what sits in socket buffers.
	ends, err := adm.ListEndOffsets(ctx, "quota")
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	end, _ := ends.Lookup("quota", 0)
	appended := end.Offset * int64(len(value))
	t.Logf("appended %d B in %v", appended, elapsed)
	// In flight when muted: the frame the broker had read ahead.
	withinQuota(t, "the acks=0 producer", appended, elapsed, 64<<10)

	_, text := scrape(t, ts, "/metrics")
	if v := sample(text, `kafka_server_produce_throttle_time{client_id="fire-and-forget",user=""}`); v <= 0 {
		t.Errorf("/metrics: the acks=0 producer's throttle-time = %v, want > 0", v)
	}
}

// consumeFor consumes topic from its start as clientID for d (or until
// maxBytes of values), counting the value bytes.
func consumeFor(t *testing.T, ts *testServer, clientID, topic string, d time.Duration, maxBytes int64) produceRun {
	var throttles throttleCounter
	cl := ts.client(kgo.ClientID(clientID), kgo.ConsumeTopics(topic), kgo.WithHooks(&throttles),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(ctxT(t), d)
	defer cancel()
	var got int64
	start := time.Now()
	for got < maxBytes && ctx.Err() == nil {
		fetches := cl.PollFetches(ctx)
		fetches.EachRecord(func(r *kgo.Record) { got += int64(len(r.Value)) })
	}
	return produceRun{acked: got, throttles: throttles.n.Load(), elapsed: time.Since(start)}
}

// TestFetchQuota: a consumer held to consumer_byte_rate=1 MiB/s reads at
// its quota (throttled fetches answered empty and retried), an unlimited
// one reads the whole topic much faster; the fetch sensors show in
// /metrics.
func TestFetchQuota(t *testing.T) {
	ts := quotaTestServer(t)
	if _, err := ts.admin().CreateTopic(ctxT(t), 1, 1, nil, "quota"); err != nil {
		t.Fatal(err)
	}
	const total = 800 * 10 << 10 // 8000 KiB of 10 KiB records
	if run := produceFor(t, ts, "loader", "quota", time.Minute, total); run.acked != total || run.failed != 0 {
		t.Fatalf("loading the topic: %+v", run)
	}
	setClientQuota(t, ts, "slow-consumer", "consumer_byte_rate", quotaRate)

	var limited, unlimited produceRun
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		limited = consumeFor(t, ts, "slow-consumer", "quota", 4*time.Second, total)
	}()
	go func() {
		defer wg.Done()
		unlimited = consumeFor(t, ts, "fast-consumer", "quota", 25*time.Second, total)
	}()
	wg.Wait()
	t.Logf("limited: %d B in %v, %d throttles; unlimited: %d B in %v", limited.acked, limited.elapsed, limited.throttles, unlimited.acked, unlimited.elapsed)

	if unlimited.acked != total {
		t.Fatalf("the unlimited consumer read %d of %d bytes", unlimited.acked, total)
	}
	// In flight when throttled: a fetch, capped to one window's worth.
	withinQuota(t, "the limited consumer", limited.acked, limited.elapsed, quotaRate)
	if limited.throttles == 0 {
		t.Error("the limited consumer was never told of a throttle")
	}
	if unlimited.throttles != 0 {
		t.Errorf("the unlimited consumer was throttled %d times", unlimited.throttles)
	}
	if unlimited.rate() < 2*limited.rate() {
		t.Errorf("unlimited consumer at %.0f B/s, limited at %.0f B/s: want the unlimited one well above", unlimited.rate(), limited.rate())
	}

	_, text := scrape(t, ts, "/metrics")
	for _, series := range []string{
		`kafka_server_fetch_byte_rate{client_id="slow-consumer",user=""}`,
		`kafka_server_fetch_throttle_time{client_id="slow-consumer",user=""}`,
	} {
		if v := sample(text, series); v <= 0 {
			t.Errorf("/metrics: %s = %v, want > 0", series, v)
		}
	}
}

// TestControllerMutationQuota: controller_mutation_rate=0.5 partitions/s
// (a bucket of 11 windows x 1 s x 0.5 = 5.5 partitions). A strict
// CreateTopics (v6+) takes a full bucket's worth and more, then the next
// topic is refused with THROTTLING_QUOTA_EXCEEDED and a throttle time; a
// permissive one (v5) is done and then throttled. CreatePartitions (v3)
// and DeleteTopics (v5+) count the partitions added and deleted. Each
// overdraft takes the bucket 18 or more below zero, 37 s or more to refill,
// so the request after it finds it empty however slow the machine.
func TestControllerMutationQuota(t *testing.T) {
	ts := quotaTestServer(t)
	setClientQuota(t, ts, "strict", "controller_mutation_rate", 0.5)
	setClientQuota(t, ts, "permissive", "controller_mutation_rate", 0.5)
	ctx := ctxT(t)

	create := func(cl *rpc.Client, version int16, topic string, partitions int32) *kmsg.CreateTopicsResponse {
		t.Helper()
		req := kmsg.NewPtrCreateTopicsRequest()
		req.SetVersion(version)
		req.TimeoutMillis = 10000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, 1
		req.Topics = append(req.Topics, rt)
		resp, err := cl.Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		r := resp.(*kmsg.CreateTopicsResponse)
		if len(r.Topics) != 1 {
			t.Fatalf("CreateTopics v%d %s: %+v", version, topic, r)
		}
		return r
	}

	strict := rpc.NewClient(ts.addr(), "strict", rpc.Security{})
	defer strict.Close()
	// 24 of 5.5 tokens: a full bucket takes it (-18.5 left), unthrottled.
	if r := create(strict, 7, "strict-a", 24); r.Topics[0].ErrorCode != 0 || r.ThrottleMillis != 0 {
		t.Fatalf("first strict create: error %v, throttle %d ms", kerr.ErrorForCode(r.Topics[0].ErrorCode), r.ThrottleMillis)
	}
	// An empty bucket refuses, throttling until it is back at 0: ~37 s.
	r := create(strict, 7, "strict-b", 1)
	if r.Topics[0].ErrorCode != kerr.ThrottlingQuotaExceeded.Code || r.ThrottleMillis <= 0 || r.ThrottleMillis > 37000 {
		t.Fatalf("strict create over the quota: error %v, throttle %d ms; want THROTTLING_QUOTA_EXCEEDED, 1-37000 ms",
			kerr.ErrorForCode(r.Topics[0].ErrorCode), r.ThrottleMillis)
	}

	permissive := rpc.NewClient(ts.addr(), "permissive", rpc.Security{})
	defer permissive.Close()
	r = create(permissive, 5, "permissive-a", 24)
	if r.Topics[0].ErrorCode != 0 || r.ThrottleMillis <= 0 || r.ThrottleMillis > 37000 {
		t.Fatalf("permissive create: error %v, throttle %d ms; want done and throttled 1-37000 ms",
			kerr.ErrorForCode(r.Topics[0].ErrorCode), r.ThrottleMillis)
	}

	// Topics of one request are counted in order: the first empties
	// the bucket, the second is refused.
	batch := rpc.NewClient(ts.addr(), "batch", rpc.Security{})
	defer batch.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	req.TimeoutMillis = 10000
	for _, name := range []string{"batch-a", "batch-b"} {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 24, 1
		req.Topics = append(req.Topics, rt)
	}
	setClientQuota(t, ts, "batch", "controller_mutation_rate", 0.5)
	resp, err := batch.Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]int16{}
	for _, rt := range resp.(*kmsg.CreateTopicsResponse).Topics {
		codes[rt.Topic] = rt.ErrorCode
	}
	if codes["batch-a"] != 0 || codes["batch-b"] != kerr.ThrottlingQuotaExceeded.Code {
		t.Fatalf("one request of two topics of 24 partitions: codes %v, want the second throttled", codes)
	}

	// A topic the controller refuses costs nothing: 30 partitions for a
	// topic that exists are given back, and the bucket is still full.
	refunded := rpc.NewClient(ts.addr(), "refunded", rpc.Security{})
	defer refunded.Close()
	setClientQuota(t, ts, "refunded", "controller_mutation_rate", 0.5)
	if r := create(refunded, 7, "strict-a", 30); r.Topics[0].ErrorCode != kerr.TopicAlreadyExists.Code {
		t.Fatalf("creating an existing topic: %v", kerr.ErrorForCode(r.Topics[0].ErrorCode))
	}
	if r := create(refunded, 7, "refunded-a", 1); r.Topics[0].ErrorCode != 0 {
		t.Fatalf("after a refused topic: %v, want the bucket full", kerr.ErrorForCode(r.Topics[0].ErrorCode))
	}

	// CreatePartitions v3 counts the partitions a topic gains.
	grower := rpc.NewClient(ts.addr(), "grower", rpc.Security{})
	defer grower.Close()
	setClientQuota(t, ts, "grower", "controller_mutation_rate", 0.5)
	grow := func(topic string, count int32) *kmsg.CreatePartitionsResponse {
		t.Helper()
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.SetVersion(3)
		req.TimeoutMillis = 10000
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = topic, count
		req.Topics = append(req.Topics, rt)
		resp, err := grower.Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.CreatePartitionsResponse)
	}
	if r := grow("strict-a", 50); r.Topics[0].ErrorCode != 0 || r.ThrottleMillis != 0 {
		t.Fatalf("growing by 26 with a full bucket: %v, throttle %d", kerr.ErrorForCode(r.Topics[0].ErrorCode), r.ThrottleMillis)
	}
	if r := grow("refunded-a", 2); r.Topics[0].ErrorCode != kerr.ThrottlingQuotaExceeded.Code || r.ThrottleMillis <= 0 {
		t.Fatalf("growing with an empty bucket: %v, throttle %d", kerr.ErrorForCode(r.Topics[0].ErrorCode), r.ThrottleMillis)
	}

	// DeleteTopics v5+ counts the partitions a topic had.
	deleter := rpc.NewClient(ts.addr(), "deleter", rpc.Security{})
	defer deleter.Close()
	setClientQuota(t, ts, "deleter", "controller_mutation_rate", 0.5)
	del := func(topic string) *kmsg.DeleteTopicsResponse {
		t.Helper()
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.SetVersion(6)
		req.TimeoutMillis = 10000
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		resp, err := deleter.Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.DeleteTopicsResponse)
	}
	if r := del("batch-a"); r.Topics[0].ErrorCode != 0 {
		t.Fatalf("deleting 24 partitions with a full bucket: %v", kerr.ErrorForCode(r.Topics[0].ErrorCode))
	}
	if r := del("permissive-a"); r.Topics[0].ErrorCode != kerr.ThrottlingQuotaExceeded.Code || r.ThrottleMillis <= 0 {
		t.Fatalf("deleting with an empty bucket: %v, throttle %d", kerr.ErrorForCode(r.Topics[0].ErrorCode), r.ThrottleMillis)
	}

	topics, err := ts.admin().ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"strict-a": true, "strict-b": false, "permissive-a": true, "batch-b": false, "refunded-a": true} {
		if topics.Has(name) != want {
			t.Errorf("topic %s exists: %t, want %t", name, topics.Has(name), want)
		}
	}
	_, text := scrape(t, ts, "/metrics")
	for _, series := range []string{
		`kafka_server_controllermutation_mutation_rate{client_id="strict",user=""}`,
		`kafka_server_controllermutation_throttle_time{client_id="strict",user=""}`,
	} {
		if v := sample(text, series); v <= 0 {
			t.Errorf("/metrics: %s = %v, want > 0", series, v)
		}
	}
}

// TestRequestQuota: request_percentage=0.001 (a millionth of a second of
// handling a second) throttles a client at once, for at most one quota
// window, and its request-time shows in /metrics.
func TestRequestQuota(t *testing.T) {
	ts := quotaTestServer(t)
	setClientQuota(t, ts, "busy", "request_percentage", 0.001)
	busy := rpc.NewClient(ts.addr(), "busy", rpc.Security{})
	defer busy.Close()
	var throttle int32
	waitFor(t, "a throttled Metadata answer", 10*time.Second, func() bool {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(12)
		resp, err := busy.Request(ctxT(t), req)
		if err != nil {
			t.Fatal(err)
		}
		throttle = resp.(*kmsg.MetadataResponse).ThrottleMillis
		return throttle > 0
	})
	if throttle > 1000 {
		t.Errorf("throttled %d ms, want at most one window (1000 ms)", throttle)
	}
	_, text := scrape(t, ts, "/metrics")
	for _, series := range []string{
		`kafka_server_request_request_time{client_id="busy",user=""}`,
		`kafka_server_request_throttle_time{client_id="busy",user=""}`,
	} {
		if v := sample(text, series); v <= 0 {
			t.Errorf("/metrics: %s = %v, want > 0", series, v)
		}
	}
}
