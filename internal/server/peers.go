package server

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/metadata"
	"gregor/internal/rpc"
)

// peerConns is how many connections a broker keeps to each other broker
// for broker-to-broker requests (transaction verification): requests on one
// connection go one at a time.
const peerConns = 4

// peers sends requests to other brokers' inter-broker listeners
// (handlers.Peers), over a few connections per broker, dialled on first use
// and closed with the server.
type peers struct {
	nodeID   int32
	listener string
	security rpc.Security
	image    func() *metadata.Image

	mu      sync.Mutex
	clients map[string][]*rpc.Client
	next    atomic.Uint32
	closed  bool
}

func newPeers(nodeID int32, listener string, sec rpc.Security, image func() *metadata.Image) *peers {
	return &peers{nodeID: nodeID, listener: listener, security: sec, image: image, clients: map[string][]*rpc.Client{}}
}

// Request implements handlers.Peers.
func (p *peers) Request(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error) {
	b := p.image().Brokers[broker]
	if b == nil {
		return nil, fmt.Errorf("broker %d is not registered", broker)
	}
	ep, ok := b.Listener(p.listener)
	if !ok {
		return nil, fmt.Errorf("broker %d has no %s listener", broker, p.listener)
	}
	addr := ep.Host + ":" + strconv.Itoa(ep.Port)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, fmt.Errorf("shutting down")
	}
	cs := p.clients[addr]
	if cs == nil {
		for range peerConns {
			cs = append(cs, rpc.NewClient(addr, "gregor-broker-"+strconv.Itoa(int(p.nodeID)), p.security))
		}
		p.clients[addr] = cs
	}
	p.mu.Unlock()
	return cs[p.next.Add(1)%peerConns].Request(ctx, req)
}

// Close closes every connection.
func (p *peers) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, cs := range p.clients {
		for _, c := range cs {
			c.Close()
		}
	}
}
