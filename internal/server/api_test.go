package server

import (
	"errors"
	"maps"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestApiVersionsAdvertisesKafka40Floors(t *testing.T) {
	ts := startServer(t, t.TempDir(), nil)
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctxT(t), ts.client())
	if err != nil {
		t.Fatal(err)
	}
	// KIP-896: the lowest versions Kafka 4.0 still serves.
	floors := map[int16]int16{0: 3, 1: 4, 2: 1, 3: 0, 18: 0, 19: 2, 20: 1, 21: 0, 32: 1, 33: 0, 35: 1, 37: 0, 44: 0, 60: 0, 22: 0,
		8: 2, 9: 1, 10: 0, 11: 2, 12: 0, 13: 0, 14: 0, 15: 0, 16: 0, 42: 0, 47: 0, 68: 0, 69: 0, 55: 0, 43: 0, 23: 2, 75: 0, 45: 0, 46: 0, 61: 0, 28: 0,
		24: 0, 25: 0, 26: 0, 27: 0, 65: 0, 66: 0, 50: 0, 51: 0, 29: 1, 30: 1, 31: 1, 48: 0, 49: 0,
		17: 0, 36: 0, 57: 0, 64: 0,
		76: 1, 77: 1, 78: 1, 79: 1, 83: 0, 84: 0, 85: 0, 86: 0, 87: 0, 90: 0, 91: 0, 92: 0} // share groups (KIP-932)
	got := map[int16]kmsg.ApiVersionsResponseApiKey{}
	for _, k := range resp.ApiKeys {
		got[k.ApiKey] = k
	}
	for key, floor := range floors {
		k, ok := got[key]
		if !ok {
			t.Errorf("%s not advertised", kmsg.NameForKey(key))
			continue
		}
		if k.MinVersion > floor || k.MaxVersion < k.MinVersion {
			t.Errorf("%s: %d-%d, want a range from %d", kmsg.NameForKey(key), k.MinVersion, k.MaxVersion, floor)
		}
	}
	if len(got) != len(floors) {
		t.Errorf("advertised %d APIs, want exactly the %d implemented", len(got), len(floors))
	}
	// A new cluster's feature levels (features_test.go has the rest).
	finalized := map[string]int16{}
	for _, f := range resp.FinalizedFeatures {
		finalized[f.Name] = f.MaxVersionLevel
	}
	if want := map[string]int16{"metadata.version": 25, "group.version": 1, "share.version": 1, "eligible.leader.replicas.version": 1, "transaction.version": 2}; !maps.Equal(finalized, want) {
		t.Errorf("finalized features: %+v, want %v", resp.FinalizedFeatures, want)
	}
}

func TestDeleteTopicByID(t *testing.T) {
	ts := startServer(t, t.TempDir(), nil)
	adm := ts.admin()
	ctx := ctxT(t)
	created, err := adm.CreateTopic(ctx, 1, 1, nil, "by-id")
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrDeleteTopicsRequest()
	rt := kmsg.NewDeleteTopicsRequestTopic()
	rt.TopicID = created.ID
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 10000
	resp, err := req.RequestWith(ctx, ts.client())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Version < 6 || resp.Topics[0].ErrorCode != 0 || resp.Topics[0].Topic == nil || *resp.Topics[0].Topic != "by-id" {
		t.Fatalf("delete by id (v%d): %+v", resp.Version, resp.Topics)
	}
	resp, err = req.RequestWith(ctx, ts.client())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Topics[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("delete of a gone id: %v", kerr.ErrorForCode(resp.Topics[0].ErrorCode))
	}
}

func TestLegacyAlterConfigsReplacesTheSet(t *testing.T) {
	ts := startServer(t, t.TempDir(), nil)
	adm := ts.admin()
	ctx := ctxT(t)
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": kadm.StringPtr("1000"), "segment.ms": kadm.StringPtr("2000")}, "legacy"); err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrAlterConfigsRequest()
	res := kmsg.NewAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, "legacy"
	c := kmsg.NewAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "retention.ms", kmsg.StringPtr("5000")
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, ts.client())
	if err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("alter configs: %v %+v", err, resp)
	}
	if v := describeOne(t, adm, "legacy", "retention.ms"); v != "5000" {
		t.Errorf("retention.ms = %s", v)
	}
	// segment.ms was not named, so the legacy API removed its override.
	if v := describeOne(t, adm, "legacy", "segment.ms"); v != "604800000" {
		t.Errorf("segment.ms = %s, want the default back", v)
	}
}

func TestDescribeBrokerConfigs(t *testing.T) {
	ts := startServer(t, t.TempDir(), map[string]string{"num.partitions": "3"})
	adm := ts.admin()
	ctx := ctxT(t)
	if _, err := adm.BrokerMetadata(ctx); err != nil { // kadm routes to broker 1 only once it knows it
		t.Fatal(err)
	}
	rc, err := adm.DescribeBrokerConfigs(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if c := describedConfig(t, rc, strconv.Itoa(1), "num.partitions"); c.MaybeValue() != "3" || c.Source != kmsg.ConfigSourceStaticBrokerConfig {
		t.Errorf("num.partitions = %s from %v", c.MaybeValue(), c.Source)
	}
	// Another broker's id is not ours to describe.
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, "7"
	req.Resources = append(req.Resources, r)
	cl := ts.client()
	if _, err := kadm.NewClient(cl).BrokerMetadata(ctx); err != nil {
		t.Fatal(err)
	}
	kresp, err := cl.Broker(1).Request(ctx, req) // to broker 1, about broker 7
	if err != nil {
		t.Fatal(err)
	}
	resp := kresp.(*kmsg.DescribeConfigsResponse)
	if resp.Resources[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("describe broker 7: %v", kerr.ErrorForCode(resp.Resources[0].ErrorCode))
	}
	// Static configs cannot be changed dynamically.
	ar, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "log.dirs", Value: kadm.StringPtr("/x")}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if ar[0].Err == nil {
		t.Error("log.dirs changed dynamically")
	}
}

func TestFetchLongPollWakesOnAppend(t *testing.T) {
	ts := startServer(t, t.TempDir(), nil)
	adm := ts.admin()
	ctx := ctxT(t)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "poll"); err != nil {
		t.Fatal(err)
	}
	md, err := adm.Metadata(ctx, "poll")
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 20000, 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = "poll", md.Topics["poll"].ID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)

	type result struct {
		resp *kmsg.FetchResponse
		err  error
	}
	done := make(chan result, 1)
	cl := ts.client()
	go func() {
		resp, err := req.RequestWith(ctx, cl)
		done <- result{resp, err}
	}()
	select {
	case r := <-done:
		t.Fatalf("fetch answered before any data: %+v %v", r.resp, r.err)
	case <-time.After(300 * time.Millisecond):
	}
	p := ts.client(kgo.DefaultProduceTopic("poll"))
	if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte("wake")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		part := r.resp.Topics[0].Partitions[0]
		if part.ErrorCode != 0 || len(part.RecordBatches) == 0 || part.HighWatermark != 1 {
			t.Fatalf("woken fetch: %+v", part)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the long poll did not wake on append")
	}
}

func TestFetchFirstBatchAlwaysReturned(t *testing.T) {
	ts := startServer(t, t.TempDir(), nil)
	adm := ts.admin()
	ctx := ctxT(t)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "big"); err != nil {
		t.Fatal(err)
	}
	p := ts.client(kgo.DefaultProduceTopic("big"), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err := p.ProduceSync(ctx, &kgo.Record{Value: make([]byte, 10000)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	c := ts.client(kgo.ConsumeTopics("big"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(100), kgo.FetchMaxPartitionBytes(100))
	fs := c.PollFetches(ctx)
	if errs := fs.Errors(); len(errs) > 0 {
		t.Fatal(errs)
	}
	if n := fs.NumRecords(); n != 1 {
		t.Fatalf("records with max bytes 100 and a 10 kB batch: %d", n)
	}
}

func TestUnknownTopicOnFetchAndListOffsets(t *testing.T) {
	ts := startServer(t, t.TempDir(), map[string]string{"auto.create.topics.enable": "false"})
	ctx := ctxT(t)
	adm := ts.admin()
	lo, err := adm.ListEndOffsets(ctx, "absent")
	if err != nil {
		t.Fatal(err)
	}
	if err := lo.Error(); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Errorf("list offsets of an absent topic: %v", err)
	}
	md, err := adm.Metadata(ctx, "absent")
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(md.Topics["absent"].Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("metadata with auto-create off: %v", md.Topics["absent"].Err)
	}
}
