package rpc

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ProbeGone reports a refused dial as gone and a listening port as not.
func TestProbeGone(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	closedLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closedLn.Addr().String()
	closedLn.Close()
	ctx := context.Background()
	if ProbeGone(ctx, ln.Addr().String(), 5*time.Second) {
		t.Fatal("a listening port probed as gone")
	}
	if !ProbeGone(ctx, closedAddr, 5*time.Second) {
		t.Fatal("a port that refuses connections probed as not gone")
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if ProbeGone(cancelled, closedAddr, 5*time.Second) {
		t.Fatal("a probe with a cancelled context reported gone")
	}
}

// A request on a connection the peer closed fails with an error PeerClosed
// recognizes; a refused dial does not.
func TestPeerClosed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conn.Close()
		}
	}()
	c := NewClient(ln.Addr().String(), "test", Security{})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = c.Request(ctx, kmsg.NewPtrApiVersionsRequest())
	if err == nil || !PeerClosed(err) {
		t.Fatalf("request on a closed connection: %v, want an error PeerClosed recognizes", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	refused := NewClient(addr, "test", Security{})
	defer refused.Close()
	if _, err := refused.Request(ctx, kmsg.NewPtrApiVersionsRequest()); err == nil || PeerClosed(err) {
		t.Fatalf("refused dial: %v, want an error PeerClosed does not recognize", err)
	}
}
