package network

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/auth"
	"gregor/internal/rpc"
)

// apiVersionsKey is ApiVersions' API key. It is special on the wire twice: an
// unsupported version is still answered (KIP-511), and its response always
// uses response header v0 so that a client that does not yet know the
// broker's versions can parse it.
const apiVersionsKey = 18

// produceKey is Produce's API key: its frames go back to the frame pool
// once handled (frame_pool.go).
const produceKey = 0

// controlledShutdownKey is ControlledShutdown's API key; its v0 request uses
// request header v0 (no client id).
const controlledShutdownKey = 7

// RequestHeader is Kafka's request header (v0, v1 or v2; the version is implied
// by the API key and version).
type RequestHeader struct {
	APIKey        int16
	APIVersion    int16
	CorrelationID int32
	ClientID      *string
}

// Request is one decoded request together with where it came from.
type Request struct {
	Header RequestHeader
	// Body is decoded at Header.APIVersion (version set), except for an
	// unsupported ApiVersions request (see UnsupportedVersion).
	Body     kmsg.Request
	Listener string // listener name, e.g. "PLAINTEXT"
	// SecurityProtocol is the listener's protocol (PLAINTEXT, SSL,
	// SASL_PLAINTEXT, SASL_SSL).
	SecurityProtocol string
	// Principal is who the connection authenticated as: User:ANONYMOUS on
	// PLAINTEXT (and SSL without a client certificate), the SASL user, or
	// the client certificate's mapped subject.
	Principal  auth.Principal
	ClientAddr net.Addr // remote address of the connection
	ConnID     string   // Kafka-style "local-remote-index"
	Size       int      // frame size in bytes (without the 4-byte size prefix)
	ReceivedAt time.Time
	// UnsupportedVersion is set only for an ApiVersions request whose version
	// is outside the served range (KIP-511): the body was not decoded, Body is
	// an ApiVersionsRequest v0, and the handler answers with a v0 response
	// carrying UNSUPPORTED_VERSION and the supported ranges.
	UnsupportedVersion bool
	// Throttle is how long the client is to be throttled after this
	// request for exceeding a client quota; the handler sets it. The
	// connection then reads no new request for that long (KIP-219). A
	// response carrying throttle_time_ms is throttled for the larger of
	// the two, so a handler need set this only when there is no response
	// (acks=0 produce). See conn.go for how versions that predate
	// KIP-219 are throttled.
	Throttle time.Duration
	// PeerClosed is closed when the peer closes or resets the connection
	// the request came on (the reader sees EOF or RST): the peer's process
	// ended or closed it on purpose. It is never closed when this side
	// closes the connection (idle timeout, shutdown, a bad request) or when
	// the peer merely goes silent. Nil for a request that came on no
	// connection (in process).
	PeerClosed <-chan struct{}

	// dispatched is closed when the request no longer holds up the next
	// request of its connection (see Dispatched).
	dispatched     chan struct{}
	dispatchedOnce sync.Once
	// releaseQueued gives back the broker-wide queued.max.requests slot
	// the request took when read (nil in tests); queuedOnce runs it once.
	releaseQueued func()
	queuedOnce    sync.Once
	// recycle is the frame the request was decoded from when it goes back
	// to the server's frame pool once handled (a Produce frame), else nil.
	recycle []byte
	// waitingAt is when the handler started to wait (StartWaiting);
	// UnixNano, 0 while it has not.
	waitingAt atomic.Int64
	// parking is the server's count of parked requests (nil: no limit,
	// a request made in process); parked is set while this request holds
	// one of its places.
	parking *parkedRequests
	parked  atomic.Bool
}

// Park takes one of the broker's places for requests that wait in a
// purgatory (DefaultMaxParkedRequests), before the handler waits; the place
// is given back when the handler returns. It is false when every place is
// taken: the handler then answers at once with what it has instead of
// waiting (a long-poll fetch returns its empty read, which Kafka allows at
// any time). With the per-connection in-flight limit, this bounds the
// goroutines and purgatory entries that clients can make the broker hold.
// Calling it again while the place is held returns true.
func (r *Request) Park() bool {
	if r.parking == nil || r.parked.Load() {
		return true
	}
	if !r.parking.take() {
		return false
	}
	r.parked.Store(true)
	return true
}

// unpark gives back the request's parked place, if it holds one.
func (r *Request) unpark() {
	if r.parked.CompareAndSwap(true, false) {
		r.parking.give()
	}
}

// DefaultMaxParkedRequests is how many requests may wait in purgatories at
// once across a socket server (long-poll fetches of consumers; a parked
// request holds a goroutine and its purgatory entry, a few KiB). Past it a
// consumer's fetch is answered at once.
const DefaultMaxParkedRequests = 20000

// parkedRequests counts the requests holding a parked place.
type parkedRequests struct {
	limit int64
	n     atomic.Int64
}

func (p *parkedRequests) take() bool {
	for {
		n := p.n.Load()
		if n >= p.limit {
			return false
		}
		if p.n.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (p *parkedRequests) give() { p.n.Add(-1) }

// StartWaiting marks where the handler stops working and starts to wait for
// something outside it: an acks=all produce for its replication, a fetch
// for data, a group member for its rebalance. Kafka's LocalTimeMs of the
// request ends there and its RemoteTimeMs begins; the request quota charges
// only the time before. The first mark counts.
func (r *Request) StartWaiting() { r.waitingAt.CompareAndSwap(0, time.Now().UnixNano()) }

// WaitingSince is when the handler first called StartWaiting; ok is false
// if it never did.
func (r *Request) WaitingSince() (at time.Time, ok bool) {
	w := r.waitingAt.Load()
	if w == 0 {
		return time.Time{}, false
	}
	return time.Unix(0, w), true
}

// Dispatched lets the connection start its next request while this one is
// still being handled. Requests of a connection are dispatched in order, as
// Kafka processes them: the next request's Handle starts only once the
// previous one has returned or called Dispatched. A handler whose effects
// must not race with later requests of the same connection (produce appends)
// simply never calls it; one that waits without effects (a long-polling
// fetch) calls it first, so later requests are not stuck behind the wait.
// Responses leave in request order either way. A dispatched request also
// gives back its broker-wide queued.max.requests slot: a request parked in
// a purgatory is no longer queued for handling (as in Kafka, where the
// slots bound the queue in front of the request handlers), so a thousand
// idle long polls do not stop the broker from reading other requests. The
// per-connection in-flight limit still holds it.
func (r *Request) Dispatched() {
	if r.dispatched == nil {
		return
	}
	r.dispatchedOnce.Do(func() {
		close(r.dispatched)
		r.releaseQueuedSlot()
	})
}

// releaseQueuedSlot gives back the request's queued.max.requests slot, if
// not yet.
func (r *Request) releaseQueuedSlot() {
	if r.releaseQueued != nil {
		r.queuedOnce.Do(r.releaseQueued)
	}
}

// Handler processes decoded requests. It is called concurrently for
// requests of different connections; within a connection, a request starts
// only after the previous one returned or called Request.Dispatched.
type Handler interface {
	// VersionRange reports the versions served for an API key; ok=false for
	// keys not served.
	VersionRange(key int16) (min, max int16, ok bool)
	// Handle returns the response to send (its version is set to the request
	// version by the server), or nil to send nothing (produce acks=0).
	// A non-nil error closes the connection (after logging). ctx is cancelled
	// when the connection closes or the server is shut down hard. A response
	// that implements FileResponse is sent with its file ranges and released
	// once written or dropped, also when Handle returns it with an error.
	Handle(ctx context.Context, req *Request) (kmsg.Response, error)
}

// Decode errors. The server closes the connection on any of them, as Kafka
// does on InvalidRequestException.
var (
	ErrUnknownAPIKey      = errors.New("unknown api key")
	ErrUnsupportedVersion = errors.New("unsupported api version")
	ErrMalformedRequest   = errors.New("malformed request")
)

// DecodeRequest decodes one request frame (the bytes after the 4-byte size
// prefix). versions reports the served version range of an API key. Only
// Header, Body, Size and UnsupportedVersion are set in the result. It never
// panics, whatever the input.
//
// Header versions follow Kafka: v2 (v1 plus tagged fields) when the request
// version is flexible, v1 otherwise, v0 for ControlledShutdown v0. The client
// id is a classic (non-compact) nullable string even in header v2.
func DecodeRequest(frame []byte, versions func(key int16) (min, max int16, ok bool)) (req *Request, err error) {
	return decodeRequest(frame, versions, nil)
}

// ExtraRequests is implemented by a Handler that also serves requests kmsg
// does not know: Gregor's own node-to-node APIs, such as Raft messages
// between controllers. NewRequest returns an empty request for a key, or nil.
type ExtraRequests interface {
	NewRequest(key int16) kmsg.Request
}

func decodeRequest(frame []byte, versions func(key int16) (min, max int16, ok bool), extra ExtraRequests) (req *Request, err error) {
	defer func() {
		// kmsg readers are bounds-checked, but a decoder of outside bytes
		// must never take the process down.
		if r := recover(); r != nil {
			req, err = nil, fmt.Errorf("%w: decoder panic: %v", ErrMalformedRequest, r)
		}
	}()
	if len(frame) < 8 {
		return nil, fmt.Errorf("%w: frame of %d bytes is shorter than a request header", ErrMalformedRequest, len(frame))
	}
	h := RequestHeader{
		APIKey:        int16(binary.BigEndian.Uint16(frame[0:])),
		APIVersion:    int16(binary.BigEndian.Uint16(frame[2:])),
		CorrelationID: int32(binary.BigEndian.Uint32(frame[4:])),
	}
	body := kmsg.RequestForKey(h.APIKey)
	if body == nil && extra != nil {
		body = extra.NewRequest(h.APIKey)
	}
	if body == nil {
		return nil, fmt.Errorf("%w %d", ErrUnknownAPIKey, h.APIKey)
	}
	minV, maxV, ok := versions(h.APIKey)
	if !ok {
		return nil, fmt.Errorf("%w %d (%s): not served", ErrUnknownAPIKey, h.APIKey, kmsg.NameForKey(h.APIKey))
	}
	unsupported := h.APIVersion < minV || h.APIVersion > maxV
	if unsupported && h.APIKey != apiVersionsKey {
		return nil, fmt.Errorf("%w: %s v%d (served v%d-v%d)", ErrUnsupportedVersion,
			kmsg.NameForKey(h.APIKey), h.APIVersion, minV, maxV)
	}
	// kmsg knows per version whether a message is flexible; that decides the
	// header version too (also for an ApiVersions version above ours, whose
	// header Kafka parses as v2 when the version is >= 3).
	body.SetVersion(h.APIVersion)
	rest := frame[8:]
	if !(h.APIKey == controlledShutdownKey && h.APIVersion == 0) {
		if h.ClientID, rest, err = readClientID(rest); err != nil {
			return nil, err
		}
		if body.IsFlexible() {
			if rest, err = skipTags(rest); err != nil {
				return nil, fmt.Errorf("request header tags: %w", err)
			}
		}
	}
	req = &Request{Header: h, Size: len(frame)}
	if unsupported {
		// KIP-511: do not parse a body we do not know; answer with v0.
		req.Body = &kmsg.ApiVersionsRequest{Version: 0}
		req.UnsupportedVersion = true
		return req, nil
	}
	if err := body.ReadFrom(rest); err != nil {
		return nil, fmt.Errorf("%w: %s v%d body: %v", ErrMalformedRequest,
			kmsg.NameForKey(h.APIKey), h.APIVersion, err)
	}
	req.Body = body
	return req, nil
}

// readClientID reads the header's nullable string (int16 length, -1 = null).
func readClientID(b []byte) (*string, []byte, error) {
	if len(b) < 2 {
		return nil, nil, fmt.Errorf("%w: truncated client id", ErrMalformedRequest)
	}
	n := int(int16(binary.BigEndian.Uint16(b)))
	b = b[2:]
	switch {
	case n == -1:
		return nil, b, nil
	case n < 0 || n > len(b):
		return nil, nil, fmt.Errorf("%w: client id length %d with %d bytes left", ErrMalformedRequest, n, len(b))
	}
	s := string(b[:n])
	return &s, b[n:], nil
}

// skipTags skips a tagged-field section (KIP-482): a count, then per field a
// tag, a size and that many bytes. The header defines no tags we use.
func skipTags(b []byte) ([]byte, error) {
	rest, err := rpc.SkipTags(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformedRequest, err)
	}
	return rest, nil
}

// encodeResponse frames a response: size, response header, body. The header
// is v1 (correlation id + empty tagged fields) when the response version is
// flexible, v0 otherwise; ApiVersions always uses v0.
func encodeResponse(correlationID int32, resp kmsg.Response) []byte {
	buf := make([]byte, 8, 128)
	binary.BigEndian.PutUint32(buf[4:], uint32(correlationID))
	if resp.IsFlexible() && resp.Key() != apiVersionsKey {
		buf = append(buf, 0) // no header tags
	}
	buf = resp.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	return buf
}
