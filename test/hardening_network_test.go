//go:build e2e

package test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Issue #20's network items against a real process: descriptor exhaustion
// (item 5), waiting requests that must not freeze the broker (item 2), the
// request memory budget and trickling frames (item 7), and /readyz telling
// the truth about them.

// startBrokerLimited starts gregor under a shell that first sets the
// process's open-file limit to nofile (0 keeps the limit), with the HTTP
// listener on; it returns the broker and the /readyz URL.
func startBrokerLimited(t *testing.T, nofile int, extra ...string) (*broker, string) {
	t.Helper()
	bin := gregorBin
	if nofile > 0 {
		bin = filepath.Join(t.TempDir(), "gregor-limited")
		script := fmt.Sprintf("#!/bin/sh\nulimit -n %d || exit 1\nexec %s \"$@\"\n", nofile, gregorBin)
		if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	httpAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	b := &broker{t: t, bin: bin, dataDir: t.TempDir(), port: freePort(t),
		args: append([]string{"gregor.http.listen=" + httpAddr}, extra...)}
	b.start()
	t.Cleanup(b.stop)
	return b, "http://" + httpAddr + "/readyz"
}

// readyzStatus returns /readyz's status code and body (0 when it cannot be read).
func readyzStatus(url string) (int, string) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(body))
}

// waitReadyzStatus polls /readyz until its status is code and its body holds
// want, failing after 30s.
func waitReadyzStatus(t *testing.T, url string, code int, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, body := readyzStatus(url)
		if got == code && strings.Contains(body, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz: %d %q, want %d with %q", got, body, code, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// apiVersionsServed sends ApiVersions on c and reports whether the broker
// answered it (false: the connection was closed, refused).
func apiVersionsServed(c net.Conn) bool {
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 0
	frame := kmsg.NewRequestFormatter().AppendRequest(nil, req, 1)
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := c.Write(frame); err != nil {
		return false
	}
	var size [4]byte
	_, err := io.ReadFull(c, size[:])
	return err == nil
}

// TestDescriptorExhaustionKeepsLogDirOnline (issue #20 item 5): a broker
// with an open-file limit of 256 is flooded with plain connections. It
// refuses those past its descriptor budget instead of running out, so a
// client already connected still creates a topic (new segment files),
// produces and consumes while the flood holds its connections; /readyz
// says the broker cannot accept connections meanwhile and is ready again
// once the flood leaves; no log dir goes offline.
func TestDescriptorExhaustionKeepsLogDirOnline(t *testing.T) {
	b, ready := startBrokerLimited(t, 256)
	waitReadyzStatus(t, ready, 200, "ready")

	// A client whose connections (metadata, produce, fetch) exist before
	// the flood.
	// Its idle connections are kept: a new one would be refused.
	cl := newKgo(t, b, kgo.ConsumeTopics("fd-during"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.ConnIdleTimeout(15*time.Minute))
	createTopic(t, cl, "fd-during", 2, nil)
	if err := cl.ProduceSync(ctxT(t, 20*time.Second), &kgo.Record{Topic: "fd-during", Value: []byte("warm")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	consumed := 0
	pollUntil := func(n int) {
		t.Helper()
		ctx := ctxT(t, 30*time.Second)
		for consumed < n {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("consumed %d of %d records of fd-during", consumed, n)
			}
			fs.EachError(func(topic string, p int32, err error) { t.Errorf("fetch %s/%d: %v", topic, p, err) })
			consumed += fs.NumRecords()
		}
	}
	pollUntil(1)

	// The flood: open connections until the broker refuses them.
	var flood []net.Conn
	defer func() {
		for _, c := range flood {
			c.Close()
		}
	}()
	served, refused := 0, 0
	fill := func() {
		t.Helper()
		for i := 0; i < 400; i++ {
			c, err := net.DialTimeout("tcp", b.addr(), 5*time.Second)
			if err != nil {
				refused++
				return
			}
			if !apiVersionsServed(c) {
				c.Close()
				refused++
				return
			}
			served++
			flood = append(flood, c)
		}
		t.Fatalf("400 connections to a broker limited to 256 descriptors were all served")
	}
	fill()
	// A connection closing meanwhile (another client's) makes room for
	// one more: fill again before each look.
	code, body := readyzStatus(ready)
	for try := 0; try < 5 && code == http.StatusOK; try++ {
		fill()
		code, body = readyzStatus(ready)
	}
	t.Logf("flood: %d connections served, %d refused", served, refused)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "cannot accept connections") {
		t.Errorf("/readyz during the flood: %d %q, want 503 naming the connections", code, body)
	}

	// The log keeps working for the client already connected.
	createTopic(t, cl, "fd-new", 8, nil)
	for i := range 50 {
		for _, topic := range []string{"fd-during", "fd-new"} {
			r := &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "r%d", i)}
			if err := cl.ProduceSync(ctxT(t, 20*time.Second), r).FirstErr(); err != nil {
				t.Fatalf("produce to %s during the flood: %v", topic, err)
			}
		}
	}
	pollUntil(51)

	// The flood leaves: the broker is ready again and a new client reads
	// everything.
	for _, c := range flood {
		c.Close()
	}
	flood = nil
	waitReadyzStatus(t, ready, 200, "ready")
	fresh := newKgo(t, b)
	end := endOffsets(t, fresh, "fd-new")
	total := int64(0)
	for _, e := range end {
		total += e
	}
	if total != 50 {
		t.Errorf("fd-new holds %d records, want 50", total)
	}
	got := consumeAll(t, b, "fd-new", end)
	for p, recs := range got {
		checkContiguous(t, "fd-new", p, recs, end[p])
	}
	if log := b.log(); strings.Contains(log, "log dir offline") {
		t.Errorf("a log dir went offline:\n%s", log)
	}
}

// residentBytes is the resident set size of process pid (VmRSS).
func residentBytes(t *testing.T, pid int) int64 {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(rest), "%d", &kb)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/<pid>/status")
	return 0
}

// TestRequestBytesBudget (issue #20 item 7): ten connections each send a
// 100 MiB frame and stop one byte short. queued.max.request.bytes bounds
// what the broker takes in (the frames past the budget stay in their
// sockets), so the broker's RSS stays far below the gigabyte the frames
// would take; connections.max.idle.ms closes the stalled frames, and so it
// does a frame that trickles in a byte at a time; clients are served after.
func TestRequestBytesBudget(t *testing.T) {
	const frameSize = 100 << 20 // socket.request.max.bytes
	const idle = 2 * time.Second
	b, _ := startBrokerLimited(t, 0, "queued.max.request.bytes=104857600",
		fmt.Sprintf("connections.max.idle.ms=%d", idle.Milliseconds()))
	cl := newKgo(t, b)
	createTopic(t, cl, "budget", 1, nil)
	pid := b.cmd.Process.Pid
	base := residentBytes(t, pid)

	var written [10]atomic.Int64
	conns := make([]net.Conn, len(written))
	var wg sync.WaitGroup
	for i := range conns {
		c, err := net.DialTimeout("tcp", b.addr(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
		wg.Add(1)
		go func() {
			defer wg.Done()
			chunk := make([]byte, 1<<20)
			binary.BigEndian.PutUint32(chunk, frameSize)
			for left := frameSize + 4 - 1; left > 0; {
				n := min(left, len(chunk))
				c.SetWriteDeadline(time.Now().Add(60 * time.Second))
				m, err := c.Write(chunk[:n])
				written[i].Add(int64(m))
				if err != nil {
					return // closed by the broker (idle), or the deadline
				}
				left -= m
				binary.BigEndian.PutUint32(chunk, 0)
			}
		}()
	}
	defer wg.Wait()
	// Wait until the writes stop making progress: the broker has taken
	// what its budget allows.
	total := func() int64 {
		var n int64
		for i := range written {
			n += written[i].Load()
		}
		return n
	}
	last, still := int64(-1), 0
	for deadline := time.Now().Add(60 * time.Second); still < 3; {
		if time.Now().After(deadline) {
			t.Fatalf("the writes never stalled (%d bytes written)", total())
		}
		time.Sleep(300 * time.Millisecond)
		if n := total(); n == last {
			still++
		} else {
			last, still = n, 0
		}
	}
	rss := residentBytes(t, pid)
	t.Logf("written %d MiB in all; broker RSS %d MiB (was %d MiB)", last>>20, rss>>20, base>>20)
	if last < frameSize-1<<20 {
		t.Errorf("only %d bytes written: the budget did not let one whole frame in", last)
	}
	if grown := rss - base; grown > 400<<20 {
		t.Errorf("broker RSS grew by %d MiB holding stalled frames; queued.max.request.bytes is 100 MiB", grown>>20)
	}

	// connections.max.idle.ms closes every stalled frame's connection:
	// one after the other, as each takes the budget the one before it
	// gave back and then stalls.
	for i, c := range conns {
		c.SetReadDeadline(time.Now().Add(time.Duration(len(conns))*idle + 30*time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("connection %d with a stalled frame: read %v, want it closed", i, err)
		}
	}

	// A frame that trickles in: one byte every 500ms, never idle that long.
	rc := dialRaw(t, b)
	frame := rc.frame(kmsg.NewPtrMetadataRequest())
	if len(frame) < 30 {
		t.Fatalf("a %d-byte frame is too short to trickle for 3 idle times", len(frame))
	}
	start := time.Now()
	for i := 0; ; i++ {
		rc.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if _, err := rc.c.Write(frame[i : i+1]); err != nil {
			break // closed (the write after the close fails)
		}
		if time.Since(start) > 3*idle || i == len(frame)-2 {
			t.Fatalf("a frame trickling in a byte every 500ms still open after %v", time.Since(start))
		}
		time.Sleep(500 * time.Millisecond)
	}
	if took := time.Since(start); took < idle {
		t.Errorf("trickling frame closed after %v, before connections.max.idle.ms", took)
	}

	// Clients are served.
	if err := cl.ProduceSync(ctxT(t, 20*time.Second), &kgo.Record{Topic: "budget", Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatalf("produce after the stalled frames: %v", err)
	}
}

// longPollFetch is a Fetch v11 of partition 0 of topic at offset 0 that
// waits for a byte as long as the protocol allows.
func longPollFetch(topic string) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 11
	req.ReplicaID = -1
	req.MaxWaitMillis = 2147483647
	req.MinBytes = 1
	req.MaxBytes = 1 << 20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	fp.CurrentLeaderEpoch = -1
	fp.LogStartOffset = -1
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	return req
}

// newJoinGroupV5 is a JoinGroup v5 of a new member of group: without a
// member id it is answered at once with MEMBER_ID_REQUIRED and the id,
// with it the join waits for the rebalance.
func newJoinGroupV5(group, memberID string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = 5
	req.Group = group
	req.MemberID = memberID
	req.SessionTimeoutMillis = 30000
	req.RebalanceTimeoutMillis = 2147483647
	req.ProtocolType = "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name = "range"
	p.Metadata = []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	req.Protocols = append(req.Protocols, p)
	return req
}

// scrapeMetric reads one series of the broker's /metrics (-1 if absent).
func scrapeMetric(t *testing.T, metricsURL, series string) float64 {
	t.Helper()
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(metricsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			var v float64
			fmt.Sscanf(rest, "%g", &v)
			return v
		}
	}
	return -1
}

// waitScrapedMetric polls a metric until cond holds, failing after 60s.
func waitScrapedMetric(t *testing.T, metricsURL, series string, what string, cond func(float64) bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		v := scrapeMetric(t, metricsURL, series)
		if cond(v) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s is %v after 60s", what, series, v)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestParkedRequestsFreezeNothing (issue #20 item 2): 32 connections with
// 16 long-poll fetches each (max_wait 2147483647) and 640 JoinGroups parked
// for a rebalance delay take more than queued.max.requests (500) requests,
// yet a well-behaved client is served; closing the attacker's connections
// empties the fetch purgatory at once; and SIGTERM with more than 500
// requests parked stops the broker promptly, not after its shutdown
// deadline.
func TestParkedRequestsFreezeNothing(t *testing.T) {
	b, ready := startBrokerLimited(t, 0, "group.initial.rebalance.delay.ms=600000")
	metrics := strings.TrimSuffix(ready, "readyz") + "metrics"
	const fetchSeries = `kafka_server_delayedoperationpurgatory_purgatorysize{delayedOperation="Fetch"}`
	cl := newKgo(t, b)
	createTopic(t, cl, "quiet", 1, nil)
	createTopic(t, cl, "busy", 1, nil)

	parkFetches := func(n int) []*rawConn {
		conns := make([]*rawConn, n)
		for i := range conns {
			rc := dialRaw(t, b)
			var frames []byte
			for range 16 {
				frames = append(frames, rc.frame(longPollFetch("quiet"))...)
			}
			if err := rc.write(frames); err != nil {
				t.Fatal(err)
			}
			conns[i] = rc
		}
		return conns
	}
	attack := parkFetches(32)
	waitScrapedMetric(t, metrics, fetchSeries, "512 long polls parked", func(v float64) bool { return v >= 512 })

	// 640 JoinGroups parked: 40 connections, 16 groups each, every group
	// new, so each join waits for group.initial.rebalance.delay.ms.
	// FindCoordinator creates __consumer_offsets, as Kafka's does.
	findCoordinator := func() int16 {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version = 3
		req.CoordinatorKey = "flood-0-0"
		resp, err := req.RequestWith(ctxT(t, 10*time.Second), cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.ErrorCode
	}
	for deadline := time.Now().Add(30 * time.Second); findCoordinator() != 0; {
		if time.Now().After(deadline) {
			t.Fatal("no group coordinator after 30s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	var joins []*rawConn
	for i := range 40 {
		rc := dialRaw(t, b)
		// Responses leave in request order, so a connection's members
		// get their ids before any of its joins parks.
		var parked []byte
		for j := range 16 {
			group := fmt.Sprintf("flood-%d-%d", i, j)
			resp := rc.roundTrip(newJoinGroupV5(group, "")).(*kmsg.JoinGroupResponse)
			if resp.ErrorCode != kerr.MemberIDRequired.Code {
				t.Fatalf("first join of %s: error %d, want MEMBER_ID_REQUIRED", group, resp.ErrorCode)
			}
			parked = append(parked, rc.frame(newJoinGroupV5(group, resp.MemberID))...)
		}
		if err := rc.write(parked); err != nil {
			t.Fatal(err)
		}
		joins = append(joins, rc)
	}

	// A well-behaved client is served meanwhile.
	serve := func(what string) {
		t.Helper()
		good := newKgo(t, b, kgo.ConsumeTopics("busy"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		// Closed once served: a consumer left polling would keep a long
		// poll of its own in the purgatory the test counts.
		defer good.Close()
		if err := good.ProduceSync(ctxT(t, 30*time.Second), &kgo.Record{Topic: "busy", Value: []byte(what)}).FirstErr(); err != nil {
			t.Fatalf("%s: produce: %v", what, err)
		}
		ctx := ctxT(t, 30*time.Second)
		for {
			fs := good.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("%s: consume: timed out", what)
			}
			found := false
			fs.EachRecord(func(r *kgo.Record) { found = found || string(r.Value) == what })
			if found {
				return
			}
		}
	}
	serve("with 1152 requests parked")
	// The joins were parked all along (the rebalance delay is 10 minutes).
	for i, rc := range joins {
		rc.c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		var one [1]byte
		if _, err := rc.c.Read(one[:]); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("join connection %d: read %v, want its joins still parked", i, err)
		}
	}

	// Closing the attacker's connections frees their long polls.
	for _, rc := range attack {
		rc.c.Close()
	}
	waitScrapedMetric(t, metrics, fetchSeries, "attacker gone", func(v float64) bool { return v == 0 })
	serve("after the attacker left")

	// SIGTERM with 512 fetches and 640 joins parked.
	parkFetches(32)
	waitScrapedMetric(t, metrics, fetchSeries, "512 long polls parked again", func(v float64) bool { return v >= 512 })
	start := time.Now()
	b.stop()
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("SIGTERM with 1152 requests parked took %v", took)
	} else {
		t.Logf("SIGTERM with 1152 requests parked: stopped in %v", took)
	}
}

// TestJoinGroupFlood (issue #20 item 2): 10,000 new members ask to join
// one group whose group.max.size is 1,000. Each gets its member id at once
// (MEMBER_ID_REQUIRED); the first 1,000 to join with it wait in the
// rebalance without holding a queued.max.requests slot; every later one is
// turned away at once with GROUP_MAX_SIZE_REACHED; a well-behaved client is
// served throughout.
func TestJoinGroupFlood(t *testing.T) {
	const members, maxSize = 10000, 1000
	b, _ := startBrokerLimited(t, 0, fmt.Sprintf("group.max.size=%d", maxSize),
		"group.initial.rebalance.delay.ms=600000")
	cl := newKgo(t, b)
	createTopic(t, cl, "crowd-data", 1, nil)
	for deadline := time.Now().Add(30 * time.Second); ; {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version = 3
		req.CoordinatorKey = "crowd"
		resp, err := req.RequestWith(ctxT(t, 10*time.Second), cl)
		if err == nil && resp.ErrorCode == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no group coordinator after 30s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// 10,000 member ids, asked for on 10 connections, 1,000 pipelined on each.
	ids := make([]string, 0, members)
	for range 10 {
		rc := dialRaw(t, b)
		var frames []byte
		for range members / 10 {
			frames = append(frames, rc.frame(newJoinGroupV5("crowd", ""))...)
		}
		written := make(chan error, 1)
		go func() { written <- rc.write(frames) }()
		for i := range members / 10 {
			frame, err := rc.readFrame(30 * time.Second)
			if err != nil {
				t.Fatalf("first join %d: %v", i, err)
			}
			resp := kmsg.NewPtrJoinGroupResponse()
			resp.Version = 5
			if err := decodeResponse(frame, rc.corr-int32(members/10)+int32(i)+1, resp); err != nil {
				t.Fatal(err)
			}
			if resp.ErrorCode != kerr.MemberIDRequired.Code || resp.MemberID == "" {
				t.Fatalf("first join %d: error %d member %q, want MEMBER_ID_REQUIRED with an id", i, resp.ErrorCode, resp.MemberID)
			}
			ids = append(ids, resp.MemberID)
		}
		if err := <-written; err != nil {
			t.Fatal(err)
		}
		rc.c.Close()
	}

	// The first 1,000 join with their ids and wait (63 connections, at
	// most 16 each in flight).
	next := 0
	for next < maxSize {
		rc := dialRaw(t, b)
		var frames []byte
		for range min(16, maxSize-next) {
			frames = append(frames, rc.frame(newJoinGroupV5("crowd", ids[next]))...)
			next++
		}
		if err := rc.write(frames); err != nil {
			t.Fatal(err)
		}
	}
	adm := kmsg.NewPtrDescribeGroupsRequest()
	adm.Groups = []string{"crowd"}
	for deadline := time.Now().Add(60 * time.Second); ; {
		resp, err := adm.RequestWith(ctxT(t, 10*time.Second), cl)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(resp.Groups[0].Members); n >= maxSize {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("group crowd has %d members after 60s, want %d waiting", n, maxSize)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// Every later member is turned away at once.
	rc := dialRaw(t, b)
	for ; next < maxSize+200; next++ {
		resp := rc.roundTrip(newJoinGroupV5("crowd", ids[next])).(*kmsg.JoinGroupResponse)
		if resp.ErrorCode != kerr.GroupMaxSizeReached.Code {
			t.Fatalf("join of member %d past group.max.size: error %d, want GROUP_MAX_SIZE_REACHED", next, resp.ErrorCode)
		}
	}

	// A well-behaved client is served with 1,000 joins parked.
	if err := cl.ProduceSync(ctxT(t, 30*time.Second), &kgo.Record{Topic: "crowd-data", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("produce with 1,000 joins parked: %v", err)
	}
	if got := endOffsets(t, cl, "crowd-data")[0]; got != 1 {
		t.Errorf("crowd-data ends at %d, want 1", got)
	}
}
