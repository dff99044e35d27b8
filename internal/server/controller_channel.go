package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/handlers"
	"gregor/internal/network"
	"gregor/internal/rpc"
)

// defaultControllerWait bounds a controller request whose context has no
// deadline of its own.
const defaultControllerWait = 30 * time.Second

// controllerRequest sends req to the active controller and returns its
// answer: to this node's own controller when it is the active one (in
// process, through its controller handlers), else to the leader the quorum
// names, over that controller's listener. While no controller answers, or
// the one asked is no longer active, it retries with backoff until ctx ends
// (Kafka's ForwardingManager and NodeToControllerChannelManager).
func (s *Server) controllerRequest(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultControllerWait)
		defer cancel()
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	unhook := context.AfterFunc(s.stopping, func() { cancel(errors.New("the broker is shutting down")) })
	defer unhook()
	backoff := 10 * time.Millisecond
	for {
		resp, err := s.tryController(ctx, req)
		if err == nil && !handlers.NotController(resp) {
			return resp, nil
		}
		if err == nil {
			err = kerr.NotController
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%s: no active controller answered in time: %w (last error: %v)", kmsg.NameForKey(req.Key()), ctx.Err(), err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

var errNoActiveController = errors.New("no active controller known")

func (s *Server) tryController(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	if s.controller != nil && s.controller.Active() {
		// The broker authorized the request with its client's principal.
		return s.ctrlHandlers.Handle(handlers.Forwarded(ctx), &network.Request{
			Header: network.RequestHeader{APIKey: req.Key(), APIVersion: req.GetVersion()},
			Body:   req,
		})
	}
	leader, _ := s.quorum.Leader()
	addr, ok := s.voterAddrs[leader]
	if !ok || leader == s.cfg.NodeID {
		return nil, errNoActiveController
	}
	// One connection per request: controller requests are rare (admin
	// requests, a heartbeat every few seconds) and a fresh connection
	// needs no pool shared across goroutines.
	c := rpc.NewClient(addr, fmt.Sprintf("gregor-broker-%d", s.cfg.NodeID), s.controllerClient)
	defer c.Close()
	return c.Request(ctx, req)
}
