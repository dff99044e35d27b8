package handlers

// ShareAcknowledge (key 79), v1-2 (v0 was Kafka 4.0's early access). A
// share group member acknowledges records it acquired with ShareFetch:
// ACCEPT, RELEASE, REJECT, GAP, and RENEW with v2's IsRenewAck (KIP-1222),
// one type per batch or per offset (internal/share). The request belongs to
// the member's share session (78_share_fetch.go): epoch 0 cannot open one
// (INVALID_SHARE_SESSION_EPOCH), -1 closes it after the acknowledgements and
// releases the member's other records of the session's partitions, any
// other epoch must be the session's next (SHARE_SESSION_NOT_FOUND,
// INVALID_SHARE_SESSION_EPOCH). Each partition's result is its error code:
// INVALID_REQUEST for malformed batches or offsets past the records
// acquired, INVALID_RECORD_STATE for records not acquired by the member,
// NOT_LEADER_OR_FOLLOWER (with the current leader, and its endpoint in
// NodeEndpoints) where this broker does not lead, or the state persister's
// error as Kafka maps it. An acknowledgement is answered only once its
// state is written.
//
// Authorization (Kafka's): READ on the group (GROUP_AUTHORIZATION_FAILED),
// READ on each topic (TOPIC_AUTHORIZATION_FAILED for its partitions).
//
// While share.version is 0 the request is answered UNSUPPORTED_VERSION (features.go),
// as Kafka answers it.

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/network"
	"gregor/internal/share"
)

var shareAcknowledgeAPI = api{key: 79, min: 1, max: 2, handle: (*Handlers).shareAcknowledgeRequest, needs: hasShares}

func (h *Handlers) shareAcknowledgeRequest(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.ShareAcknowledgeRequest)
	resp := r.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
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
	resp.AcquisitionLockTimeoutMillis = int32(h.d.Shares.GroupConfig(group).RecordLockDuration.Milliseconds())
	if !h.authorized(ctx, req, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	if !validShareMember(member) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	key := share.SessionKey{Group: group, Member: member}
	var session []share.SessionPartition
	var err error
	if r.ShareSessionEpoch == share.FinalEpoch {
		session, err = h.d.Shares.Sessions().Close(key)
	} else {
		err = h.d.Shares.Sessions().Acknowledged(key, r.ShareSessionEpoch, time.Now())
	}
	if err != nil {
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}

	renew := r.Version >= 2 && r.IsRenewAck
	var parts []share.SessionPartition
	var batches [][]share.AckBatch
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			parts = append(parts, share.SessionPartition{TopicID: t.TopicID, Partition: p.Partition})
			batches = append(batches, shareAckBatches(p.AcknowledgementBatches))
		}
	}
	ackTopics := map[string]bool{}
	for i, t := range h.shareTargets(ctx, req, parts) {
		err := h.shareAcknowledge(ctx, group, member, t, batches[i], renew)
		meterShareTopic(ackTopics, t, err)
		rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
		rp.Partition = parts[i].Partition
		rp.ErrorCode, rp.ErrorMessage = errorCode(err), shareErrorMessage(err)
		rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = -1, -1
		if errors.Is(err, kerr.NotLeaderForPartition) {
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = h.currentLeader(t.tp)
		}
		ti := -1
		for j := range resp.Topics {
			if resp.Topics[j].TopicID == parts[i].TopicID {
				ti = j
			}
		}
		if ti < 0 {
			rt := kmsg.NewShareAcknowledgeResponseTopic()
			rt.TopicID = parts[i].TopicID
			resp.Topics = append(resp.Topics, rt)
			ti = len(resp.Topics) - 1
		}
		resp.Topics[ti].Partitions = append(resp.Topics[ti].Partitions, rp)
	}
	h.d.Metrics.ShareAcknowledged(ackTopics)
	var leaders []int32
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode == kerr.NotLeaderForPartition.Code {
				leaders = append(leaders, p.CurrentLeader.LeaderID)
			}
		}
	}
	for _, ep := range h.shareLeaderEndpoints(req, leaders) {
		ne := kmsg.NewShareAcknowledgeResponseNodeEndpoint()
		ne.NodeID, ne.Host, ne.Port, ne.Rack = ep.id, ep.host, ep.port, ep.rack
		resp.NodeEndpoints = append(resp.NodeEndpoints, ne)
	}
	if r.ShareSessionEpoch == share.FinalEpoch {
		h.releaseClosedSession(ctx, req, group, member, session)
	}
	return resp, nil
}
