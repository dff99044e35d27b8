//go:build e2e

package test

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// checkExactlyOnce reads topic back and fails unless every value
// "<prefix>-<i>" for i < n is there exactly once, each partition's values in
// the order sent, and each batch written by an idempotent producer.
func checkExactlyOnce(t *testing.T, b *broker, topic, prefix string, n int) {
	t.Helper()
	cl := newKgo(t, b)
	end := endOffsets(t, cl, topic)
	var total int64
	for _, e := range end {
		total += e
	}
	if total != int64(n) {
		t.Errorf("%s holds %d records, want %d", topic, total, n)
	}
	seen := make([]bool, n)
	for p, recs := range consumeAll(t, b, topic, end) {
		checkContiguous(t, topic, p, recs, end[p])
		last := -1
		for _, r := range recs {
			i, err := strconv.Atoi(strings.TrimPrefix(string(r.Value), prefix+"-"))
			if err != nil || i < 0 || i >= n {
				t.Fatalf("%s/%d@%d: unexpected value %q", topic, p, r.Offset, r.Value)
			}
			if seen[i] {
				t.Fatalf("%s: value %d stored twice", topic, i)
			}
			seen[i] = true
			if i <= last {
				t.Errorf("%s/%d: value %d after %d", topic, p, i, last)
			}
			last = i
			if r.ProducerID < 0 || r.ProducerEpoch < 0 {
				t.Fatalf("%s/%d@%d: written without a producer id (%d, epoch %d)", topic, p, r.Offset, r.ProducerID, r.ProducerEpoch)
			}
		}
	}
	for i, ok := range seen {
		if !ok {
			t.Fatalf("%s: value %d missing", topic, i)
		}
	}
}

// TestSaramaIdempotent: sarama's idempotent producer (Idempotent, one
// request in flight per broker, acks=all, retries on) gets a producer id
// and writes every message exactly once.
func TestSaramaIdempotent(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	const topic, n = "sarama-idempotent", 3000
	createTopic(t, newKgo(t, b), topic, 3, nil)

	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cfg.ClientID = "gregor-e2e"
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Retry.Max = 10
	cfg.Producer.Return.Successes = true
	cfg.Producer.Flush.Frequency = 2 * time.Millisecond
	producer, err := sarama.NewAsyncProducer([]string{b.addr()}, cfg)
	if err != nil {
		t.Fatalf("idempotent producer: %v", err)
	}
	go func() {
		for i := 0; i < n; i++ {
			producer.Input() <- &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(strconv.Itoa(i % 11)),
				Value: sarama.StringEncoder(fmt.Sprintf("s-%d", i))}
		}
	}()
	deadline := time.After(60 * time.Second)
	for done := 0; done < n; {
		select {
		case <-producer.Successes():
			done++
		case perr := <-producer.Errors():
			t.Fatalf("produce: %v", perr.Err)
		case <-deadline:
			t.Fatalf("%d of %d messages acknowledged after 60s", done, n)
		}
	}
	if err := producer.Close(); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, b, topic, "s", n)
}

const confluentIdempotentScript = `
import json, sys
from confluent_kafka import Producer

bootstrap, topic, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
errors = []
acked = [0]
def cb(err, msg):
    if err:
        errors.append(str(err))
    else:
        acked[0] += 1
p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 2})
for i in range(n):
    p.produce(topic, key=str(i % 11).encode(), value=("c-%d" % i).encode(), on_delivery=cb)
    p.poll(0)
left = p.flush(60)
print(json.dumps({"left": left, "acked": acked[0], "errors": errors[:5]}))
`

// TestConfluentIdempotent: librdkafka with enable.idempotence=True (which
// fails fatally on any sequence or epoch disagreement) writes every message
// exactly once.
func TestConfluentIdempotent(t *testing.T) {
	needPythonModule(t, "confluent_kafka")
	t.Parallel()
	b := startBroker(t)
	const topic, n = "confluent-idempotent", 3000
	createTopic(t, newKgo(t, b), topic, 3, nil)
	var out struct {
		Left   int      `json:"left"`
		Acked  int      `json:"acked"`
		Errors []string `json:"errors"`
	}
	pyRun(t, confluentIdempotentScript, &out, b.addr(), topic, strconv.Itoa(n))
	if out.Left != 0 || out.Acked != n || len(out.Errors) > 0 {
		t.Fatalf("librdkafka: %d unflushed, %d acknowledged of %d, errors %v", out.Left, out.Acked, n, out.Errors)
	}
	checkExactlyOnce(t, b, topic, "c", n)
}

// idempotentBatch is one record as an idempotent producer sends it.
func idempotentBatch(t *testing.T, pid int64, epoch int16, seq int32, value string) []byte {
	raw := buildBatch(t, batchOpts{values: []string{value}})
	binary.BigEndian.PutUint64(raw[43:], uint64(pid))
	binary.BigEndian.PutUint16(raw[51:], uint16(epoch))
	binary.BigEndian.PutUint32(raw[53:], uint32(seq))
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

// TestIdempotenceAfterKill9: a batch written with acks=all and sent again
// after the broker was killed and restarted (the producer state rebuilt by
// replaying the log) is answered with its original offset and not stored
// twice; producer ids handed out after the restart are new.
func TestIdempotenceAfterKill9(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	const topic = "idempotent-kill9"
	createTopic(t, newKgo(t, b), topic, 1, nil)

	initPID := func() int64 {
		t.Helper()
		cl := newKgo(t, b)
		deadline := time.Now().Add(20 * time.Second)
		for {
			req := kmsg.NewPtrInitProducerIDRequest()
			resp, err := req.RequestWith(ctxT(t, 20*time.Second), cl)
			if err != nil {
				t.Fatal(err)
			}
			if resp.ErrorCode == 0 {
				return resp.ProducerID
			}
			// Right after start-up the first id block may be on its way.
			if resp.ErrorCode != kerr.CoordinatorLoadInProgress.Code || time.Now().After(deadline) {
				t.Fatalf("init producer id: %v", kerr.ErrorForCode(resp.ErrorCode))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	produce := func(pid int64, seq int32) (int16, int64) {
		t.Helper()
		req := produceRequest(topic, 0, -1, idempotentBatch(t, pid, 0, seq, "once"))
		resp, err := req.RequestWith(ctxT(t, 20*time.Second), newKgo(t, b))
		if err != nil {
			t.Fatal(err)
		}
		p := resp.Topics[0].Partitions[0]
		return p.ErrorCode, p.BaseOffset
	}

	pid := initPID()
	for seq := int32(0); seq < 3; seq++ {
		if code, base := produce(pid, seq); code != 0 || base != int64(seq) {
			t.Fatalf("produce seq %d: %v at %d", seq, kerr.ErrorForCode(code), base)
		}
	}
	b.kill9()
	b.start()
	if code, base := produce(pid, 2); code != 0 || base != 2 {
		t.Fatalf("retry after kill -9: %v at %d, want the original offset 2", kerr.ErrorForCode(code), base)
	}
	if end := endOffsets(t, newKgo(t, b), topic)[0]; end != 3 {
		t.Fatalf("log end offset %d after the retry, want 3", end)
	}
	if code, _ := produce(pid, 5); code != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("gap after restart: %v", kerr.ErrorForCode(code))
	}
	if after := initPID(); after/1000 <= pid/1000 {
		t.Fatalf("producer id %d after restart is from the block of %d", after, pid)
	}
}
