//go:build e2e

package test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// readyz returns /readyz's status code and body (0 when it cannot be read).
func readyz(url string) (int, string) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(body))
}

// waitReadyz polls /readyz until its status is code and its body holds
// want, failing after 30s.
func waitReadyz(t *testing.T, url string, code int, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, body := readyz(url)
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
	waitReadyz(t, ready, 200, "ready")

	// A client whose connections (metadata, produce, fetch) exist before
	// the flood.
	cl := newKgo(t, b, kgo.ConsumeTopics("fd-during"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
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
	for i := 0; i < 400 && refused < 20; i++ {
		c, err := net.DialTimeout("tcp", b.addr(), 5*time.Second)
		if err != nil {
			refused++
			continue
		}
		if apiVersionsServed(c) {
			served++
			flood = append(flood, c)
			continue
		}
		refused++
		c.Close()
	}
	t.Logf("flood: %d connections served, %d refused", served, refused)
	if refused == 0 {
		t.Fatalf("400 connections to a broker limited to 256 descriptors were all served")
	}
	code, body := readyz(ready)
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
	waitReadyz(t, ready, 200, "ready")
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
