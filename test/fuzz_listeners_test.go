//go:build e2e

package test

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/test/fuzzgen"
)

// fuzzRSSLimit is the resident memory the broker must stay under while
// fuzzed (issue 20's bound).
const fuzzRSSLimit = 1 << 30

// TestFuzzListeners is the structure-aware fuzz of a real gregor process:
// workers send requests of every API key and version each listener serves
// (broker and controller listener), filled by test/fuzzgen with edge values,
// half of them damaged and one in a hundred claiming up to 100 MiB more than
// it sends (a stalled frame), while a well-behaved producer (acks=all) and
// consumer work on a topic of their own. Throughout, the process must stay
// under fuzzRSSLimit resident and a fresh client must be served on both
// listeners; at the end no panic may be in its log and every acknowledged
// record must be readable. It runs for GREGOR_FUZZ_LISTENERS (a Go
// duration, e.g. 10m) and is skipped without it: test/fuzz-listeners.sh
// runs it.
//
// The fuzzers name only their own resources (fuzzgen's names), never the
// producer's topic, and never the broker's own node id in node-to-node
// requests or a default quota entity: what they may legitimately do to a
// cluster without authorization (delete a topic they can name, fence a
// broker whose epoch they guessed, throttle every client) would otherwise
// be counted as a loss. Registering fake brokers, which any client of an
// unauthenticated controller listener can do, is left in.
func TestFuzzListeners(t *testing.T) {
	env := os.Getenv("GREGOR_FUZZ_LISTENERS")
	if env == "" {
		t.Skip("GREGOR_FUZZ_LISTENERS unset (a duration; test/fuzz-listeners.sh sets it)")
	}
	dur, err := time.ParseDuration(env)
	if err != nil {
		t.Fatalf("GREGOR_FUZZ_LISTENERS=%q: %v", env, err)
	}
	b := startBroker(t)
	ctrlAddr := fmt.Sprintf("127.0.0.1:%d", b.ctrlPort)
	const topic = "gregor-fuzz-acked"
	cl := newKgo(t, b)
	createTopic(t, cl, topic, 3, map[string]*string{
		"retention.ms": strp("-1"), "retention.bytes": strp("-1"),
		"min.insync.replicas": strp("1"), "cleanup.policy": strp("delete"),
	})
	listeners := []fuzzTarget{
		{name: "broker", addr: b.addr(), apis: servedAPIs(t, b.addr())},
		{name: "controller", addr: ctrlAddr, apis: servedAPIs(t, ctrlAddr)},
	}

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var wg sync.WaitGroup
	var st fuzzStats
	const workers = 6 // two of them on the controller listener
	for i := 0; i < workers; i++ {
		target := listeners[0]
		if i%3 == 2 {
			target = listeners[1]
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			fuzzWorker(ctx, uint64(i+1), target, &st)
		}()
	}

	// The well-behaved producer and consumer.
	var mu sync.Mutex
	acked := map[int32]map[int64]string{}
	var produced, produceErrs atomic.Int64
	prodCtx, stopProducer := context.WithCancel(context.Background())
	defer stopProducer()
	var prodWG sync.WaitGroup
	prodWG.Add(1)
	go func() {
		defer prodWG.Done()
		p := newKgo(t, b, kgo.DefaultProduceTopic(topic), kgo.ClientID("gregor-fuzz-good"))
		for seq := 0; prodCtx.Err() == nil; seq++ {
			val := strconv.Itoa(seq)
			p.Produce(prodCtx, &kgo.Record{Value: []byte(val)}, func(r *kgo.Record, err error) {
				if err != nil {
					// Records still in flight when the producer
					// stops fail with its context: not counted.
					if prodCtx.Err() == nil && produceErrs.Add(1) == 1 {
						t.Logf("first produce error (not acknowledged, so not checked): %v", err)
					}
					return
				}
				produced.Add(1)
				mu.Lock()
				if acked[r.Partition] == nil {
					acked[r.Partition] = map[int64]string{}
				}
				acked[r.Partition][r.Offset] = val
				mu.Unlock()
			})
			if seq%100 == 99 {
				// At most a hundred in flight, at most ~20,000 a
				// second: a steady client, not a second load test.
				p.Flush(prodCtx)
				time.Sleep(5 * time.Millisecond)
			}
		}
		p.Flush(context.Background())
	}()
	var consumed atomic.Int64
	var consWG sync.WaitGroup
	consWG.Add(1)
	go func() {
		defer consWG.Done()
		c := newKgo(t, b, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.ClientID("gregor-fuzz-good"))
		for ctx.Err() == nil {
			fs := c.PollFetches(ctx)
			consumed.Add(int64(fs.NumRecords()))
		}
	}()

	// The watch: resident memory, a fresh client on each listener, the
	// process alive.
	var peakRSS int64
	deadline := time.Now().Add(dur)
	nextClient := time.Now()
	for time.Now().Before(deadline) {
		select {
		case <-b.exited:
			t.Fatalf("gregor exited while fuzzed:\n%s", crashExcerpt(b.logPath))
		case <-time.After(time.Second):
		}
		rss := processRSS(t, b.cmd.Process.Pid, "VmRSS")
		peakRSS = max(peakRSS, rss)
		if rss > fuzzRSSLimit {
			t.Fatalf("resident memory %d MiB, over the %d MiB bound", rss>>20, fuzzRSSLimit>>20)
		}
		if time.Now().After(nextClient) {
			for _, l := range listeners {
				if err := freshClientServed(l.addr, l.name == "broker"); err != nil {
					t.Fatalf("a fresh client is not served on the %s listener (%s): %v", l.name, l.addr, err)
				}
			}
			nextClient = time.Now().Add(10 * time.Second)
			t.Logf("%s: %d requests (%d answered, %d connections closed or timed out), RSS %d MiB, %d acked, %d consumed",
				time.Until(deadline).Round(time.Second), st.sent.Load(), st.answered.Load(), st.dropped.Load(),
				rss>>20, produced.Load(), consumed.Load())
		}
	}
	stop()
	wg.Wait()
	stopProducer()
	prodWG.Wait()
	consWG.Wait()
	peakRSS = max(peakRSS, processRSS(t, b.cmd.Process.Pid, "VmHWM"))

	// Every acknowledged record is readable.
	mu.Lock()
	defer mu.Unlock()
	end := endOffsets(t, cl, topic)
	got := consumeAll(t, b, topic, end)
	var read, missing int
	for p, offs := range acked {
		byOffset := map[int64]string{}
		for _, r := range got[p] {
			byOffset[r.Offset] = string(r.Value)
		}
		for off, val := range offs {
			if v, ok := byOffset[off]; !ok || v != val {
				missing++
				if missing <= 5 {
					t.Errorf("acknowledged record %s/%d@%d (%q) read as %q (present %t)", topic, p, off, val, v, ok)
				}
				continue
			}
			read++
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d acknowledged records not readable", missing, missing+read)
	}
	if excerpt := crashExcerpt(b.logPath); excerpt != "" {
		t.Errorf("a panic in the log:\n%s", excerpt)
	}
	summary := fmt.Sprintf("fuzz-listeners: %s, %d requests sent (%d answered, %d connections closed or timed out), peak RSS %d MiB (bound %d MiB), %d records acknowledged, %d read back (%d missing), %d produce errors, consumer read %d while fuzzed",
		dur, st.sent.Load(), st.answered.Load(), st.dropped.Load(), peakRSS>>20, fuzzRSSLimit>>20,
		read+missing, read, missing, produceErrs.Load(), consumed.Load())
	t.Log(summary)
	fmt.Println(summary)
}

// crashExcerpt returns the log around the process's fatal panic or error,
// else around its first recovered handler panic ("panicked"), or "".
func crashExcerpt(logPath string) string {
	data, err := os.ReadFile(logPath)
	if err != nil {
		return fmt.Sprintf("read %s: %v", logPath, err)
	}
	text := string(data)
	for _, mark := range []string{"\npanic: ", "\nfatal error: ", "panicked"} {
		if i := strings.Index(text, mark); i >= 0 {
			return text[max(0, i-1500):min(len(text), i+5000)]
		}
	}
	return ""
}

// fuzzTarget is a listener and the API versions it serves.
type fuzzTarget struct {
	name string
	addr string
	apis map[int16][2]int16
}

type fuzzStats struct {
	sent, answered, dropped atomic.Int64
}

// servedAPIs asks a listener's ApiVersions.
func servedAPIs(t *testing.T, addr string) map[int16][2]int16 {
	t.Helper()
	rc := dialRawAddr(t, addr)
	resp := rc.roundTrip(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse)
	out := map[int16][2]int16{}
	for _, k := range resp.ApiKeys {
		out[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	return out
}

// fuzzWorker sends generated requests to one listener until ctx ends, one
// at a time on a connection, and dials again when the broker closes the
// connection or leaves a request unanswered for long.
func fuzzWorker(ctx context.Context, seed uint64, target fuzzTarget, st *fuzzStats) {
	g := fuzzgen.New(seed)
	keys := make([]int16, 0, len(target.apis))
	for k := range target.apis {
		keys = append(keys, k)
	}
	formatter := kmsg.NewRequestFormatter(kmsg.FormatterClientID("gregor-fuzz"))
	headerLen := 4 + 8 + 2 + len("gregor-fuzz")
	var conn net.Conn
	var r *bufio.Reader
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	for corr := int32(1); ctx.Err() == nil; corr++ {
		if conn == nil {
			c, err := net.DialTimeout("tcp", target.addr, 5*time.Second)
			if err != nil {
				time.Sleep(100 * time.Millisecond) // the connection limit may be reached; try again
				continue
			}
			conn, r = c, bufio.NewReader(c)
		}
		key := keys[g.Intn(len(keys))]
		vr := target.apis[key]
		req := g.Request(key, vr[0]+int16(g.Intn(int(vr[1]-vr[0])+1)))
		if req == nil {
			continue
		}
		spare(req)
		frame := formatter.AppendRequest(nil, req, corr)
		answer := true
		if p, ok := req.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
			answer = false
		}
		if g.Intn(2) == 0 {
			frame = g.Mutate(frame, headerLen)
			binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
		}
		if g.Intn(100) == 0 {
			// A frame that claims up to 100 MiB more than it sends
			// stalls until the worker gives up and closes; the
			// broker holds only what arrived of it.
			binary.BigEndian.PutUint32(frame, uint32(len(frame)-4+1+g.Intn(100<<20)))
		}
		st.sent.Add(1)
		conn.SetDeadline(time.Now().Add(3 * time.Second))
		if _, err := conn.Write(frame); err != nil {
			st.dropped.Add(1)
			conn.Close()
			conn = nil
			continue
		}
		if !answer {
			continue
		}
		if err := readResponse(r); err != nil {
			st.dropped.Add(1)
			conn.Close()
			conn = nil
			continue
		}
		st.answered.Add(1)
	}
}

// readResponse reads and drops one size-prefixed response frame.
func readResponse(r *bufio.Reader) error {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > 256<<20 {
		return fmt.Errorf("response frame of %d bytes", n)
	}
	_, err := r.Discard(int(n))
	return err
}

// spare keeps a fuzzed request off what the test's own clients and the
// broker itself depend on (see TestFuzzListeners): node 1 (the broker) is
// named by no node-to-node request, and no quota is set on a default
// entity.
func spare(req kmsg.Request) {
	const other = 1000
	switch r := req.(type) {
	case *kmsg.BrokerRegistrationRequest:
		if r.BrokerID == 1 {
			r.BrokerID = other
		}
	case *kmsg.BrokerHeartbeatRequest:
		if r.BrokerID == 1 {
			r.BrokerID = other
		}
	case *kmsg.AlterPartitionRequest:
		if r.BrokerID == 1 {
			r.BrokerID = other
		}
	case *kmsg.AllocateProducerIDsRequest:
		if r.BrokerID == 1 {
			r.BrokerID = other
		}
	case *kmsg.AlterClientQuotasRequest:
		for i := range r.Entries {
			for j := range r.Entries[i].Entity {
				if r.Entries[i].Entity[j].Name == nil {
					r.Entries[i].Entity[j].Name = kmsg.StringPtr("fuzz-user")
				}
			}
		}
	}
}

// freshClientServed dials addr anew and asks ApiVersions, and Metadata on
// a broker listener.
func freshClientServed(addr string, broker bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	if _, err := cl.SeedBrokers()[0].Request(ctx, kmsg.NewPtrApiVersionsRequest()); err != nil {
		return fmt.Errorf("ApiVersions: %w", err)
	}
	if broker {
		if _, err := cl.SeedBrokers()[0].Request(ctx, kmsg.NewPtrMetadataRequest()); err != nil {
			return fmt.Errorf("Metadata: %w", err)
		}
	}
	return nil
}

// processRSS reads a memory figure (VmRSS, VmHWM) of pid in bytes.
func processRSS(t *testing.T, pid int, field string) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("read /proc/%d/status: %v", pid, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}
