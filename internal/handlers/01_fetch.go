package handlers

// Fetch (key 1), v4-16. Reads each partition from its leader, bounded by the
// high watermark (read_uncommitted) or the last stable offset
// (read_committed); a read_committed answer lists the aborted transactions
// overlapping what it returns (empty list when none, null for
// read_uncommitted and on errors), so the consumer can drop their records. Limits as Kafka: the request's max bytes over the whole
// response and each partition's max bytes, except that the first batch of
// the first partition with data is returned even if larger ("first batch
// always returned", so a large batch cannot block a consumer). With less
// than min bytes available and no error, the fetch waits up to max wait for
// appends. v13+ names topics by id (UNKNOWN_TOPIC_ID). Fetch sessions
// (KIP-227, v7+, 01_fetch_session.go and internal/fetchsession): a full
// fetch with epoch 0 opens a session when the cache has room (up to
// max.incremental.fetch.session.cache.slots, evicting as Kafka does); an
// incremental fetch reads all its session's partitions and is answered
// with only those that changed; a wrong session id or epoch is answered
// FETCH_SESSION_ID_NOT_FOUND or INVALID_FETCH_SESSION_EPOCH with no
// partitions, and the client starts over with a full fetch. Followers'
// sessions are privileged. A fetch does not hold up later requests of its
// connection while it waits (network.Request.Dispatched). A follower's
// fetch (replica id >= 0) reads up to the log end and records the
// follower's progress on the leader. Record batches, a consumer's or a
// follower's, are not copied: they stay in their segment files and the
// connection writer sends them with sendfile (01_fetch_zerocopy.go).
//
// Client quotas (quotas.go): a consumer's fetch is capped to what its
// consumer_byte_rate allows over the quota window; its response size
// counts against that quota and its handling time (up to the wait)
// against request_percentage; over either it is answered empty with the
// throttle time. Followers are exempt.
//
// Authorization (Kafka's): a follower (replica id >= 0) needs CLUSTER_ACTION
// on the cluster, a consumer READ on each topic; a partition refused gets
// TOPIC_AUTHORIZATION_FAILED (after UNKNOWN_TOPIC_ID for an unknown id) and
// the others are served.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/config"
	"gregor/internal/fetchsession"
	"gregor/internal/log"
	"gregor/internal/network"
	"gregor/internal/replica"
)

var fetchAPI = api{key: 1, min: 4, max: 16, handle: (*Handlers).fetch}

func (h *Handlers) fetch(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.FetchRequest)
	// A fetch changes nothing, and may wait: later requests of the
	// connection need not queue behind it.
	req.Dispatched()
	replicaID := fetchReplicaID(r)
	sc := h.d.FetchSessions.NewContext(fetchSessionRequest(r, replicaID), time.Now())
	if sc.Kind == fetchsession.SessionError {
		// The client starts over with a full fetch.
		resp := r.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = sc.ErrorCode
		return resp, nil
	}
	r = sessionFetch(r, sc)
	rq := requestQuotaOf(ctx) // nil for followers
	if rq != nil {
		r = rq.capFetch(r)
	}
	deadline := time.Now().Add(time.Duration(r.MaxWaitMillis) * time.Millisecond)
	denied := h.fetchDenied(ctx, req, r, replicaID)
	watches := h.fetchWatches(r, replicaID, denied)
	for {
		// The positions are taken before the read, so that data arriving
		// during the read wakes the wait below instead of being missed.
		seen := h.d.Replica.FetchPositions(watches)
		resp, bytes, hasError := h.readFetch(r, replicaID, denied)
		// A consumer's fetch waits only if the broker has a place for it
		// (network.Request.Park); a follower's always may.
		if bytes >= int(r.MinBytes) || hasError || r.MaxWaitMillis <= 0 || len(watches) == 0 || !time.Now().Before(deadline) ||
			(replicaID < 0 && !req.Park()) {
			return h.fetched(rq, sc, resp, replicaID >= 0), nil
		}
		// The records read so far are read again after the wait.
		resp.Release()
		startWaiting(ctx)
		wctx, cancel := context.WithDeadline(ctx, deadline)
		err := h.d.Replica.WaitFetchable(wctx, watches, seen)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			// The max wait passed (or the broker is stopping): one last
			// read, so data that arrived at the deadline is not missed.
			resp, _, _ := h.readFetch(r, replicaID, denied)
			return h.fetched(rq, sc, resp, replicaID >= 0), nil
		}
	}
}

// fetchReplicaID is the replica id of a fetch: a follower's broker id,
// negative for a consumer.
func fetchReplicaID(r *kmsg.FetchRequest) int32 {
	if r.Version >= 15 {
		return r.ReplicaState.ID
	}
	return r.ReplicaID
}

// fetched is the answer to a fetch once read: cut to what its fetch
// session must carry, throttled by the client quotas (rq nil: none apply),
// its bytes counted. A throttled answer is empty and changes no session
// (no new one, nothing recorded as sent), as Kafka's.
func (h *Handlers) fetched(rq *requestQuota, sc *fetchsession.Context, resp *fetchResponse, follower bool) *fetchResponse {
	results := fetchResults(resp)
	if rq != nil {
		// The quota measures the answer the session would send.
		kept := keepPartitions(resp, sc.Preview(results).Include, false)
		if out := rq.throttleFetch(kept); out != kept {
			resp.Release() // what kept did not hold
			a := sc.Throttled()
			out.SessionID, out.ErrorCode = a.SessionID, a.ErrorCode
			h.countFetched(out, follower)
			return out
		}
	}
	a := sc.Respond(results, time.Now())
	resp = keepPartitions(resp, a.Include, true)
	resp.SessionID, resp.ErrorCode = a.SessionID, a.ErrorCode
	h.countFetched(resp, follower)
	return resp
}

// fetchWatches lists the partitions a fetch reads, by name, for its wait
// in the fetch purgatory: a follower waits for the leader's log end, a
// consumer for the high watermark or, read_committed, the last stable
// offset.
func (h *Handlers) fetchWatches(r *kmsg.FetchRequest, replicaID int32, denied map[string]bool) []replica.FetchWatch {
	img := h.image()
	var ws []replica.FetchWatch
	for _, t := range r.Topics {
		name := t.Topic
		if r.Version >= 13 {
			it := img.Topics.TopicByID(t.TopicID)
			if it == nil {
				continue
			}
			name = it.Name
		}
		if denied[name] {
			continue
		}
		for _, p := range t.Partitions {
			ws = append(ws, replica.FetchWatch{Topic: name, Partition: p.Partition, Replica: replicaID >= 0, ReadCommitted: r.IsolationLevel == 1})
		}
	}
	return ws
}

// fetchDenied names the topics of a fetch its principal may not read (nil
// when all may be read).
func (h *Handlers) fetchDenied(ctx context.Context, req *network.Request, r *kmsg.FetchRequest, replicaID int32) map[string]bool {
	if h.d.Authorizer == nil {
		return nil
	}
	img := h.image()
	var names []string
	for _, t := range r.Topics {
		name := t.Topic
		if r.Version >= 13 {
			it := img.Topics.TopicByID(t.TopicID)
			if it == nil {
				continue
			}
			name = it.Name
		}
		names = append(names, name)
	}
	denied := map[string]bool{}
	if replicaID >= 0 {
		if !h.authorizedCluster(ctx, req, kmsg.ACLOperationClusterAction) {
			for _, n := range names {
				denied[n] = true
			}
		}
		return denied
	}
	for n, ok := range h.authorizedTopics(ctx, req, kmsg.ACLOperationRead, names) {
		if !ok {
			denied[n] = true
		}
	}
	return denied
}

// countFetched adds a fetch answer's record bytes to BytesOut per topic, or,
// for a follower, to ReplicationBytesOut (as Kafka counts them apart).
func (h *Handlers) countFetched(resp *fetchResponse, follower bool) {
	if h.d.Metrics == nil {
		return
	}
	img := h.image()
	for ti, t := range resp.Topics {
		name := t.Topic
		if name == "" {
			if it := img.Topics.TopicByID(t.TopicID); it != nil {
				name = it.Name
			}
		}
		n := 0
		for pi, p := range t.Partitions {
			n += len(p.RecordBatches)
			if ti < len(resp.ranges) && pi < len(resp.ranges[ti]) {
				n += int(resp.ranges[ti][pi].Size)
			}
		}
		if follower {
			h.d.Metrics.Replicated(n)
		} else {
			h.d.Metrics.Fetched(name, n)
		}
	}
}

// readFetch reads every requested partition once and reports the bytes read
// and whether any partition failed. The records stay in their segment files
// (zero-copy); the caller releases the response if it does not return it.
func (h *Handlers) readFetch(r *kmsg.FetchRequest, replicaID int32, denied map[string]bool) (*fetchResponse, int, bool) {
	resp := &fetchResponse{FetchResponse: r.ResponseKind().(*kmsg.FetchResponse)}
	img := h.image()
	readCommitted := r.IsolationLevel == 1
	maxBytes := int(r.MaxBytes)
	if r.Version < 3 || maxBytes <= 0 {
		maxBytes = int(^uint32(0) >> 1)
	}
	total := 0
	hasError := false
	for _, t := range r.Topics {
		var ranges []log.FileRange
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		name := t.Topic
		topicErr := int16(0)
		if r.Version >= 13 {
			if it := img.Topics.TopicByID(t.TopicID); it != nil {
				name = it.Name
			} else {
				topicErr = kerr.UnknownTopicID.Code
			}
		}
		for _, p := range t.Partitions {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = p.Partition
			rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
			rp.RecordBatches = []byte{}
			switch {
			case topicErr != 0:
				rp.ErrorCode = topicErr
			case denied[name]:
				// Not an error that ends the wait for the others.
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			case replicaID >= 0:
				// A follower: records up to the log end, its progress
				// recorded on the leader, sent with sendfile.
				limit := max(min(int(p.PartitionMaxBytes), maxBytes-total), 0)
				brokerEpoch := int64(-1)
				if r.Version >= 15 {
					brokerEpoch = r.ReplicaState.Epoch
				}
				res, div := h.d.Replica.ReadFileRangeAsReplica(name, p.Partition, replica.ReplicaFetch{
					ReplicaID: replicaID, BrokerEpoch: brokerEpoch, CurrentLeaderEpoch: p.CurrentLeaderEpoch,
					FetchOffset: p.FetchOffset, LogStartOffset: p.LogStartOffset, LastFetchedEpoch: p.LastFetchedEpoch,
					MaxBytes: int32(limit), MinOneBatch: total == 0,
				})
				rp.ErrorCode = errorCode(res.Err)
				rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = res.HighWatermark, res.LastStableOffset, res.LogStartOffset
				if div != nil {
					rp.DivergingEpoch = *div
				}
				if res.File.Size > 0 {
					if ranges == nil {
						ranges = make([]log.FileRange, len(t.Partitions))
					}
					ranges[len(rt.Partitions)] = res.File
					total += int(res.File.Size)
				}
			default:
				if r.Version >= 12 && p.LastFetchedEpoch >= 0 {
					// KIP-320: a consumer whose log view diverged is told
					// where this leader's log of that epoch ends.
					if div := h.d.Replica.DivergingEpoch(name, p.Partition, p.LastFetchedEpoch, p.FetchOffset); div != nil {
						rp.DivergingEpoch = *div
						rt.Partitions = append(rt.Partitions, rp)
						continue
					}
				}
				limit := int(p.PartitionMaxBytes)
				if rest := maxBytes - total; rest < limit {
					limit = rest
				}
				if limit < 0 {
					limit = 0
				}
				if r.Version >= 11 && r.Rack != "" && h.d.Broker.ReplicaSelectorClass == config.RackAwareReplicaSelector {
					// KIP-392: send the consumer to a replica in its rack.
					if id := h.d.Replica.PreferredReadReplica(name, p.Partition, r.Rack, p.FetchOffset); id >= 0 {
						rp.PreferredReadReplica = id
						rt.Partitions = append(rt.Partitions, rp)
						continue
					}
				}
				read := h.d.Replica.ReadFileRange
				if r.Version >= 11 {
					// A consumer may fetch from a follower it was sent to.
					read = h.d.Replica.ReadFileRangeAnyReplica
				}
				res := read(name, p.Partition, p.CurrentLeaderEpoch, p.FetchOffset, int32(limit), readCommitted, total == 0)
				rp.ErrorCode = errorCode(res.Err)
				rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = res.HighWatermark, res.LastStableOffset, res.LogStartOffset
				if res.File.Size > 0 {
					if ranges == nil {
						ranges = make([]log.FileRange, len(t.Partitions))
					}
					ranges[len(rt.Partitions)] = res.File
					total += int(res.File.Size)
				}
				if readCommitted && rp.ErrorCode == 0 {
					// A list (maybe empty) for read_committed, null
					// otherwise and on errors, as Kafka answers.
					rp.AbortedTransactions = make([]kmsg.FetchResponseTopicPartitionAbortedTransaction, len(res.AbortedTransactions))
					for i, a := range res.AbortedTransactions {
						at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
						at.ProducerID, at.FirstOffset = a.ProducerID, a.FirstOffset
						rp.AbortedTransactions[i] = at
					}
				}
			}
			if rp.ErrorCode != 0 {
				hasError = true
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
		resp.ranges = append(resp.ranges, ranges)
	}
	return resp, total, hasError
}
