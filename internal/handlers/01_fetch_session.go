package handlers

// Fetch sessions (KIP-227) at the Fetch handler: the request's session
// fields and partitions go to the broker's fetchsession.Cache, which says
// what the fetch reads (for an incremental fetch, every partition of its
// session, the cached parameters updated by those the request names); the
// answer then keeps only what the session decides it must carry.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/fetchsession"
	"gregor/internal/log"
)

// fetchSessionRequest is the session part of a fetch request.
func fetchSessionRequest(r *kmsg.FetchRequest, replicaID int32) fetchsession.Request {
	ids := r.Version >= 13
	sr := fetchsession.Request{SessionID: r.SessionID, Epoch: r.SessionEpoch, UsesTopicIDs: ids, Follower: replicaID >= 0}
	if r.Version < 7 {
		// Before KIP-227 every fetch is full and sessionless.
		sr.SessionID, sr.Epoch = 0, fetchsession.FinalEpoch
	}
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			sr.Partitions = append(sr.Partitions, fetchsession.Partition{
				Key: sessionKey(ids, t.Topic, t.TopicID, p.Partition),
				Params: fetchsession.Params{
					FetchOffset: p.FetchOffset, LogStartOffset: p.LogStartOffset, MaxBytes: p.PartitionMaxBytes,
					CurrentLeaderEpoch: p.CurrentLeaderEpoch, LastFetchedEpoch: p.LastFetchedEpoch,
				},
			})
		}
	}
	for _, t := range r.ForgottenTopics {
		for _, p := range t.Partitions {
			sr.Forgotten = append(sr.Forgotten, sessionKey(ids, t.Topic, t.TopicID, p))
		}
	}
	return sr
}

// sessionKey names a partition by topic id when the request does (v13+),
// else by name.
func sessionKey(ids bool, topic string, id [16]byte, partition int32) fetchsession.Key {
	if ids {
		return fetchsession.Key{TopicID: id, Partition: partition}
	}
	return fetchsession.Key{Topic: topic, Partition: partition}
}

// sessionFetch is the request an incremental fetch reads: r with its
// partitions replaced by its session's, grouped into topics in the
// session's order (a topic appears again when its partitions are not
// adjacent, as in Kafka's answers). Other fetches read r itself.
func sessionFetch(r *kmsg.FetchRequest, sc *fetchsession.Context) *kmsg.FetchRequest {
	if sc.Kind != fetchsession.Incremental {
		return r
	}
	eff := *r
	eff.Topics = nil
	eff.ForgottenTopics = nil
	for _, p := range sc.Partitions {
		n := len(eff.Topics)
		if n == 0 || eff.Topics[n-1].Topic != p.Topic || eff.Topics[n-1].TopicID != p.TopicID {
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = p.Topic, p.TopicID
			eff.Topics = append(eff.Topics, t)
			n++
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = p.Partition
		rp.FetchOffset, rp.LogStartOffset, rp.PartitionMaxBytes = p.FetchOffset, p.LogStartOffset, p.MaxBytes
		rp.CurrentLeaderEpoch, rp.LastFetchedEpoch = p.CurrentLeaderEpoch, p.LastFetchedEpoch
		eff.Topics[n-1].Partitions = append(eff.Topics[n-1].Partitions, rp)
	}
	return &eff
}

// fetchResults lists what an answer says of each partition, in the order of
// the request it answers (which readFetch keeps).
func fetchResults(resp *fetchResponse) []fetchsession.Result {
	var rs []fetchsession.Result
	for ti, t := range resp.Topics {
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			size := len(p.RecordBatches)
			if ti < len(resp.ranges) && pi < len(resp.ranges[ti]) {
				size += int(resp.ranges[ti][pi].Size)
			}
			rs = append(rs, fetchsession.Result{
				ErrorCode: p.ErrorCode, HighWatermark: p.HighWatermark, LastStableOffset: p.LastStableOffset,
				LogStartOffset: p.LogStartOffset, RecordBytes: size, PreferredReadReplica: p.PreferredReadReplica,
				DivergingEpoch: p.DivergingEpoch.Epoch >= 0,
			})
		}
	}
	return rs
}

// keepPartitions returns the answer with only the partitions include
// marks (in the order of fetchResults), topics left empty dropped; with
// release, the file ranges of the partitions left out are released.
// include nil keeps none.
func keepPartitions(resp *fetchResponse, include []bool, release bool) *fetchResponse {
	out := &fetchResponse{FetchResponse: new(kmsg.FetchResponse)}
	*out.FetchResponse = *resp.FetchResponse
	out.Topics = nil
	i := 0
	for ti, t := range resp.Topics {
		var ranges []log.FileRange
		if ti < len(resp.ranges) {
			ranges = resp.ranges[ti]
		}
		kt := t
		kt.Partitions = nil
		var kr []log.FileRange
		for pi, p := range t.Partitions {
			var rg log.FileRange
			if pi < len(ranges) {
				rg = ranges[pi]
			}
			keep := i < len(include) && include[i]
			i++
			if !keep {
				if release {
					rg.Release()
				}
				continue
			}
			if rg.Size > 0 {
				if kr == nil {
					kr = make([]log.FileRange, len(t.Partitions))
				}
				kr[len(kt.Partitions)] = rg
			}
			kt.Partitions = append(kt.Partitions, p)
		}
		if len(kt.Partitions) == 0 {
			continue
		}
		out.Topics = append(out.Topics, kt)
		out.ranges = append(out.ranges, kr)
	}
	return out
}
