package handlers

// Client quotas (KIP-13, KIP-124, KIP-219, KIP-599), applied to requests
// of broker listeners as Kafka's KafkaApis and RequestHandlerHelper apply
// them. Each request's client is its principal's name (the user) and its
// header's client id.
//
//   - request_percentage: every request records the time it was handled,
//     as a percentage of a second, up to where it starts to wait (for
//     replication, for data, for a group, for the controller; Kafka counts
//     its request thread's time, and the waits happen off that thread).
//     Exempt, as in Kafka: the node-to-node APIs (WriteTxnMarkers and the
//     other cluster actions), fetches of follower brokers, and produce with
//     acks=0.
//   - producer_byte_rate: a produce request's size, recorded once it is
//     answered; over the quota its records are still appended.
//   - consumer_byte_rate: a consumer fetch's response size (the record
//     bytes sent from the segment files included). A fetch is capped to
//     what the quota allows over its window, and a fetch found over a
//     quota (this one or the request quota) is answered empty, its bytes
//     not counted, so the client fetches them again once throttled.
//     Followers are not client-quota'd (Kafka's replication quotas are
//     separate, and not implemented).
//   - controller_mutation_rate: partitions created (CreateTopics,
//     CreatePartitions) or deleted (DeleteTopics), per topic. From
//     CreateTopics v6, CreatePartitions v3 and DeleteTopics v5 on the
//     quota is strict: once the client's token bucket is empty, the topics
//     get THROTTLING_QUOTA_EXCEEDED and the response a throttle time;
//     older versions are permissive (done, then throttled). Kafka applies
//     this quota at the controller, after validating each topic; Gregor's
//     controller does not learn the client (there is no Envelope), so the
//     broker the client asked applies it: before forwarding for a strict
//     quota, giving back the partitions of topics the controller then
//     refused, and after the answer for a permissive one.
//
// The response's throttle_time_ms is the longest of the throttles; the
// quota that gave it records it in its throttle-time metric (the request
// quota on a tie). The connection is then muted for that long
// (network.Request.Throttle). Requests on the controller listener are not
// client-quota'd: those forwarded by brokers were by the broker.

import (
	"context"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/network"
	"gregor/internal/quota"
)

// quotaExempt are the APIs Kafka never throttles: cluster actions,
// requests between nodes.
var quotaExempt = map[int16]bool{
	int16(kmsg.LeaderAndISR): true, int16(kmsg.StopReplica): true, int16(kmsg.UpdateMetadata): true,
	int16(kmsg.ControlledShutdown): true, int16(kmsg.WriteTxnMarkers): true,
	int16(kmsg.Vote): true, int16(kmsg.BeginQuorumEpoch): true, int16(kmsg.EndQuorumEpoch): true,
	int16(kmsg.AlterPartition): true, int16(kmsg.Envelope): true,
	int16(kmsg.BrokerRegistration): true, int16(kmsg.BrokerHeartbeat): true,
	int16(kmsg.AllocateProducerIDs): true,
}

// requestQuota is one request's dealings with the client quotas. It is
// used by the request's handler goroutine.
type requestQuota struct {
	q              *quota.Managers
	req            *network.Request
	user, clientID string
	started        time.Time

	recorded        bool          // the request time was recorded
	requestThrottle time.Duration // the request quota's throttle
	decided         bool          // throttle is final
	throttle        time.Duration
}

type requestQuotaKey struct{}

// newRequestQuota returns the quota dealings of req, nil when no quota
// applies to it.
func (h *Handlers) newRequestQuota(req *network.Request) *requestQuota {
	if h.d.Quotas == nil || h.controllerListener || quotaExempt[req.Header.APIKey] || !h.d.Quotas.Enabled() {
		return nil
	}
	if f, ok := req.Body.(*kmsg.FetchRequest); ok && fetchReplicaID(f) >= 0 {
		return nil // a follower
	}
	rq := &requestQuota{q: h.d.Quotas, req: req, user: req.Principal.Name, started: time.Now()}
	if id := req.Header.ClientID; id != nil {
		rq.clientID = *id
	}
	return rq
}

// requestKey carries the request a handler's ctx belongs to.
type requestKey struct{}

// startWaiting marks where the request of ctx stops working and starts to
// wait (network.Request.StartWaiting).
func startWaiting(ctx context.Context) {
	if req, _ := ctx.Value(requestKey{}).(*network.Request); req != nil {
		req.StartWaiting()
	}
}

func withRequestQuota(ctx context.Context, rq *requestQuota) context.Context {
	return context.WithValue(ctx, requestQuotaKey{}, rq)
}

// requestQuotaOf is the quota dealings of the request ctx belongs to (nil
// for none).
func requestQuotaOf(ctx context.Context) *requestQuota {
	rq, _ := ctx.Value(requestQuotaKey{}).(*requestQuota)
	return rq
}

// requestTime records the request's handling time against
// request_percentage (once) and returns the request quota's throttle.
func (rq *requestQuota) requestTime() time.Duration {
	if rq.recorded {
		return rq.requestThrottle
	}
	rq.recorded = true
	// The time the request quota counts ends where the handler started
	// to wait (network.Request.StartWaiting).
	end, waiting := rq.req.WaitingSince()
	if !waiting {
		end = time.Now()
	}
	percentSeconds := float64(max(end.Sub(rq.started), 0).Nanoseconds()) * 100 / float64(time.Second)
	rq.requestThrottle = rq.q.Request.Record(rq.user, rq.clientID, percentSeconds)
	return rq.requestThrottle
}

// throttleWith makes the request's throttle the larger of t, from quota m,
// and rt, the request quota's (which wins a tie), and records it in that
// quota's throttle-time metric.
func (rq *requestQuota) throttleWith(t time.Duration, m *quota.Manager, rt time.Duration) {
	rq.decided = true
	if t > rt {
		rq.throttle = t
		m.RecordThrottle(rq.user, rq.clientID, t)
		return
	}
	rq.throttle = rt
	rq.q.Request.RecordThrottle(rq.user, rq.clientID, rt)
}

// finish throttles the request by the request quota if the handler did not
// decide otherwise, and sets the response's throttle_time_ms (the larger
// of it and one the controller answered) and the connection's mute.
func (rq *requestQuota) finish(resp kmsg.Response) {
	if !rq.decided {
		rq.throttleWith(0, nil, rq.requestTime())
	}
	if rq.throttle <= 0 {
		return
	}
	rq.req.Throttle = rq.throttle
	tr, ok := resp.(interface {
		kmsg.ThrottleResponse
		kmsg.SetThrottleResponse
	})
	if ok {
		ms, _ := tr.Throttle()
		tr.SetThrottle(max(ms, int32(rq.throttle.Milliseconds())))
	}
}

// recordProduce applies producer_byte_rate and, unless acks=0,
// request_percentage to a produce request.
func (rq *requestQuota) recordProduce(acks int16) {
	bytes := rq.q.Produce.Record(rq.user, rq.clientID, float64(rq.req.Size))
	var rt time.Duration
	if acks != 0 {
		rt = rq.requestTime()
	}
	rq.throttleWith(bytes, rq.q.Produce, rt)
}

// fetchMaxBytes is the most a consumer's fetch may return: what its
// consumer_byte_rate allows over the quota window (Kafka caps the fetch so
// that its size alone never earns a throttle); MaxInt32 without a quota.
func (rq *requestQuota) fetchMaxBytes() int32 {
	return int32(min(rq.q.Fetch.MaxValueInWindow(rq.user, rq.clientID), math.MaxInt32))
}

// capFetch caps a consumer's fetch to fetchMaxBytes (its min bytes too).
func (rq *requestQuota) capFetch(r *kmsg.FetchRequest) *kmsg.FetchRequest {
	limit := rq.fetchMaxBytes()
	if limit == math.MaxInt32 || (r.MaxBytes > 0 && r.MaxBytes <= limit) {
		return r
	}
	capped := *r
	// At least a byte: 0 would read as no limit. The first batch is
	// returned whatever the limit, so the consumer still progresses.
	capped.MaxBytes = max(limit, 1)
	capped.MinBytes = min(capped.MinBytes, capped.MaxBytes)
	return &capped
}

// throttleFetch applies request_percentage and consumer_byte_rate to a
// consumer's fetch answer. Over either quota the answer is replaced by an
// empty one and its bytes are not counted (Kafka's throttled fetch
// response); the records are read again by the next fetch.
func (rq *requestQuota) throttleFetch(resp *fetchResponse) *fetchResponse {
	rt := rq.requestTime()
	size := 0
	if rq.q.Fetch.Enabled() {
		size = fetchResponseSize(resp)
	}
	bytes := rq.q.Fetch.Record(rq.user, rq.clientID, float64(size))
	rq.throttleWith(bytes, rq.q.Fetch, rt)
	if rq.throttle <= 0 {
		return resp
	}
	rq.q.Fetch.Unrecord(rq.user, rq.clientID, float64(size))
	resp.Release()
	empty := &fetchResponse{FetchResponse: kmsg.NewPtrFetchResponse()}
	empty.Version = resp.Version
	return empty
}

// fetchResponseSize is the size of a fetch response on the wire, its
// header and file ranges included.
func fetchResponseSize(resp *fetchResponse) int {
	var f network.Frame
	appendFetchResponse(&f, resp.FetchResponse, resp.fileRanges())
	size := 4 + len(f.Buf) // correlation id
	if resp.IsFlexible() {
		size++ // no header tags
	}
	for _, h := range f.Holes {
		size += int(h.Size)
	}
	return size
}

// mutations applies controller_mutation_rate to the topics of one admin
// request. The nil *mutations applies nothing.
type mutations struct {
	rq     *requestQuota
	q      *quota.MutationQuota
	strict bool
}

// mutationQuota returns the controller mutation quota of an admin request
// whose version strictSince and later are strict; nil when no such quota
// is set.
func (h *Handlers) mutationQuota(ctx context.Context, req *network.Request, strictSince int16) *mutations {
	rq := requestQuotaOf(ctx)
	if rq == nil {
		return nil
	}
	strict := req.Header.APIVersion >= strictSince
	q := rq.q.ControllerMutation.MutationQuota(rq.user, rq.clientID, strict)
	if q == nil {
		return nil
	}
	return &mutations{rq: rq, q: q, strict: strict}
}

// admit is asked before the controller is, for a topic that would create
// or delete permits partitions: false when a strict quota refuses it
// (THROTTLING_QUOTA_EXCEEDED). A strict quota takes the permits now.
func (m *mutations) admit(permits int) bool {
	if m == nil || !m.strict || permits <= 0 {
		return true
	}
	return m.q.Record(float64(permits)) == nil
}

// settle is told, for an admitted topic, whether the controller did it:
// a strict quota gives back the permits of a refused topic, a permissive
// one takes those of a done topic.
func (m *mutations) settle(permits int, done bool) {
	if m == nil || permits <= 0 {
		return
	}
	switch {
	case m.strict && !done:
		m.q.Unrecord(float64(permits))
	case !m.strict && done:
		_ = m.q.Record(float64(permits)) // a permissive quota never refuses
	}
}

// finish throttles the request by the larger of the mutation quota's
// throttle and the request quota's.
func (m *mutations) finish() {
	if m == nil {
		return
	}
	m.rq.throttleWith(m.q.Throttle(), m.rq.q.ControllerMutation, m.rq.requestTime())
}

// throttledTopicMessage is THROTTLING_QUOTA_EXCEEDED's message, as Kafka
// answers it per topic.
const throttledTopicMessage = "The throttling quota has been exceeded."
