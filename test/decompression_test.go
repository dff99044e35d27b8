//go:build e2e

package test

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDecompressionBombs is issue #20 item 6 against a real process: an
// 8 KB zstd batch holding one 255 MiB record, and a dozen concurrent 300 KB
// gzip batches each expanding to 300 MiB (records of 1 MiB, each within
// max.message.bytes), to a topic that keeps the producer's codec and to one
// that recompresses. Every one is refused with MESSAGE_TOO_LARGE, the
// broker's peak resident memory stays far below what the batches expand to
// (gregor.decompression.memory.bytes bounds what validation holds), and a
// normal producer and consumer are served afterwards.
func TestDecompressionBombs(t *testing.T) {
	b := startBroker(t)
	cl := newKgo(t, b)
	const keep, recompress = "bombs", "bombs-lz4"
	createTopic(t, cl, keep, 1, nil)
	createTopic(t, cl, recompress, 1, map[string]*string{"compression.type": strp("lz4")})
	baseline := vmHWM(t, b)

	zstdBomb := buildBatch(t, batchOpts{codec: "zstd", values: []string{strings.Repeat("\x00", 255<<20)}})
	t.Logf("zstd bomb: %d bytes holding one 255 MiB record", len(zstdBomb))
	values := make([]string, 300)
	mib := strings.Repeat("\x00", 1<<20-64)
	for i := range values {
		values[i] = mib
	}
	gzipBomb := buildBatch(t, batchOpts{codec: "gzip", values: values})
	t.Logf("gzip bomb: %d bytes holding 300 records of 1 MiB", len(gzipBomb))

	for _, topic := range []string{keep, recompress} {
		rc := dialRaw(t, b)
		if p := produceRaw(t, rc, topic, zstdBomb); p.ErrorCode != kerr.MessageTooLarge.Code {
			t.Errorf("%s: zstd bomb: error %v, want MESSAGE_TOO_LARGE", topic, kerr.ErrorForCode(p.ErrorCode))
		}
		var wg sync.WaitGroup
		codes := make([]int16, 12)
		errs := make([]error, len(codes))
		for i := range codes {
			rc := dialRaw(t, b)
			wg.Add(1)
			go func() {
				defer wg.Done()
				codes[i], errs[i] = produceCode(rc, topic, gzipBomb)
			}()
		}
		wg.Wait()
		for i, code := range codes {
			if errs[i] != nil {
				t.Errorf("%s: gzip bomb %d: %v", topic, i, errs[i])
			} else if code != kerr.MessageTooLarge.Code {
				t.Errorf("%s: gzip bomb %d: error %v, want MESSAGE_TOO_LARGE", topic, i, kerr.ErrorForCode(code))
			}
		}
		if end := listEndOffset(t, rc, topic); end != 0 {
			t.Errorf("%s: log end offset %d: a bomb was stored", topic, end)
		}
	}
	peak := vmHWM(t, b)
	t.Logf("broker peak resident memory: %d MiB at start, %d MiB after the bombs", baseline>>20, peak>>20)
	if peak > 512<<20 {
		t.Errorf("broker peak resident memory %d MiB after the bombs", peak>>20)
	}

	// A normal producer and a consumer are served.
	pcl := newKgo(t, b, kgo.ProducerBatchCompression(kgo.GzipCompression()))
	for _, topic := range []string{keep, recompress} {
		if err := pcl.ProduceSync(ctxT(t, 20*time.Second), &kgo.Record{Topic: topic, Value: []byte("after the bombs")}).FirstErr(); err != nil {
			t.Fatalf("%s: produce after the bombs: %v", topic, err)
		}
		recs := consumeAll(t, b, topic, map[int32]int64{0: 1})
		if len(recs[0]) != 1 || string(recs[0][0].Value) != "after the bombs" {
			t.Errorf("%s: consumed %d records after the bombs", topic, len(recs[0]))
		}
	}
}

// produceCode is produceRaw for another goroutine than the test's: it
// returns what went wrong instead of failing the test.
func produceCode(rc *rawConn, topic string, batch []byte) (int16, error) {
	req := produceRequest(topic, 0, -1, batch)
	if err := rc.write(rc.frame(req)); err != nil {
		return 0, err
	}
	frame, err := rc.readFrame(60 * time.Second)
	if err != nil {
		return 0, err
	}
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	resp.SetVersion(req.GetVersion())
	if err := decodeResponse(frame, rc.corr, resp); err != nil {
		return 0, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return 0, fmt.Errorf("unexpected response shape %+v", resp)
	}
	return resp.Topics[0].Partitions[0].ErrorCode, nil
}

// vmHWM is the broker process's peak resident set size (VmHWM), in bytes.
func vmHWM(t *testing.T, b *broker) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", b.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM %q: %v", rest, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", b.cmd.Process.Pid)
	return 0
}
