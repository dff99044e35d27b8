package producer

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/client/internal/clienttest"
	"gregor/internal/record"
)

// produceScenario sends keyed, keyless and explicitly placed records in the
// three ways (callback, SendSync, fire-and-forget then Flush), checks every
// acknowledgement against what a reader sees, and returns the observable
// outcome: each partition's records in offset order.
func produceScenario(t *testing.T, b *clienttest.Broker, codec string) map[int32][]string {
	const topic, n = "scenario", 300
	b.CreateTopic(t, topic, 3)
	cfg := testConfig(b.Addr)
	cfg.Compression = codec
	p := newStringProducer(t, cfg)
	ctx := context.Background()

	var mu sync.Mutex
	acked := map[string]RecordMetadata{}
	for i := range n {
		rec := Record[string, string]{Topic: topic, Key: fmt.Sprintf("k%d", i%17), Value: fmt.Sprintf("v%d", i)}
		switch i % 3 {
		case 0:
			if err := p.Send(ctx, rec, func(md RecordMetadata, err error) {
				if err != nil {
					t.Errorf("record %s: %v", rec.Value, err)
				}
				mu.Lock()
				acked[rec.Value] = md
				mu.Unlock()
			}); err != nil {
				t.Fatal(err)
			}
		case 1:
			rec.Partition, rec.HasPartition = int32(i%2), true
			md, err := p.SendSync(ctx, rec)
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			acked[rec.Value] = md
			mu.Unlock()
		case 2:
			if err := p.Send(ctx, rec, nil); err != nil { // fire and forget
				t.Fatal(err)
			}
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got := consumeAll(t, b, topic, n)
	byValue := map[string]consumed{}
	perPartition := map[int32][]string{}
	sort.Slice(got, func(i, j int) bool {
		if got[i].partition != got[j].partition {
			return got[i].partition < got[j].partition
		}
		return got[i].offset < got[j].offset
	})
	for _, c := range got {
		if _, dup := byValue[c.value]; dup {
			t.Fatalf("%s: record %s read twice", b.Name, c.value)
		}
		byValue[c.value] = c
		perPartition[c.partition] = append(perPartition[c.partition], c.key+"="+c.value)
	}
	for i := range n {
		v := fmt.Sprintf("v%d", i)
		c, ok := byValue[v]
		if !ok {
			t.Fatalf("%s: record %s not read back", b.Name, v)
		}
		switch i % 3 {
		case 1:
			if c.partition != int32(i%2) {
				t.Errorf("explicit record %s in partition %d, want %d", v, c.partition, i%2)
			}
		default:
			if want := record.PartitionForKey([]byte(c.key), 3); c.partition != want {
				t.Errorf("key %s in partition %d, murmur2 says %d", c.key, c.partition, want)
			}
		}
		if md, ok := acked[v]; ok && (md.Partition != c.partition || md.Offset != c.offset || md.Topic != topic) {
			t.Errorf("record %s acknowledged at %d/%d, read at %d/%d", v, md.Partition, md.Offset, c.partition, c.offset)
		}
	}
	for part, recs := range perPartition {
		if int64(len(recs)) != got[len(got)-1].offset+1 && part == got[len(got)-1].partition {
			t.Errorf("partition %d: offsets not contiguous", part)
		}
	}
	return perPartition
}

// TestProduceDifferential runs the same scenario against Gregor and kfake:
// the same records land in the same partitions in the same order.
func TestProduceDifferential(t *testing.T) {
	for _, codec := range []string{"none", "zstd"} {
		t.Run(codec, func(t *testing.T) {
			var outcomes []map[int32][]string
			clienttest.Both(t, func(t *testing.T, b *clienttest.Broker) {
				outcomes = append(outcomes, produceScenario(t, b, codec))
			})
			if len(outcomes) == 2 && !reflect.DeepEqual(outcomes[0], outcomes[1]) {
				t.Fatalf("gregor and kfake differ:\n%v\n%v", outcomes[0], outcomes[1])
			}
		})
	}
}

// TestEveryCodecAndLevel produces with each codec, at the default and at an
// explicit level, and reads the records back with franz-go.
func TestEveryCodecAndLevel(t *testing.T) {
	b := clienttest.StartGregor(t)
	for _, tc := range []struct {
		codec string
		level int
	}{{"gzip", 0}, {"gzip", 9}, {"snappy", 0}, {"lz4", 0}, {"lz4", 12}, {"zstd", 0}, {"zstd", 19}} {
		topic := fmt.Sprintf("codec-%s-%d", tc.codec, tc.level)
		b.CreateTopic(t, topic, 1)
		cfg := testConfig(b.Addr)
		cfg.Compression = tc.codec
		if tc.level != 0 {
			cfg.CompressionLevel = &tc.level
		}
		p := newStringProducer(t, cfg)
		const n = 500
		for i := range n {
			if err := p.Send(context.Background(), Record[string, string]{Topic: topic, Value: fmt.Sprintf("value %d %s", i, topic)}, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := consumeAll(t, b, topic, n)
		for i, c := range got {
			if want := fmt.Sprintf("value %d %s", i, topic); c.value != want {
				t.Fatalf("%s: record %d is %q, want %q", topic, i, c.value, want)
			}
		}
	}
}

// TestRetriesNotLeader answers the first produce requests with
// NOT_LEADER_OR_FOLLOWER (kfake faults): the producer refreshes metadata and
// retries, and every record lands once, in order.
func TestRetriesNotLeader(t *testing.T) {
	b := clienttest.StartKfake(t)
	b.CreateTopic(t, "retry", 1)
	b.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "retry", Err: kerr.NotLeaderForPartition, Count: 3})
	cfg := testConfig(b.Addr)
	cfg.RetryBackoff = 10 * time.Millisecond
	p := newStringProducer(t, cfg)
	for i := range 50 {
		if err := p.Send(context.Background(), Record[string, string]{Topic: "retry", Value: fmt.Sprint(i)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i, c := range consumeAll(t, b, "retry", 50) {
		if c.value != fmt.Sprint(i) || c.offset != int64(i) {
			t.Fatalf("record %d: %+v", i, c)
		}
	}
	// The metrics count what happened, by Kafka's names.
	m := p.Metrics()
	if m["record-retry-total"] < 1 || m["record-send-total"] < 50 || m["record-error-total"] != 0 ||
		m["batch-size-avg"] <= 0 || m["batch-size-max"] < m["batch-size-avg"] || m["records-per-request-avg"] <= 0 ||
		m["record-send-rate"] <= 0 || m["buffer-available-bytes"] != m["buffer-total-bytes"] {
		t.Fatalf("metrics %v", m)
	}
}

// TestNonRetriableErrorFailsRecord: an error Kafka does not retry reaches
// the callback as Kafka's error.
func TestNonRetriableErrorFailsRecord(t *testing.T) {
	b := clienttest.StartKfake(t)
	b.CreateTopic(t, "bad", 1)
	b.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "bad", Err: kerr.InvalidRecord, Count: 1})
	p := newStringProducer(t, testConfig(b.Addr))
	_, err := p.SendSync(context.Background(), Record[string, string]{Topic: "bad", Value: "x"})
	if !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("got %v, want INVALID_RECORD", err)
	}
	// The producer goes on: the next record is written (after an epoch
	// bump, since the failed batch left a sequence gap).
	md, err := p.SendSync(context.Background(), Record[string, string]{Topic: "bad", Value: "y"})
	if err != nil || md.Offset != 0 {
		t.Fatalf("after the failure: %+v %v", md, err)
	}
	if n := p.Metrics()["record-error-total"]; n != 1 {
		t.Fatalf("record-error-total %v, want 1", n)
	}
}

// TestOrderingUnderConnectionDrops cuts every connection repeatedly while
// records are in flight (5 per connection, tiny batches): with idempotence
// each partition still holds every record exactly once, in send order.
func TestOrderingUnderConnectionDrops(t *testing.T) {
	clienttest.Both(t, func(t *testing.T, b *clienttest.Broker) {
		const topic, n = "drops", 20000
		b.CreateTopic(t, topic, 2)
		d := &flakyDialer{}
		cfg := testConfig(b.Addr)
		cfg.Dial = d.dial
		cfg.BatchSize = 512 // many small batches: 5 in flight most of the time
		cfg.Linger = 0
		cfg.RetryBackoff = 5 * time.Millisecond
		cfg.RetryBackoffMax = 50 * time.Millisecond
		p := newStringProducer(t, cfg)

		var failed sync.Map
		errs := make(chan error, 1)
		stop := make(chan struct{})
		var cutter sync.WaitGroup
		cutter.Add(1)
		go func() { // cut whenever requests are in flight, until the flush ends
			defer cutter.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				p.e.mu.Lock()
				inflight := 0
				for _, c := range p.e.nodes {
					inflight += c
				}
				p.e.mu.Unlock()
				if inflight >= 1 {
					d.cut()
				}
				time.Sleep(2 * time.Millisecond)
			}
		}()
		sent := 0
		for i := 0; i < n || d.cutCount() < 20; i++ {
			if i > 50*n {
				t.Fatalf("only %d cuts in %d records", d.cutCount(), i)
			}
			sent++
			part := int32(i % 2)
			rec := Record[string, string]{Topic: topic, Partition: part, HasPartition: true, Value: fmt.Sprintf("%d", i)}
			if err := p.Send(context.Background(), rec, func(_ RecordMetadata, err error) {
				if err != nil {
					failed.Store(rec.Value, err)
					select {
					case errs <- err:
					default:
					}
				}
			}); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		close(stop)
		cutter.Wait()
		p.e.mu.Lock()
		bumps := p.e.epochBumps
		p.e.mu.Unlock()
		retries := p.Metrics()["record-retry-total"]
		t.Logf("%s: %d epoch bumps", b.Name, bumps)
		if retries == 0 {
			t.Fatal("no batch was retried: the cuts hit nothing in flight")
		}
		select {
		case err := <-errs:
			t.Fatalf("a record failed: %v", err)
		default:
		}
		got := consumeAll(t, b, topic, sent)
		last := map[int32]int{0: -2, 1: -1}
		for _, c := range got {
			var v int
			fmt.Sscan(c.value, &v)
			if v != last[c.partition]+2 {
				t.Fatalf("partition %d: %d follows %d (offset %d): reordered, lost or duplicated", c.partition, v, last[c.partition], c.offset)
			}
			last[c.partition] = v
		}
		if len(got) != sent {
			t.Fatalf("read %d records, sent %d", len(got), sent)
		}
		t.Logf("%s: %d connection cuts, %.0f records retried", b.Name, d.cuts, retries)
	})
}

// blackholeProduce makes kfake read produce requests and never answer them.
func blackholeProduce(b *clienttest.Broker) {
	b.Fake.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		b.Fake.KeepControl()
		return nil, nil, true
	})
}

// TestBufferMemoryBlocksThenErrors: with produce requests unanswered,
// buffer.memory fills; Send then blocks (it is seen waiting in the pool),
// and fails with ErrBufferExhausted after max.block.ms.
func TestBufferMemoryBlocksThenErrors(t *testing.T) {
	b := clienttest.StartKfake(t)
	b.CreateTopic(t, "full", 1)
	cfg := testConfig(b.Addr)
	cfg.BufferMemory = 8 << 10
	cfg.BatchSize = 1 << 10
	cfg.MaxBlock = 2 * time.Second
	cfg.RequestTimeout = 60 * time.Second
	cfg.DeliveryTimeout = 120 * time.Second
	p := newStringProducer(t, cfg)
	// Metadata first, then stop produce answers.
	if _, err := p.SendSync(context.Background(), Record[string, string]{Topic: "full", Value: "first"}); err != nil {
		t.Fatal(err)
	}
	blackholeProduce(b)
	value := string(make([]byte, 1000))
	sent := 0
	var sendErr error
	for sendErr == nil {
		sendErr = p.Send(context.Background(), Record[string, string]{Topic: "full", Value: value}, nil)
		if sendErr == nil {
			sent++
		}
		if sent > 100 {
			t.Fatal("buffer.memory of 8 KiB accepted 100 KiB")
		}
	}
	if !errors.Is(sendErr, ErrBufferExhausted) {
		t.Fatalf("got %v, want ErrBufferExhausted", sendErr)
	}
	if used := p.e.memory.inUse(); used > cfg.BufferMemory || sent < 5 {
		t.Fatalf("%d records accepted, %d bytes in use of %d", sent, used, cfg.BufferMemory)
	}

	// A Send waiting for memory is released when memory frees: close with
	// a zero timeout fails the stuck records, which frees their memory.
	cfg.MaxBlock = 60 * time.Second
	done := make(chan error, 1)
	p.e.cfg.MaxBlock = cfg.MaxBlock
	go func() {
		done <- p.Send(context.Background(), Record[string, string]{Topic: "full", Value: value}, nil)
	}()
	waitFor(t, "a Send blocked on buffer.memory", p.e.memory.hasWaiters)
	select {
	case err := <-done:
		t.Fatalf("Send returned %v while memory was full", err)
	default:
	}
	if err := p.Close(0); !errors.Is(err, ErrProducerClosed) {
		t.Fatalf("close: %v", err)
	}
	if err := <-done; !errors.Is(err, ErrProducerClosed) {
		t.Fatalf("blocked Send after close: %v", err)
	}
}

// TestDeliveryTimeoutExpires: records that get no answer fail with
// ErrDeliveryTimeout once delivery.timeout.ms passes.
func TestDeliveryTimeoutExpires(t *testing.T) {
	b := clienttest.StartKfake(t)
	b.CreateTopic(t, "slow", 1)
	cfg := testConfig(b.Addr)
	cfg.RequestTimeout = 500 * time.Millisecond
	cfg.DeliveryTimeout = 2 * time.Second
	cfg.RetryBackoff = 50 * time.Millisecond
	p := newStringProducer(t, cfg)
	if _, err := p.SendSync(context.Background(), Record[string, string]{Topic: "slow", Value: "first"}); err != nil {
		t.Fatal(err)
	}
	blackholeProduce(b)
	_, err := p.SendSync(context.Background(), Record[string, string]{Topic: "slow", Value: "late"})
	if !errors.Is(err, ErrDeliveryTimeout) {
		t.Fatalf("got %v, want ErrDeliveryTimeout", err)
	}
}

type countingInterceptor struct {
	mu    sync.Mutex
	sends int
	acks  int
	errs  int
}

func (c *countingInterceptor) OnSend(r Record[string, string]) Record[string, string] {
	c.mu.Lock()
	c.sends++
	c.mu.Unlock()
	r.Headers = append(r.Headers, Header{Key: "intercepted", Value: []byte("yes")})
	return r
}

func (c *countingInterceptor) OnAcknowledgement(_ RecordMetadata, err error) {
	c.mu.Lock()
	c.acks++
	if err != nil {
		c.errs++
	}
	c.mu.Unlock()
}

// TestInterceptorsAndSerializerErrors: interceptors see every send and
// acknowledgement, including a send failed by its serializer.
func TestInterceptorsAndSerializerErrors(t *testing.T) {
	b := clienttest.StartKfake(t)
	b.CreateTopic(t, "icpt", 1)
	ic := &countingInterceptor{}
	failing := SerializerFunc[string](func(_ string, _ []Header, s string) ([]byte, error) {
		if s == "bad" {
			return nil, errTest
		}
		return []byte(s), nil
	})
	p, err := New[string, string](testConfig(b.Addr), StringSerializer{}, failing, ic)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(30 * time.Second)
	if _, err := p.SendSync(context.Background(), Record[string, string]{Topic: "icpt", Value: "good"}); err != nil {
		t.Fatal(err)
	}
	if err := p.Send(context.Background(), Record[string, string]{Topic: "icpt", Value: "bad"}, nil); !errors.Is(err, errTest) {
		t.Fatalf("serializer error: %v", err)
	}
	ic.mu.Lock()
	defer ic.mu.Unlock()
	if ic.sends != 2 || ic.acks != 2 || ic.errs != 1 {
		t.Fatalf("interceptor saw %d sends, %d acks, %d errors", ic.sends, ic.acks, ic.errs)
	}
}

// TestAcksZeroAndOne: acks=0 gets no offsets back, acks=1 does.
func TestAcksZeroAndOne(t *testing.T) {
	b := clienttest.StartGregor(t)
	b.CreateTopic(t, "acks", 1)
	for _, acks := range []int16{0, 1} {
		cfg := testConfig(b.Addr)
		cfg.Acks = acks
		p := newStringProducer(t, cfg)
		md, err := p.SendSync(context.Background(), Record[string, string]{Topic: "acks", Value: fmt.Sprint(acks)})
		if err != nil {
			t.Fatal(err)
		}
		if (acks == 0) != (md.Offset == -1) {
			t.Fatalf("acks=%d: offset %d", acks, md.Offset)
		}
	}
	got := consumeAll(t, b, "acks", 2)
	if got[0].value != "0" || got[1].value != "1" {
		t.Fatalf("read %+v", got)
	}
}

// TestUnknownTopicTimesOut: a topic that never appears (auto-create off)
// fails Send after max.block.ms.
func TestUnknownTopicTimesOut(t *testing.T) {
	b := clienttest.StartKfake(t)
	cfg := testConfig(b.Addr)
	cfg.MaxBlock = time.Second
	p := newStringProducer(t, cfg)
	err := p.Send(context.Background(), Record[string, string]{Topic: "nowhere", Value: "x"}, nil)
	if err == nil {
		t.Fatal("send to a missing topic succeeded")
	}
	if err := p.Send(context.Background(), Record[string, string]{Topic: "t", Partition: 5, HasPartition: true}, nil); err == nil {
		t.Fatal("send to a missing partition succeeded")
	}
}

// TestLeaderMoves moves the partition's leader between kfake's brokers while
// records flow: the producer learns the new leader from NOT_LEADER answers
// and a metadata refresh, and every record lands once, in order.
func TestLeaderMoves(t *testing.T) {
	b := clienttest.StartKfake(t, kfake.NumBrokers(3))
	b.CreateTopic(t, "moving", 1)
	cfg := testConfig(b.Addr)
	cfg.RetryBackoff = 10 * time.Millisecond
	cfg.Linger = time.Millisecond
	p := newStringProducer(t, cfg)
	const n = 3000
	errs := make(chan error, n)
	for i := range n {
		if err := p.Send(context.Background(), Record[string, string]{Topic: "moving", Value: fmt.Sprint(i)},
			func(_ RecordMetadata, err error) {
				if err != nil {
					errs <- err
				}
			}); err != nil {
			t.Fatal(err)
		}
		if i%500 == 250 {
			if _, err := p.SendSync(context.Background(), Record[string, string]{Topic: "moving", Value: fmt.Sprint("sync-", i)}); err != nil {
				t.Fatal(err)
			}
			leader := b.Fake.LeaderFor("moving", 0)
			if err := b.Fake.MoveTopicPartition("moving", 0, (leader+1)%3); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	close(errs)
	for err := range errs {
		t.Fatalf("a record failed: %v", err)
	}
	if p.Metrics()["record-retry-total"] == 0 {
		t.Fatal("no batch was retried: no request reached a former leader")
	}
	next := 0
	for _, c := range consumeAll(t, b, "moving", n+6) {
		if strings.HasPrefix(c.value, "sync-") {
			continue
		}
		if c.value != fmt.Sprint(next) {
			t.Fatalf("offset %d holds %s, want %d", c.offset, c.value, next)
		}
		next++
	}
	if next != n {
		t.Fatalf("read %d records, sent %d", next, n)
	}
}

// TestCloseSendsWhatWasAccepted: Close does not wait for linger.ms and
// delivers every accepted record before returning; Send afterwards fails.
func TestCloseSendsWhatWasAccepted(t *testing.T) {
	b := clienttest.StartKfake(t)
	b.CreateTopic(t, "closing", 1)
	cfg := testConfig(b.Addr)
	cfg.Linger = time.Hour // only Close can make these batches ready
	cfg.DeliveryTimeout = 2 * time.Hour
	p, err := New[string, string](cfg, StringSerializer{}, StringSerializer{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	acked := 0
	for i := range 100 {
		if err := p.Send(context.Background(), Record[string, string]{Topic: "closing", Value: fmt.Sprint(i)},
			func(_ RecordMetadata, err error) {
				if err != nil {
					t.Errorf("record: %v", err)
				}
				mu.Lock()
				acked++
				mu.Unlock()
			}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(time.Minute); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if acked != 100 {
		t.Fatalf("%d of 100 records acknowledged when Close returned", acked)
	}
	mu.Unlock()
	if err := p.Send(context.Background(), Record[string, string]{Topic: "closing", Value: "late"}, nil); !errors.Is(err, ErrProducerClosed) {
		t.Fatalf("Send after Close: %v", err)
	}
	if len(consumeAll(t, b, "closing", 100)) != 100 {
		t.Fatal("records missing")
	}
}

// TestRecordTooLarge: a record over max.request.size is refused by Send
// with Kafka's MESSAGE_TOO_LARGE, without reaching the broker.
func TestRecordTooLarge(t *testing.T) {
	b := clienttest.StartKfake(t)
	b.CreateTopic(t, "large", 1)
	cfg := testConfig(b.Addr)
	cfg.MaxRequestSize = 1000
	p := newStringProducer(t, cfg)
	err := p.Send(context.Background(), Record[string, string]{Topic: "large", Value: strings.Repeat("x", 2000)}, nil)
	if !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("got %v, want MESSAGE_TOO_LARGE", err)
	}
	if _, err := p.SendSync(context.Background(), Record[string, string]{Topic: "large", Value: "small"}); err != nil {
		t.Fatal(err)
	}
}

// TestUnknownProducerIDBumpsEpoch: UNKNOWN_PRODUCER_ID on the oldest batch
// (the broker lost the producer's state) makes the producer bump its epoch
// (KIP-360) and send the batch again from sequence 0; it is written once.
func TestUnknownProducerIDBumpsEpoch(t *testing.T) {
	b := clienttest.StartKfake(t)
	b.CreateTopic(t, "bump", 1)
	p := newStringProducer(t, testConfig(b.Addr))
	if _, err := p.SendSync(context.Background(), Record[string, string]{Topic: "bump", Value: "0"}); err != nil {
		t.Fatal(err)
	}
	p.e.mu.Lock()
	pid, epoch := p.e.pid, p.e.epoch
	p.e.mu.Unlock()
	b.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "bump", Err: kerr.UnknownProducerID, Count: 1})
	md, err := p.SendSync(context.Background(), Record[string, string]{Topic: "bump", Value: "1"})
	if err != nil || md.Offset != 1 {
		t.Fatalf("after UNKNOWN_PRODUCER_ID: %+v %v", md, err)
	}
	p.e.mu.Lock()
	bumps, newPID, newEpoch := p.e.epochBumps, p.e.pid, p.e.epoch
	p.e.mu.Unlock()
	// kfake answers the bump with a new producer id, Kafka and Gregor
	// with the next epoch of the same id: either way a new identity.
	if bumps != 1 || (newPID == pid && newEpoch != epoch+1) {
		t.Fatalf("%d epoch bumps, producer %d/%d -> %d/%d", bumps, pid, epoch, newPID, newEpoch)
	}
	got := consumeAll(t, b, "bump", 2)
	if len(got) != 2 || got[0].value != "0" || got[1].value != "1" {
		t.Fatalf("read %+v", got)
	}
}
