package network

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/fdtest"
)

// TestDescriptorBudgetRefusesConnections: connections past the budget are
// closed at once, AcceptError says why, and a closed connection makes room.
func TestDescriptorBudgetRefusesConnections(t *testing.T) {
	h := &testHandler{fn: func(ctx context.Context, req *Request) (kmsg.Response, error) {
		return echoMetadata(req), nil
	}}
	budget := NewDescriptorBudget(2)
	s := startServer(t, Config{Descriptors: budget}, h)
	a, b := dial(t, s), dial(t, s)
	a.roundTrip(12)
	b.roundTrip(12)
	refused := dial(t, s)
	refused.send(metadataReq(12))
	refused.expectClosed()
	if err := s.AcceptError(); err == nil || !strings.Contains(err.Error(), "file descriptors") {
		t.Fatalf("AcceptError with the budget spent: %v", err)
	}
	a.nc.Close()
	waitFor(t, "the closed connection's descriptor given back", func() bool { return budget.InUse() == 1 })
	if err := s.AcceptError(); err != nil {
		t.Fatalf("AcceptError with room: %v", err)
	}
	dial(t, s).roundTrip(12)
}

func TestConnectionDescriptors(t *testing.T) {
	for _, tc := range []struct{ limit, logFiles, want int }{
		{256, 128, 64},       // the default log budget, half the limit
		{20000, 10000, 9936}, // DefaultMaxOpenFiles
		{1024, 100000, 448},  // a log budget past the limit counts as half
		{100, 50, 1},         // too few: one connection, and a warning
		{1 << 20, 10000, 1<<20 - 10064},
	} {
		if got := connectionDescriptors(tc.limit, tc.logFiles); got != tc.want {
			t.Errorf("connectionDescriptors(%d, %d) = %d, want %d", tc.limit, tc.logFiles, got, tc.want)
		}
	}
}

// countingHandler counts log records with a given message.
type countingHandler struct {
	msg string
	n   *atomic.Int64
}

func (h countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h countingHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.n.Add(1)
	}
	return nil
}
func (h countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h countingHandler) WithGroup(string) slog.Handler      { return h }

// TestAcceptOutOfDescriptorsBacksOff (issue #20 item 5): when accept fails
// with EMFILE the listener backs off instead of spinning, AcceptError
// reports it (for /readyz), and once descriptors are free the waiting
// client is served.
func TestAcceptOutOfDescriptorsBacksOff(t *testing.T) {
	var failures atomic.Int64
	h := &testHandler{fn: func(ctx context.Context, req *Request) (kmsg.Response, error) {
		return echoMetadata(req), nil
	}}
	s := startServer(t, Config{Logger: slog.New(countingHandler{msg: "accept failed", n: &failures})}, h)

	hogs := fdtest.Exhaust(t, 16)
	// One descriptor for the client's end; the server's accept finds none.
	hogs.Free(1)
	c := dial(t, s)
	waitFor(t, "accept failing", func() bool { return s.AcceptError() != nil })
	before := failures.Load()
	time.Sleep(time.Second)
	if n := failures.Load() - before; n > 20 {
		t.Fatalf("%d failed accepts in a second: the listener spins instead of backing off", n)
	}
	hogs.Free(-1)
	c.roundTrip(12)
	if err := s.AcceptError(); err != nil {
		t.Fatalf("AcceptError after a successful accept: %v", err)
	}
}
