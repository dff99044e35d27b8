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
	return s.controllerRequestOn(ctx, req, nil)
}

// forwardAdmin is controllerRequest for the admin requests a broker
// listener forwards (CreateTopics, AlterConfigs, CreateAcls, ...). Once the
// controller has answered, it waits (within ctx, at most
// defaultControllerWait) until this broker's metadata loader has handled
// what the quorum had handed it by then: where the controller runs in this
// process that includes the request's own change, so the client's next
// request here sees it (its new topic's partitions hosted, its ACLs in
// force). The loader is not on the quorum's commit path, so this wait is
// the client's alone; the change is made whether or not it ends in time.
func (s *Server) forwardAdmin(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	resp, err := s.controllerRequest(ctx, req)
	if err != nil || s.loaderQueue == nil {
		return resp, err
	}
	switch kmsg.Key(req.Key()) {
	case kmsg.DescribeQuorum, kmsg.ListPartitionReassignments:
		return resp, nil // reads: they changed nothing to wait for
	}
	wctx, cancel := context.WithTimeout(ctx, defaultControllerWait)
	defer cancel()
	if werr := s.loaderQueue.WaitHandled(wctx); werr != nil {
		s.logger.Debug("admin request answered before this broker's image caught up", "api", kmsg.NameForKey(req.Key()), "err", werr)
	}
	return resp, nil
}

// controllerRequestOn is controllerRequest that sends over link when the
// active controller is another node (a connection per request if link is
// nil).
func (s *Server) controllerRequestOn(ctx context.Context, req kmsg.Request, link *controllerLink) (kmsg.Response, error) {
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
		resp, err := s.tryController(ctx, req, link)
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

func (s *Server) tryController(ctx context.Context, req kmsg.Request, link *controllerLink) (kmsg.Response, error) {
	if s.controller != nil && s.controller.Active() {
		if link != nil {
			link.close() // this node's controller is the active one now
		}
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
	if link != nil {
		return link.request(ctx, addr, req)
	}
	// One connection per request: controller requests other than
	// heartbeats are rare (admin requests, registration) and a fresh
	// connection needs no pool shared across goroutines.
	c := rpc.NewClient(addr, fmt.Sprintf("gregor-broker-%d", s.cfg.NodeID), s.controllerClient)
	defer c.Close()
	return c.Request(ctx, req)
}

// controllerLink is the broker's one long-lived connection to the active
// controller, for its heartbeats. The controller fences a broker at once
// when the broker's side closes the connection of its latest heartbeat
// (gregor.broker.fence.on.connection.close): a process that dies has its
// sockets closed by the kernel. So a live broker keeps this connection for
// as long as the same controller is active, and closes it only after a
// failed request (the rpc client's rule), when another controller became
// active, or at the end of its lifecycle; a connection whose SASL session
// ends is replaced by a new one that has carried a heartbeat before the old
// one is closed, so the controller is already watching the new one. Used
// by one goroutine at a time (the lifecycle's).
type controllerLink struct {
	clientID string
	security rpc.Security
	client   *rpc.Client
}

func newControllerLink(nodeID int32, sec rpc.Security) *controllerLink {
	return &controllerLink{clientID: fmt.Sprintf("gregor-broker-%d", nodeID), security: sec}
}

// request sends req to the controller at addr over the link.
func (l *controllerLink) request(ctx context.Context, addr string, req kmsg.Request) (kmsg.Response, error) {
	if l.client != nil && l.client.Addr() != addr {
		l.close()
	}
	if l.client == nil {
		l.client = rpc.NewClient(addr, l.clientID, l.security)
	}
	if !l.client.SessionEnding() {
		return l.client.Request(ctx, req)
	}
	old := l.client
	defer old.Close()
	l.client = rpc.NewClient(addr, l.clientID, l.security)
	return l.client.Request(ctx, req)
}

// close closes the link's connection, if any.
func (l *controllerLink) close() {
	if l.client != nil {
		l.client.Close()
		l.client = nil
	}
}
