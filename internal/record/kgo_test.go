package record

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite the fuzz seed corpus under testdata/fuzz")

// kgoBatches produces records with franz-go's producer, once per codec, into
// an in-process kfake cluster and returns the record batches of the produce
// requests as they crossed the wire.
func kgoBatches(t *testing.T) map[Codec][]byte {
	t.Helper()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	var mu sync.Mutex
	var seen [][]byte
	cluster.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		for _, topic := range req.(*kmsg.ProduceRequest).Topics {
			for _, p := range topic.Partitions {
				mu.Lock()
				seen = append(seen, bytes.Clone(p.Records))
				mu.Unlock()
			}
		}
		return nil, nil, false // observe only; kfake handles it
	})

	codecs := map[Codec]kgo.CompressionCodec{
		CodecNone: kgo.NoCompression(), CodecGzip: kgo.GzipCompression(), CodecSnappy: kgo.SnappyCompression(),
		CodecLZ4: kgo.Lz4Compression(), CodecZstd: kgo.ZstdCompression(),
	}
	out := make(map[Codec][]byte)
	for c, kc := range codecs {
		client, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.ProducerBatchCompression(kc),
			kgo.DefaultProduceTopic("t"), kgo.ProducerLinger(time.Minute), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err != nil {
			t.Fatal(err)
		}
		var recs []*kgo.Record
		for i := 0; i < 20; i++ {
			r := &kgo.Record{Key: []byte(fmt.Sprintf("k%d", i)), Value: bytes.Repeat([]byte{'v', byte(i)}, 50)}
			if i%4 == 0 {
				r.Headers = []kgo.RecordHeader{{Key: "trace", Value: []byte("x")}}
			}
			recs = append(recs, r)
		}
		// One record first, alone, so that the client has its metadata and
		// producer id before the twenty: records produced while those load
		// may leave in a batch of their own (seen on a loaded machine).
		// Then a long linger and one Flush put all twenty in one batch.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var warmErr error
		client.Produce(ctx, &kgo.Record{Value: []byte("warm-up")}, func(_ *kgo.Record, err error) { warmErr = err })
		if err := client.Flush(ctx); err != nil || warmErr != nil { // Flush: past the linger
			t.Fatalf("%v: warm-up produce: %v %v", c, err, warmErr)
		}
		var wg sync.WaitGroup
		var produceErr error
		for _, r := range recs {
			wg.Add(1)
			client.Produce(ctx, r, func(_ *kgo.Record, err error) {
				defer wg.Done()
				if err != nil {
					mu.Lock()
					produceErr = err
					mu.Unlock()
				}
			})
		}
		err = client.Flush(ctx)
		wg.Wait()
		cancel()
		client.Close()
		if err != nil || produceErr != nil {
			t.Fatalf("%v: produce: %v %v", c, err, produceErr)
		}
		mu.Lock()
		for _, b := range seen {
			if h, err := ParseHeader(b); err == nil && h.Compression() == c && h.NumRecords == 20 {
				out[c] = b
			}
		}
		seen = nil
		mu.Unlock()
		if out[c] == nil {
			t.Fatalf("%v: no 20-record batch seen", c)
		}
	}
	return out
}

// TestKgoProducedBatches validates, reads back and recompresses batches
// written by franz-go's producer.
func TestKgoProducedBatches(t *testing.T) {
	batches := kgoBatches(t)
	for c, b := range batches {
		h, recs, err := ReadRecords(b)
		if err != nil {
			t.Fatalf("%v: read: %v", c, err)
		}
		if len(recs) != 20 || string(recs[3].Key) != "k3" || len(recs[4].Headers) != 1 || h.ProducerID < 0 {
			t.Fatalf("%v: header %+v records %+v", c, h, recs[:2])
		}
		opts := baseValidateOptions()
		opts.Now = h.BaseTimestamp
		opts.Compacted = true
		res, err := ValidateAndAssign(bytes.Clone(b), 42, opts)
		if err != nil || res.Recompressed || res.LastOffset != 61 {
			t.Fatalf("%v: validate: %+v %v", c, res, err)
		}
		for _, target := range allCodecs {
			opts.UseProducerCodec, opts.TargetCodec = false, target
			res, err := ValidateAndAssign(bytes.Clone(b), 42, opts)
			if err != nil {
				t.Fatalf("%v->%v: %v", c, target, err)
			}
			_, again, err := ReadRecords(res.Records)
			if err != nil || len(again) != 20 || !bytes.Equal(again[19].Value, recs[19].Value) {
				t.Fatalf("%v->%v: read back: %v", c, target, err)
			}
		}
	}
	if *updateCorpus {
		writeCorpus(t, batches)
	}
}

// writeCorpus writes the fuzz seed corpus: franz-go's batches and our
// builder's, one per codec.
func writeCorpus(t *testing.T, kgoBatches map[Codec][]byte) {
	for _, c := range allCodecs {
		ours := buildBatch(t, noProducer(c), someRecords(6, testNow))
		for name, b := range map[string][]byte{"kgo-" + c.String(): kgoBatches[c], "builder-" + c.String(): ours} {
			writeSeed(t, "FuzzParseBatch", name, fmt.Sprintf("[]byte(%q)\n", b))
			writeSeed(t, "FuzzValidateAndAssign", name, fmt.Sprintf("[]byte(%q)\nint64(%d)\nuint8(%d)\n", b, 0, uint8(c)))
		}
	}
}

func writeSeed(t *testing.T, fuzzer, name, body string) {
	dir := filepath.Join("testdata", "fuzz", fuzzer)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte("go test fuzz v1\n"+body), 0o644); err != nil {
		t.Fatal(err)
	}
}
