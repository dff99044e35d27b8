package raft

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.etcd.io/raft/v3/raftpb"

	"gregor/internal/rpc"
)

// Reporter is told about failed deliveries (the etcd raft node's
// ReportUnreachable / ReportSnapshot).
type Reporter interface {
	ReportUnreachable(id uint64)
	ReportSnapshot(id uint64, failed bool)
}

// NetTransportConfig configures a NetTransport.
type NetTransportConfig struct {
	ClusterID string
	NodeID    int32
	// Security is how this node authenticates to the controller listener.
	Security rpc.Security
	// Peers maps each other voter's id to its controller listener (host:port).
	Peers map[int32]string
	// RequestTimeout bounds one send (controller.quorum.request.timeout.ms).
	RequestTimeout time.Duration
	Logger         *slog.Logger
}

// peerQueueLen bounds the messages waiting for one peer; beyond it messages
// are dropped, which raft tolerates (it resends what matters).
const peerQueueLen = 4096

// maxMessagesPerRequest bounds one RaftMessages request.
const maxMessagesPerRequest = 256

// NetTransport sends raft messages to the other voters over their controller
// listeners as RaftMessages requests, one sender goroutine per peer, so a
// slow or dead peer never holds up the others or the raft loop.
type NetTransport struct {
	cfg    NetTransportConfig
	logger *slog.Logger

	mu       sync.Mutex
	reporter Reporter
	peers    map[uint64]chan raftpb.Message
	stop     context.CancelFunc
	wg       sync.WaitGroup
}

// NewNetTransport returns a transport; Start begins sending.
func NewNetTransport(cfg NetTransportConfig) *NetTransport {
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 2 * time.Second
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	return &NetTransport{cfg: cfg, logger: logger.With("component", "raft-transport"), peers: map[uint64]chan raftpb.Message{}}
}

// Start starts one sender per peer, reporting failures to r.
func (t *NetTransport) Start(r Reporter) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	t.stop = cancel
	t.reporter = r
	for id, addr := range t.cfg.Peers {
		if id == t.cfg.NodeID {
			continue
		}
		q := make(chan raftpb.Message, peerQueueLen)
		t.peers[RaftID(id)] = q
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			t.sendLoop(ctx, RaftID(id), addr, q)
		}()
	}
}

// Send queues messages for their peers without blocking.
func (t *NetTransport) Send(msgs []raftpb.Message) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, m := range msgs {
		q, ok := t.peers[m.To]
		if !ok {
			continue
		}
		select {
		case q <- m:
		default:
			if m.Type == raftpb.MsgSnap && t.reporter != nil {
				t.reporter.ReportSnapshot(m.To, true)
			}
		}
	}
}

func (t *NetTransport) sendLoop(ctx context.Context, to uint64, addr string, q chan raftpb.Message) {
	client := rpc.NewClient(addr, fmt.Sprintf("gregor-raft-%d", t.cfg.NodeID), t.cfg.Security)
	defer client.Close()
	var lastErr string
	for {
		var first raftpb.Message
		select {
		case <-ctx.Done():
			return
		case first = <-q:
		}
		batch := []raftpb.Message{first}
	drain:
		for len(batch) < maxMessagesPerRequest {
			select {
			case m := <-q:
				batch = append(batch, m)
			default:
				break drain
			}
		}
		err := t.send(ctx, client, batch)
		for _, m := range batch {
			if m.Type == raftpb.MsgSnap {
				t.reporter.ReportSnapshot(to, err != nil)
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			t.reporter.ReportUnreachable(to)
			if msg := err.Error(); msg != lastErr {
				t.logger.Warn("cannot reach voter", "voter", NodeIDOf(to), "addr", addr, "err", err)
				lastErr = msg
			}
			// Do not spin on a dead peer: raft resends on its next
			// heartbeat anyway.
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		if lastErr != "" {
			t.logger.Info("voter reachable again", "voter", NodeIDOf(to), "addr", addr)
			lastErr = ""
		}
	}
}

// send sends a batch. A connection that has sat idle may lead to a process
// of the peer that has since ended (a follower sends nothing to a voter
// that is not its leader until an election): the first write or read on it
// finds the close. Then the batch is sent once more on a new connection at
// once, rather than lost until raft resends; a vote or its answer, which
// raft does not resend, would otherwise cost a whole election timeout. A
// message the peer did receive before the close may so arrive twice, which
// raft tolerates.
func (t *NetTransport) send(ctx context.Context, client *rpc.Client, batch []raftpb.Message) error {
	err := t.sendOnce(ctx, client, batch)
	if err != nil && ctx.Err() == nil && rpc.PeerClosed(err) {
		err = t.sendOnce(ctx, client, batch)
	}
	return err
}

func (t *NetTransport) sendOnce(ctx context.Context, client *rpc.Client, batch []raftpb.Message) error {
	ctx, cancel := context.WithTimeout(ctx, t.cfg.RequestTimeout)
	defer cancel()
	req := &RaftMessagesRequest{ClusterID: t.cfg.ClusterID, From: t.cfg.NodeID, Messages: batch}
	resp, err := client.Request(ctx, req)
	if err != nil {
		return err
	}
	if code := resp.(*RaftMessagesResponse).ErrorCode; code != 0 {
		return kerr.ErrorForCode(code)
	}
	return nil
}

// Close stops the senders and waits for them.
func (t *NetTransport) Close() {
	t.mu.Lock()
	stop := t.stop
	t.mu.Unlock()
	if stop != nil {
		stop()
	}
	t.wg.Wait()
}
