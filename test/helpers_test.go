//go:build e2e

package test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// codecs are Kafka's compression.type names every suite runs with.
var codecs = []string{"none", "gzip", "snappy", "lz4", "zstd"}

// kgoCodec maps a compression.type name to franz-go's codec.
func kgoCodec(t *testing.T, name string) kgo.CompressionCodec {
	t.Helper()
	switch name {
	case "none":
		return kgo.NoCompression()
	case "gzip":
		return kgo.GzipCompression()
	case "snappy":
		return kgo.SnappyCompression()
	case "lz4":
		return kgo.Lz4Compression()
	case "zstd":
		return kgo.ZstdCompression()
	}
	t.Fatalf("unknown codec %q", name)
	return kgo.NoCompression()
}

// newKgo returns a franz-go client for b that is closed with the test.
// Idempotent writes are off so that these suites drive the plain produce
// path; idempotence_test.go drives the idempotent one.
func newKgo(t *testing.T, b *broker, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{
		kgo.SeedBrokers(b.addr()),
		kgo.DisableIdempotentWrite(),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RetryTimeout(20 * time.Second),
	}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// createTopic creates topic with replication factor 1 and fails the test on
// any error.
func createTopic(t *testing.T, cl *kgo.Client, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	resp, err := kadm.NewClient(cl).CreateTopic(ctxT(t, 20*time.Second), partitions, 1, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

// endOffsets returns the log end offset of every partition of topic.
func endOffsets(t *testing.T, cl *kgo.Client, topic string) map[int32]int64 {
	t.Helper()
	listed, err := kadm.NewClient(cl).ListEndOffsets(ctxT(t, 20*time.Second), topic)
	if err != nil {
		t.Fatalf("list end offsets of %s: %v", topic, err)
	}
	out := map[int32]int64{}
	listed.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Errorf("list end offset %s/%d: %v", o.Topic, o.Partition, o.Err)
		}
		out[o.Partition] = o.Offset
	})
	return out
}

// consumeAll reads every partition of topic from offset 0 up to end (the
// end offset per partition) with a fresh franz-go consumer.
func consumeAll(t *testing.T, b *broker, topic string, end map[int32]int64) map[int32][]*kgo.Record {
	t.Helper()
	parts := map[int32]kgo.Offset{}
	remaining := 0
	for p, e := range end {
		if e > 0 {
			parts[p] = kgo.NewOffset().At(0)
			remaining++
		}
	}
	out := map[int32][]*kgo.Record{}
	if remaining == 0 {
		return out
	}
	cl := newKgo(t, b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}))
	ctx := ctxT(t, 60*time.Second)
	for remaining > 0 {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			got := map[int32]int{}
			for p, rs := range out {
				got[p] = len(rs)
			}
			t.Fatalf("consume %s: timed out with %v records, want up to %v", topic, got, end)
		}
		fetches.EachError(func(_ string, p int32, err error) {
			t.Errorf("fetch %s/%d: %v", topic, p, err)
		})
		fetches.EachRecord(func(r *kgo.Record) {
			if r.Offset >= end[r.Partition] {
				return
			}
			out[r.Partition] = append(out[r.Partition], r)
			if r.Offset == end[r.Partition]-1 {
				remaining--
			}
		})
	}
	return out
}

// checkContiguous fails unless recs hold exactly the offsets 0..n-1 in order.
func checkContiguous(t *testing.T, topic string, p int32, recs []*kgo.Record, n int64) {
	t.Helper()
	if int64(len(recs)) != n {
		t.Errorf("%s/%d: %d records, want %d", topic, p, len(recs), n)
	}
	for i, r := range recs {
		if r.Offset != int64(i) {
			t.Errorf("%s/%d: record %d has offset %d (gap or duplicate)", topic, p, i, r.Offset)
			return
		}
	}
}

func strp(s string) *string { return &s }

func topicName(prefix, codec string) string { return fmt.Sprintf("%s-%s", prefix, codec) }
