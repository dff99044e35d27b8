package network

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"sync"
	"time"
)

// Connection limits, as Kafka's ConnectionQuotas applies them (KIP-402,
// KIP-612):
//
//   - max.connections (broker-wide) and listener.name.<l>.max.connections:
//     when either is reached the listener's accept loop stops accepting
//     until a connection closes. The inter-broker listener is protected
//     (when the server has other listeners): only its own listener limit
//     holds it, and when it takes the broker over max.connections the
//     least recently active connection of another listener is closed.
//   - max.connections.per.ip and max.connections.per.ip.overrides: a
//     connection over its address's limit is closed at once.
//   - max.connection.creation.rate (broker-wide, not applied to the
//     protected inter-broker listener) and per listener: the accept loop
//     waits before admitting a connection that would exceed the rate.
//   - connection_creation_rate client quotas of ip entities (KIP-612; a
//     quota of the address, else the default ip entity's): a connection
//     over its address's rate is not served and is closed once the
//     throttle time has passed, so the client does not retry at once. The
//     accept loop does not wait: other addresses are admitted meanwhile.
//
// connectionQuotas is the deciding core: no locks, no clock of its own.
// The Server holds quotaMu around every call and owns the waiting.

// Unlimited is the value of a limit that does not limit (Kafka's default
// Int.MaxValue).
const Unlimited = math.MaxInt

// ConnectionLimits are the connection quotas of a Server. Every limit is a
// count (or a count per second for rates); Unlimited disables it.
type ConnectionLimits struct {
	MaxConnections            int                // max.connections
	MaxConnectionsPerIP       int                // max.connections.per.ip
	PerIPOverrides            map[netip.Addr]int // max.connections.per.ip.overrides, resolved
	MaxConnectionCreationRate int                // max.connection.creation.rate, per second
	// Listeners are listener.name.<l>.max.connections and
	// listener.name.<l>.max.connection.creation.rate; a listener missing
	// here is not limited on its own.
	Listeners map[string]ListenerLimits
	// IPCreationRates are the connection_creation_rate quotas of ip
	// entities, per second; the zero Addr keys the default ip entity's,
	// for addresses without their own. An address with neither is not
	// limited; a rate of 0 admits no connection from it.
	IPCreationRates map[netip.Addr]int
}

// ListenerLimits are the limits of one listener.
type ListenerLimits struct {
	MaxConnections            int
	MaxConnectionCreationRate int
}

// NoConnectionLimits returns limits that limit nothing.
func NoConnectionLimits() ConnectionLimits {
	return ConnectionLimits{
		MaxConnections:            Unlimited,
		MaxConnectionsPerIP:       Unlimited,
		MaxConnectionCreationRate: Unlimited,
	}
}

// errTooManyConnections is Kafka's TooManyConnectionsException.
var errTooManyConnections = errors.New("too many connections")

type connectionQuotas struct {
	limits ConnectionLimits
	// protected is the inter-broker listener when it is exempt from the
	// broker-wide limits ("" when there is none, or it is the only one).
	protected string

	total     int
	listeners map[string]int
	perIP     map[netip.Addr]int

	brokerRate   tokenBucket
	listenerRate map[string]*tokenBucket
	// ipRate holds the creation rate of addresses under an ip quota,
	// created at their first connection and dropped once full again (a
	// full bucket is the same as a new one).
	ipRate map[netip.Addr]*tokenBucket
}

func newConnectionQuotas(limits ConnectionLimits, listenerNames []string, interBroker string) *connectionQuotas {
	q := &connectionQuotas{
		listeners:    make(map[string]int),
		perIP:        make(map[netip.Addr]int),
		listenerRate: make(map[string]*tokenBucket),
		ipRate:       make(map[netip.Addr]*tokenBucket),
	}
	for _, name := range listenerNames {
		q.listeners[name] = 0
		q.listenerRate[name] = &tokenBucket{}
	}
	if len(listenerNames) > 1 {
		q.protected = interBroker
	}
	q.setLimits(limits, time.Time{})
	return q
}

// setLimits replaces the limits; counts are kept, so lowering a limit
// below the current count stops new connections without closing any
// (as in Kafka).
func (q *connectionQuotas) setLimits(l ConnectionLimits, now time.Time) {
	q.limits = l
	q.brokerRate.setRate(l.MaxConnectionCreationRate, now)
	for name, b := range q.listenerRate {
		b.setRate(q.listenerLimits(name).MaxConnectionCreationRate, now)
	}
	for ip, b := range q.ipRate {
		if rate := q.ipCreationRate(ip); rate == Unlimited || rate <= 0 {
			delete(q.ipRate, ip)
		} else {
			b.setRate(rate, now)
		}
	}
}

// ipCreationRate is the connection_creation_rate quota of an address.
func (q *connectionQuotas) ipCreationRate(ip netip.Addr) int {
	if rate, ok := q.limits.IPCreationRates[ip]; ok {
		return rate
	}
	if rate, ok := q.limits.IPCreationRates[netip.Addr{}]; ok {
		return rate
	}
	return Unlimited
}

// ipThrottle records a connection from ip under its connection_creation_rate
// quota and returns 0, or, when the connection would exceed the quota, how
// long the address must wait (the connection is then not recorded, as in
// Kafka).
func (q *connectionQuotas) ipThrottle(ip netip.Addr, now time.Time) time.Duration {
	rate := q.ipCreationRate(ip)
	switch {
	case rate == Unlimited:
		return 0
	case rate <= 0:
		return ipBlockedThrottle
	}
	b := q.ipRate[ip]
	if b == nil {
		if len(q.ipRate) >= maxIdleIPRates {
			q.dropFullIPRates(now)
		}
		b = &tokenBucket{}
		b.setRate(rate, now)
		q.ipRate[ip] = b
	}
	if wait := b.wait(now); wait > 0 {
		return wait
	}
	b.take(now)
	return 0
}

// ipBlockedThrottle is how long a connection from an address whose
// connection_creation_rate is 0 is held before it is closed: one quota
// window, Kafka's quota.window.size.seconds default.
const ipBlockedThrottle = time.Second

// maxIdleIPRates bounds the per-address buckets kept before full ones are
// dropped, so many addresses connecting once do not grow the map forever.
const maxIdleIPRates = 1024

func (q *connectionQuotas) dropFullIPRates(now time.Time) {
	for ip, b := range q.ipRate {
		b.refill(now)
		if b.tokens >= float64(b.rate) {
			delete(q.ipRate, ip)
		}
	}
}

func (q *connectionQuotas) listenerLimits(name string) ListenerLimits {
	if ll, ok := q.limits.Listeners[name]; ok {
		return ll
	}
	return ListenerLimits{MaxConnections: Unlimited, MaxConnectionCreationRate: Unlimited}
}

// slotAvailable reports whether listener may take another connection
// under max.connections.
func (q *connectionQuotas) slotAvailable(listener string) bool {
	if q.listeners[listener] >= q.listenerLimits(listener).MaxConnections {
		return false
	}
	return listener == q.protected || q.total < q.limits.MaxConnections
}

// creationDelay is how long listener must wait before it may create a
// connection under the creation rates; 0 means now, and the creation is
// recorded.
func (q *connectionQuotas) creationDelay(listener string, now time.Time) time.Duration {
	lb := q.listenerRate[listener]
	wait := lb.wait(now)
	if listener != q.protected {
		wait = max(wait, q.brokerRate.wait(now))
	}
	if wait > 0 {
		return wait
	}
	lb.take(now)
	if listener != q.protected {
		q.brokerRate.take(now)
	}
	return 0
}

// open counts a new connection, or refuses it when its address is at its
// max.connections.per.ip.
func (q *connectionQuotas) open(listener string, ip netip.Addr) error {
	limit := q.limits.MaxConnectionsPerIP
	if n, ok := q.limits.PerIPOverrides[ip]; ok {
		limit = n
	}
	if q.perIP[ip] >= limit {
		return fmt.Errorf("%w from %s (maximum is %d)", errTooManyConnections, ip, limit)
	}
	q.perIP[ip]++
	q.listeners[listener]++
	q.total++
	return nil
}

func (q *connectionQuotas) close(listener string, ip netip.Addr) {
	if q.perIP[ip]--; q.perIP[ip] <= 0 {
		delete(q.perIP, ip)
	}
	q.listeners[listener]--
	q.total--
}

// brokerFull reports whether the broker-wide max.connections is reached:
// only the protected inter-broker listener may still admit a connection.
func (q *connectionQuotas) brokerFull() bool {
	return q.total >= q.limits.MaxConnections
}

// overBrokerLimit reports whether the protected listener has taken the
// broker past max.connections, so a connection of another listener must go.
func (q *connectionQuotas) overBrokerLimit() bool {
	return q.total > q.limits.MaxConnections
}

// tokenBucket bounds creations to rate per second with bursts of up to one
// second's worth (Kafka measures the rate over its quota window, which
// admits a burst too). A rate of Unlimited (or <= 0) never waits.
type tokenBucket struct {
	rate   int
	tokens float64
	last   time.Time
}

func (b *tokenBucket) unlimited() bool { return b.rate <= 0 || b.rate == Unlimited }

func (b *tokenBucket) setRate(rate int, now time.Time) {
	if rate == b.rate {
		return
	}
	b.rate, b.tokens, b.last = rate, float64(rate), now
}

func (b *tokenBucket) refill(now time.Time) {
	if b.last.IsZero() || now.Before(b.last) {
		b.last = now
		return
	}
	b.tokens = min(float64(b.rate), b.tokens+now.Sub(b.last).Seconds()*float64(b.rate))
	b.last = now
}

// wait is how long until a token is available.
func (b *tokenBucket) wait(now time.Time) time.Duration {
	if b.unlimited() {
		return 0
	}
	b.refill(now)
	if b.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - b.tokens) / float64(b.rate) * float64(time.Second))
}

func (b *tokenBucket) take(now time.Time) {
	if b.unlimited() {
		return
	}
	b.refill(now)
	b.tokens--
}

// requestBytes is queued.max.request.bytes: the bytes of requests read and
// not yet handed off by their handler. It is Kafka's non-strict memory
// pool: a frame may be read while the pool is not exhausted, even if it
// does not fit, so the bytes held stay below capacity plus one frame, a
// frame larger than the whole pool still gets through, and a large frame
// cannot be starved by a stream of small ones. A capacity <= 0 is unbounded.
type requestBytes struct {
	capacity int64

	mu    sync.Mutex
	used  int64
	freed chan struct{} // closed and replaced when bytes are given back
}

func newRequestBytes(capacity int64) *requestBytes {
	return &requestBytes{capacity: capacity, freed: make(chan struct{})}
}

// acquire takes n bytes once the pool is not exhausted; false if stop
// closed first.
func (p *requestBytes) acquire(n int64, stop <-chan struct{}) bool {
	if p.capacity <= 0 {
		return true
	}
	for {
		p.mu.Lock()
		if p.used < p.capacity {
			p.used += n
			p.mu.Unlock()
			return true
		}
		freed := p.freed
		p.mu.Unlock()
		select {
		case <-freed:
		case <-stop:
			return false
		}
	}
}

func (p *requestBytes) release(n int64) {
	if p.capacity <= 0 {
		return
	}
	p.mu.Lock()
	p.used -= n
	close(p.freed)
	p.freed = make(chan struct{})
	p.mu.Unlock()
}

// inUse is the bytes held (tests).
func (p *requestBytes) inUse() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.used
}
