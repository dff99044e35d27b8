package handlers

// ShareFetch (key 78), v1-2 (v0 was Kafka 4.0's early access, removed in
// 4.1). A share group member (KIP-932) fetches through its share session on
// this broker (internal/share: epoch 0 opens it with the partitions named,
// later epochs add and forget partitions, -1 closes it and releases the
// member's records; SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH,
// SHARE_SESSION_LIMIT_REACHED at the top level). Piggy-backed
// acknowledgements are applied first (an opening request may carry none:
// INVALID_REQUEST), each partition's result in AcknowledgeErrorCode
// (INVALID_RECORD_STATE for records not acquired by the member). Then each
// session partition this broker leads hands the member up to MaxRecords
// records in all (whole batches; exactly MaxRecords with v2's record-limit
// ShareAcquireMode), reading at most MaxBytes, with their AcquiredRecords
// and the batches holding them. With nothing acquired the request waits up
// to MaxWait, woken by appends to its partitions (the Fetch purgatory, as
// 01_fetch.go parks) or by records of its group released or timed out.
// Unlike Kafka, which waits for MinBytes before it acquires anything,
// records once acquired are answered at once: holding them would spend
// their acquisition lock. v2's IsRenewAck request only acknowledges
// (RENEW allowed), and must carry no fetch limits (INVALID_REQUEST).
// The response's AcquisitionLockTimeoutMillis is the group's
// share.record.lock.duration.ms. A partition this broker does not lead is
// answered NOT_LEADER_OR_FOLLOWER with the current leader from the image,
// and the leader's endpoint in NodeEndpoints.
//
// Client quotas (quotas.go): consumer_byte_rate caps MaxBytes and, with
// request_percentage, throttles the client by the answer's size; the
// answer keeps the records it acquired (Kafka answers a throttled share
// fetch empty, which leaves them locked until their lock ends).
//
// Authorization (Kafka's): READ on the group (GROUP_AUTHORIZATION_FAILED
// for the whole request), READ on each topic (TOPIC_AUTHORIZATION_FAILED
// for its partitions, after UNKNOWN_TOPIC_ID for an unknown id).
//
// While share.version is 0 the request is answered UNSUPPORTED_VERSION (features.go),
// as Kafka answers it.

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/network"
	"gregor/internal/purgatory"
	"gregor/internal/replica"
	"gregor/internal/share"
)

var shareFetchAPI = api{key: 78, min: 1, max: 2, handle: (*Handlers).shareFetch, needs: hasShares}

// hasShares tells whether share groups are on: the share-partition
// leader and the state persister both wired (the share APIs are
// advertised only then).
func hasShares(d *Deps) bool { return d.Shares != nil && d.SharePersister != nil }

// defaultShareMaxRecords is the acquisition limit of a request that sets
// none (MaxRecords <= 0): the share consumer's max.poll.records default.
const defaultShareMaxRecords = 500

// shareTarget is one partition of a share request resolved against the
// image: its name, or the error that answers it.
type shareTarget struct {
	tp  share.TopicPartition
	err error
}

// releaseClosedSession releases the records a member acquired in the
// partitions of the share session it closed (epoch -1, in ShareFetch or
// ShareAcknowledge): another member may have them at once.
func (h *Handlers) releaseClosedSession(ctx context.Context, req *network.Request, group, member string, session []share.SessionPartition) {
	var tps []share.TopicPartition
	for _, t := range h.shareTargets(ctx, req, session) {
		if t.err == nil {
			tps = append(tps, t.tp)
		}
	}
	if err := h.d.Shares.ReleasePartitions(ctx, group, member, tps); err != nil {
		h.d.Logger.Warn("share session closed; records not released until their locks end", "group", group, "err", err)
	}
}

// shareTargets resolves topic ids to names and checks READ on each topic.
func (h *Handlers) shareTargets(ctx context.Context, req *network.Request, parts []share.SessionPartition) []shareTarget {
	img := h.image()
	out := make([]shareTarget, len(parts))
	var names []string
	for i, p := range parts {
		out[i].tp = share.TopicPartition{TopicID: p.TopicID, Partition: p.Partition}
		if t := img.Topics.TopicByID(p.TopicID); t != nil {
			out[i].tp.Topic = t.Name
			names = append(names, t.Name)
		} else {
			out[i].err = kerr.UnknownTopicID
		}
	}
	if h.d.Authorizer != nil {
		allowed := h.authorizedTopics(ctx, req, kmsg.ACLOperationRead, names)
		for i := range out {
			if out[i].err == nil && !allowed[out[i].tp.Topic] {
				out[i].err = kerr.TopicAuthorizationFailed
			}
		}
	}
	return out
}

// currentLeader is the image's leader and leader epoch of a partition
// (-1, -1 when unknown), for answers of NOT_LEADER_OR_FOLLOWER.
func (h *Handlers) currentLeader(tp share.TopicPartition) (int32, int32) {
	if t := h.image().Topics.TopicByID(tp.TopicID); t != nil {
		if p := t.Partition(tp.Partition); p != nil {
			return p.Leader, p.LeaderEpoch
		}
	}
	return -1, -1
}

// shareLeaderEndpoint is a leader named by a NOT_LEADER_OR_FOLLOWER
// answer, with its endpoint for the request's listener.
type shareLeaderEndpoint struct {
	id   int32
	host string
	port int32
	rack *string
}

// shareLeaderEndpoints are the endpoints, on the request's listener, of the
// brokers named as current leaders: Kafka's NodeEndpoints, so that the
// client reaches a new leader without a metadata request.
func (h *Handlers) shareLeaderEndpoints(req *network.Request, leaders []int32) []shareLeaderEndpoint {
	img := h.image()
	var out []shareLeaderEndpoint
	seen := map[int32]bool{}
	for _, id := range leaders {
		if id < 0 || seen[id] {
			continue
		}
		seen[id] = true
		b, ok := img.Brokers[id]
		if !ok || b.Fenced {
			continue
		}
		if ep, ok := b.Listener(req.Listener); ok {
			out = append(out, shareLeaderEndpoint{id: id, host: ep.Host, port: int32(ep.Port), rack: b.Rack})
		}
	}
	return out
}

// shareAckBatches converts a request's acknowledgement batches.
func shareAckBatches[B kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch | kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch](in []B) []share.AckBatch {
	out := make([]share.AckBatch, len(in))
	for i, b := range in {
		var first, last int64
		var types []int8
		switch b := any(b).(type) {
		case kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch:
			first, last, types = b.FirstOffset, b.LastOffset, b.AcknowledgeTypes
		case kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch:
			first, last, types = b.FirstOffset, b.LastOffset, b.AcknowledgeTypes
		}
		out[i] = share.AckBatch{FirstOffset: first, LastOffset: last, Types: make([]share.AckType, len(types))}
		for j, t := range types {
			out[i].Types[j] = share.AckType(t)
		}
	}
	return out
}

// shareAcknowledge applies one partition's acknowledgements.
func (h *Handlers) shareAcknowledge(ctx context.Context, group, member string, t shareTarget, batches []share.AckBatch, renew bool) error {
	if t.err != nil {
		return t.err
	}
	if err := share.ValidateAckBatches(batches, renew); err != nil {
		return err
	}
	return h.d.Shares.Acknowledge(ctx, group, member, t.tp, batches)
}

// shareErrorMessage is a partition's error message (nil without an error),
// which says what went wrong as Kafka's messages do ("offsets 5..5 are
// available, not acquired by this member").
func shareErrorMessage(err error) *string {
	if err == nil {
		return nil
	}
	return kmsg.StringPtr(err.Error())
}

// validShareMember is Kafka's check of a share request's member id: set,
// and no longer than a UUID's text.
func validShareMember(member string) bool { return member != "" && len(member) <= 36 }

func (h *Handlers) shareFetch(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.ShareFetchRequest)
	resp := r.ResponseKind().(*kmsg.ShareFetchResponse)
	if !h.shareGroupsEnabled() {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return resp, nil
	}
	var group, member string
	if r.GroupID != nil {
		group = *r.GroupID
	}
	if r.MemberID != nil {
		member = *r.MemberID
	}
	cfg := h.d.Shares.GroupConfig(group)
	resp.AcquisitionLockTimeoutMillis = int32(cfg.RecordLockDuration.Milliseconds())
	if !h.authorized(ctx, req, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	renew := r.Version >= 2 && r.IsRenewAck
	hasAcks := false
	var requested []share.SessionPartition
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			requested = append(requested, share.SessionPartition{TopicID: t.TopicID, Partition: p.Partition})
			if len(p.AcknowledgementBatches) > 0 {
				hasAcks = true
			} else if renew {
				resp.ErrorCode = kerr.InvalidRequest.Code // a renewal only acknowledges
			}
		}
	}
	if renew && (r.MaxBytes != 0 || r.MinBytes != 0 || r.MaxRecords != 0 || r.MaxWaitMillis != 0) {
		resp.ErrorCode = kerr.InvalidRequest.Code
	}
	if !validShareMember(member) || (r.ShareSessionEpoch == share.InitialEpoch && hasAcks) {
		resp.ErrorCode = kerr.InvalidRequest.Code
	}
	if resp.ErrorCode != 0 {
		return resp, nil
	}

	key := share.SessionKey{Group: group, Member: member}
	now := time.Now()
	var session []share.SessionPartition
	var added map[share.SessionPartition]bool
	var err error
	switch r.ShareSessionEpoch {
	case share.InitialEpoch:
		session = requested
		err = h.d.Shares.Sessions().Open(key, requested, now, req.PeerClosed)
	case share.FinalEpoch:
		session, err = h.d.Shares.Sessions().Close(key)
	default:
		var forgotten []share.SessionPartition
		for _, t := range r.ForgottenTopicsData {
			for _, p := range t.Partitions {
				forgotten = append(forgotten, share.SessionPartition{TopicID: t.TopicID, Partition: p})
			}
		}
		session, added, err = h.d.Shares.Sessions().Next(key, r.ShareSessionEpoch, requested, forgotten, now)
	}
	if err != nil {
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}
	out := newShareFetchAnswer(resp)

	// Piggy-backed acknowledgements.
	if hasAcks {
		var ackParts []share.SessionPartition
		var ackBatches [][]share.AckBatch
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				if len(p.AcknowledgementBatches) > 0 {
					ackParts = append(ackParts, share.SessionPartition{TopicID: t.TopicID, Partition: p.Partition})
					ackBatches = append(ackBatches, shareAckBatches(p.AcknowledgementBatches))
				}
			}
		}
		ackTopics := map[string]bool{}
		for i, t := range h.shareTargets(ctx, req, ackParts) {
			rp := out.partition(ackParts[i])
			err := h.shareAcknowledge(ctx, group, member, t, ackBatches[i], renew)
			rp.AcknowledgeErrorCode, rp.AcknowledgeErrorMessage = errorCode(err), shareErrorMessage(err)
			meterShareTopic(ackTopics, t, err)
		}
		h.d.Metrics.ShareAcknowledged(ackTopics)
	}
	if r.ShareSessionEpoch == share.FinalEpoch {
		h.releaseClosedSession(ctx, req, group, member, session)
		return resp, nil
	}
	if renew {
		return resp, nil
	}

	targets := h.shareTargets(ctx, req, session)
	if n := len(targets); n > 1 {
		// Fairness between partitions: each request starts at another.
		start := int(r.ShareSessionEpoch) % n
		targets = slices.Concat(targets[start:], targets[:start])
	}
	var watches []replica.FetchWatch
	for _, t := range targets {
		if t.err == nil {
			watches = append(watches, replica.FetchWatch{Topic: t.tp.Topic, Partition: t.tp.Partition, ReadCommitted: cfg.ReadCommitted})
		}
	}
	maxRecords := int64(r.MaxRecords)
	if maxRecords <= 0 {
		maxRecords = defaultShareMaxRecords
	}
	strict := r.Version >= 2 && r.ShareAcquireMode == 1
	maxBytes := r.MaxBytes
	rq := requestQuotaOf(ctx)
	if rq != nil {
		// The consumer_byte_rate quota caps what one fetch acquires.
		if limit := rq.fetchMaxBytes(); maxBytes <= 0 || limit < maxBytes {
			maxBytes = max(limit, 1)
		}
	}
	deadline := now.Add(time.Duration(r.MaxWaitMillis) * time.Millisecond)
	// The session and acknowledgements are done: later requests of the
	// connection need not wait for this one's long poll.
	req.Dispatched()
	for {
		changed := h.d.Shares.Changed(group)
		seen := h.d.Replica.FetchPositions(watches)
		fetched, acquired, failed := h.shareAcquire(ctx, group, member, targets, maxRecords, maxBytes, strict)
		if acquired || failed || r.MaxWaitMillis <= 0 || len(watches) == 0 || !time.Now().Before(deadline) || !req.Park() {
			fetchTopics := map[string]bool{}
			for i, t := range targets {
				f := fetched[i]
				meterShareTopic(fetchTopics, t, f.err)
				sp := share.SessionPartition{TopicID: t.tp.TopicID, Partition: t.tp.Partition}
				if f.err == nil && len(f.acquired) == 0 && !added[sp] && r.ShareSessionEpoch != share.InitialEpoch {
					continue // an incremental answer carries only what changed
				}
				rp := out.partition(sp)
				rp.ErrorCode, rp.ErrorMessage = errorCode(f.err), shareErrorMessage(f.err)
				if errors.Is(f.err, kerr.NotLeaderForPartition) {
					rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = h.currentLeader(t.tp)
				}
				if f.records != nil {
					rp.Records = f.records
				}
				for _, a := range f.acquired {
					ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
					ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = a.FirstOffset, a.LastOffset, a.DeliveryCount
					rp.AcquiredRecords = append(rp.AcquiredRecords, ar)
				}
			}
			var leaders []int32
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					if p.ErrorCode == kerr.NotLeaderForPartition.Code {
						leaders = append(leaders, p.CurrentLeader.LeaderID)
					}
				}
			}
			for _, ep := range h.shareLeaderEndpoints(req, leaders) {
				ne := kmsg.NewShareFetchResponseNodeEndpoint()
				ne.NodeID, ne.Host, ne.Port, ne.Rack = ep.id, ep.host, ep.port, ep.rack
				resp.NodeEndpoints = append(resp.NodeEndpoints, ne)
			}
			h.countShareFetched(resp)
			h.d.Metrics.ShareFetched(fetchTopics)
			if rq != nil {
				rq.recordShareFetch(resp)
			}
			return resp, nil
		}
		startWaiting(ctx)
		wctx, cancel := context.WithDeadline(ctx, deadline)
		woken := make(chan struct{})
		go func() {
			defer close(woken)
			select {
			case <-changed:
				cancel()
			case <-wctx.Done():
			}
		}()
		err := h.d.Replica.WaitFetchable(wctx, watches, seen)
		cancel()
		<-woken
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, purgatory.ErrClosed) {
			// The broker is stopping: one last try, then the answer.
			deadline = time.Now()
		}
	}
}

// shareFetched is one partition's acquisition.
type shareFetched struct {
	acquired []share.AcquiredRange
	records  []byte
	err      error
}

// shareAcquire acquires records of every target, within the request's
// record and byte limits. It reports whether any record was acquired and
// whether a partition failed in a way that ends a wait (not leader, the
// state persister's errors).
func (h *Handlers) shareAcquire(ctx context.Context, group, member string, targets []shareTarget, maxRecords int64, maxBytes int32, strict bool) ([]shareFetched, bool, bool) {
	out := make([]shareFetched, len(targets))
	if maxBytes <= 0 {
		maxBytes = 1<<31 - 1
	}
	acquired, failed := false, false
	for i, t := range targets {
		if t.err != nil {
			// Not an error that ends the wait for the others (an unknown
			// topic id, a topic not authorized), as in 01_fetch.go.
			out[i].err = t.err
			continue
		}
		if maxRecords <= 0 || (maxBytes <= 0 && acquired) {
			continue
		}
		f, err := h.d.Shares.Fetch(ctx, group, member, t.tp, maxRecords, maxBytes, strict)
		if err != nil {
			out[i].err = err
			failed = true
			continue
		}
		out[i].acquired, out[i].records = f.Acquired, f.Records
		for _, a := range f.Acquired {
			maxRecords -= a.LastOffset - a.FirstOffset + 1
		}
		maxBytes -= int32(len(f.Records))
		if len(f.Acquired) > 0 {
			acquired = true
		}
	}
	return out, acquired, failed
}

// recordShareFetch applies request_percentage and consumer_byte_rate to a
// share fetch's answer: its size is recorded and the client throttled when
// over a quota. Unlike a fetch's, the answer is not replaced by an empty
// one (Kafka's is): its records are acquired, and an empty answer would
// leave them locked for the member until their lock ends.
func (rq *requestQuota) recordShareFetch(resp *kmsg.ShareFetchResponse) {
	rt := rq.requestTime()
	size := 0
	if rq.q.Fetch.Enabled() {
		size = len(resp.AppendTo(nil))
	}
	rq.throttleWith(rq.q.Fetch.Record(rq.user, rq.clientID, float64(size)), rq.q.Fetch, rt)
}

// meterShareTopic notes a share request's partition in topics (name ->
// whether a partition failed) for BrokerTopicMetrics; a partition whose
// topic id is unknown names no topic.
func meterShareTopic(topics map[string]bool, t shareTarget, err error) {
	if t.tp.Topic != "" {
		topics[t.tp.Topic] = topics[t.tp.Topic] || err != nil
	}
}

// countShareFetched adds a share fetch answer's record bytes to BytesOut.
func (h *Handlers) countShareFetched(resp *kmsg.ShareFetchResponse) {
	if h.d.Metrics == nil {
		return
	}
	img := h.image()
	for _, t := range resp.Topics {
		n := 0
		for _, p := range t.Partitions {
			n += len(p.Records)
		}
		if it := img.Topics.TopicByID(t.TopicID); it != nil && n > 0 {
			h.d.Metrics.Fetched(it.Name, n)
		}
	}
}

// shareFetchAnswer finds or adds a response's partitions.
type shareFetchAnswer struct {
	resp *kmsg.ShareFetchResponse
}

func newShareFetchAnswer(resp *kmsg.ShareFetchResponse) shareFetchAnswer {
	return shareFetchAnswer{resp}
}

func (a shareFetchAnswer) partition(p share.SessionPartition) *kmsg.ShareFetchResponseTopicPartition {
	ti := -1
	for i := range a.resp.Topics {
		if a.resp.Topics[i].TopicID == p.TopicID {
			ti = i
			break
		}
	}
	if ti < 0 {
		t := kmsg.NewShareFetchResponseTopic()
		t.TopicID = p.TopicID
		a.resp.Topics = append(a.resp.Topics, t)
		ti = len(a.resp.Topics) - 1
	}
	t := &a.resp.Topics[ti]
	for i := range t.Partitions {
		if t.Partitions[i].Partition == p.Partition {
			return &t.Partitions[i]
		}
	}
	rp := kmsg.NewShareFetchResponseTopicPartition()
	rp.Partition = p.Partition
	rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = -1, -1
	rp.Records = []byte{}
	t.Partitions = append(t.Partitions, rp)
	return &t.Partitions[len(t.Partitions)-1]
}
