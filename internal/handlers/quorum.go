package handlers

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.etcd.io/raft/v3/raftpb"

	"gregor/internal/network"
	"gregor/internal/raft"
)

// Quorum is the metadata quorum as a controller listener serves it: raft
// messages from the other voters, and the committed log and snapshots for
// brokers that follow it.
type Quorum interface {
	Step(ctx context.Context, m raftpb.Message) error
	// WatchPeerConnection names the connection a voter's messages came
	// on (raft.Node.WatchPeerConnection: an election on the leader's exit).
	WatchPeerConnection(voter int32, closed <-chan struct{})
	ReadCommitted(offset int64, maxBytes int) (batches []byte, highWatermark int64, err error)
	LatestSnapshot() (id raft.SnapshotID, data []byte, ok bool)
	Status() raft.QuorumStatus
	Leader() (id, epoch int32)
	HighWatermark() int64
	// WaitHighWatermark parks a metadata long poll until the high
	// watermark passes offset, ctx ends or the quorum closes.
	WaitHighWatermark(ctx context.Context, offset int64) error
}

// NewRequest implements network.ExtraRequests: a controller listener also
// decodes Gregor's RaftMessages request.
func (h *Handlers) NewRequest(key int16) kmsg.Request {
	if key == raft.RaftMessagesKey && h.controllerListener && h.d.Quorum != nil {
		return &raft.RaftMessagesRequest{}
	}
	return nil
}

// raftMessages hands raft messages from another voter to the local node.
func (h *Handlers) raftMessages(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*raft.RaftMessagesRequest)
	resp := r.ResponseKind().(*raft.RaftMessagesResponse)
	if !h.nodeToNode(ctx, req) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	if r.ClusterID != h.d.ClusterID {
		resp.ErrorCode = kerr.InconsistentClusterID.Code
		return resp, nil
	}
	voter := false
	for _, v := range h.d.Broker.ControllerQuorumVoters {
		voter = voter || (v.ID == r.From && v.ID != h.d.NodeID)
	}
	if voter {
		h.d.Quorum.WatchPeerConnection(r.From, req.PeerClosed)
	}
	for _, m := range r.Messages {
		// Only the other voters take part; anything else (a node of
		// another configuration, a forged sender) is dropped.
		if !voter || m.From != raft.RaftID(r.From) || m.To != raft.RaftID(h.d.NodeID) {
			h.d.Logger.Warn("dropping a raft message from a node that is not a voter of this quorum",
				"from", r.From, "client", req.ClientAddr, "type", m.Type)
			continue
		}
		if err := h.d.Quorum.Step(ctx, m); err != nil {
			// A closing node; the sender's raft resends what matters.
			h.d.Logger.Debug("raft message not stepped", "from", r.From, "type", m.Type, "err", err)
		}
	}
	return resp, nil
}

var metadataFetchAPI = api{key: 1, min: 12, max: 12, handle: (*Handlers).metadataFetch}

// metadataFetch answers a Fetch of __cluster_metadata-0 on a controller
// listener: the committed batches from the fetch offset, waiting up to
// MaxWaitMillis for new ones at the log end; a SnapshotId when the offset
// was cleaned away behind a snapshot (then the fetcher uses FetchSnapshot).
// Any voter answers (committed data is the same everywhere) and names the
// leader it knows.
func (h *Handlers) metadataFetch(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.FetchRequest)
	resp := r.ResponseKind().(*kmsg.FetchResponse)
	if !h.nodeToNode(ctx, req) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	if h.d.Quorum == nil {
		resp.ErrorCode = kerr.UnknownServerError.Code
		return resp, nil
	}
	if r.ClusterID != nil && *r.ClusterID != h.d.ClusterID {
		resp.ErrorCode = kerr.InconsistentClusterID.Code
		return resp, nil
	}
	var want *kmsg.FetchRequestTopicPartition
	for ti := range r.Topics {
		t := &r.Topics[ti]
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = p.Partition
			rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
			if t.Topic == raft.MetadataTopic && p.Partition == 0 && want == nil {
				want = p
				continue // answered below
			}
			rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if want == nil {
		return resp, nil
	}
	req.Dispatched() // a long poll holds up nothing else of the connection
	rp := h.fetchMetadataPartition(ctx, want, time.Duration(r.MaxWaitMillis)*time.Millisecond)
	for ti := range resp.Topics {
		if resp.Topics[ti].Topic == raft.MetadataTopic {
			resp.Topics[ti].Partitions = append(resp.Topics[ti].Partitions, rp)
			break
		}
	}
	return resp, nil
}

func (h *Handlers) fetchMetadataPartition(ctx context.Context, p *kmsg.FetchRequestTopicPartition, maxWait time.Duration) kmsg.FetchResponseTopicPartition {
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.Partition = 0
	q := h.d.Quorum
	leader, epoch := q.Leader()
	rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = leader, epoch
	// Wait in the quorum's purgatory for a commit past the fetch offset;
	// the deadline or a closing quorum ends the wait with what there is.
	wctx, cancel := context.WithTimeout(ctx, min(maxWait, 10*time.Second))
	_ = q.WaitHighWatermark(wctx, p.FetchOffset)
	cancel()
	maxBytes := int(p.PartitionMaxBytes)
	if maxBytes <= 0 || maxBytes > raft.MaxBatchSizeBytes {
		maxBytes = raft.MaxBatchSizeBytes
	}
	data, hw, err := q.ReadCommitted(p.FetchOffset, maxBytes)
	rp.HighWatermark, rp.LastStableOffset = hw, hw
	switch {
	case errors.Is(err, raft.ErrOffsetBehindSnapshot):
		id, _, ok := q.LatestSnapshot()
		if !ok {
			rp.ErrorCode = kerr.UnknownServerError.Code
			return rp
		}
		rp.SnapshotID.EndOffset, rp.SnapshotID.Epoch = id.EndOffset, id.Epoch
	case errors.Is(err, raft.ErrOffsetOutOfRange):
		rp.ErrorCode = kerr.OffsetOutOfRange.Code
	case err != nil:
		h.d.Logger.Warn("metadata fetch failed", "offset", p.FetchOffset, "err", err)
		rp.ErrorCode = kerr.KafkaStorageError.Code
	default:
		rp.RecordBatches = data
	}
	leader, epoch = q.Leader()
	rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = leader, epoch
	return rp
}

var fetchSnapshotAPI = api{key: 59, min: 0, max: 1, handle: (*Handlers).fetchSnapshot}

// fetchSnapshot serves the latest metadata snapshot in chunks (Kafka's
// FetchSnapshot): the fetcher asks for the snapshot id a Fetch named, from
// a byte position. A snapshot that is no longer the latest is
// SNAPSHOT_NOT_FOUND; the fetcher starts over with a new Fetch.
func (h *Handlers) fetchSnapshot(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.FetchSnapshotRequest)
	resp := r.ResponseKind().(*kmsg.FetchSnapshotResponse)
	if !h.nodeToNode(ctx, req) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	if h.d.Quorum == nil {
		// No voter behind this listener (as metadataFetch).
		resp.ErrorCode = kerr.UnknownServerError.Code
		return resp, nil
	}
	if r.ClusterID != nil && *r.ClusterID != h.d.ClusterID {
		resp.ErrorCode = kerr.InconsistentClusterID.Code
		return resp, nil
	}
	maxBytes := int64(r.MaxBytes)
	if maxBytes <= 0 {
		maxBytes = raft.MaxBatchSizeBytes
	}
	for _, t := range r.Topics {
		rt := kmsg.NewFetchSnapshotResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewFetchSnapshotResponseTopicPartition()
			rp.Partition = p.Partition
			rp.SnapshotID.EndOffset, rp.SnapshotID.Epoch = p.SnapshotID.EndOffset, p.SnapshotID.Epoch
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = h.d.Quorum.Leader()
			id, data, ok := h.d.Quorum.LatestSnapshot()
			switch {
			case t.Topic != raft.MetadataTopic || p.Partition != 0:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case !ok || id.EndOffset != p.SnapshotID.EndOffset || id.Epoch != p.SnapshotID.Epoch:
				rp.ErrorCode = kerr.SnapshotNotFound.Code
			case p.Position < 0 || p.Position > int64(len(data)):
				rp.ErrorCode = kerr.PositionOutOfRange.Code
			default:
				end := min(int64(len(data)), p.Position+maxBytes)
				rp.Size = int64(len(data))
				rp.Position = p.Position
				rp.Bytes = data[p.Position:end]
				maxBytes -= end - p.Position
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

var describeQuorumAPI = api{key: 55, min: 0, max: 2, handle: (*Handlers).describeQuorum}

// describeQuorum reports the metadata quorum: leader, epoch, high watermark
// and each voter's log end offset and last fetch. On a controller listener
// only the leader answers (NOT_LEADER_OR_FOLLOWER elsewhere, as Kafka); a
// broker forwards the request to the active controller.
func (h *Handlers) describeQuorum(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.DescribeQuorumRequest)
	if !h.authorizedClusterAdmin(ctx, req, kmsg.ACLOperationDescribe) {
		resp := r.ResponseKind().(*kmsg.DescribeQuorumResponse)
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	if !h.controllerListener {
		kresp, err := h.d.Forward(ctx, r)
		if err == nil {
			return kresp, nil
		}
		resp := r.ResponseKind().(*kmsg.DescribeQuorumResponse)
		resp.ErrorCode = kerr.NotController.Code
		msg := err.Error()
		resp.ErrorMessage = &msg
		return resp, nil
	}
	resp := r.ResponseKind().(*kmsg.DescribeQuorumResponse)
	st := h.d.QuorumStatus()
	for _, t := range r.Topics {
		rt := kmsg.NewDescribeQuorumResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewDescribeQuorumResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case t.Topic != raft.MetadataTopic || p.Partition != 0:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case st.LeaderID != h.d.NodeID:
				rp.ErrorCode = kerr.NotLeaderForPartition.Code
				rp.LeaderID, rp.LeaderEpoch = st.LeaderID, st.LeaderEpoch
			default:
				rp.LeaderID, rp.LeaderEpoch, rp.HighWatermark = st.LeaderID, st.LeaderEpoch, st.HighWatermark
				for _, v := range st.Voters {
					rv := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
					rv.ReplicaID, rv.LogEndOffset = v.ReplicaID, v.LogEndOffset
					rv.LastFetchTimestamp, rv.LastCaughtUpTimestamp = v.LastFetchTimestamp, v.LastCaughtUpTimestamp
					rp.CurrentVoters = append(rp.CurrentVoters, rv)
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if r.Version >= 2 {
		for _, v := range h.d.Broker.ControllerQuorumVoters {
			n := kmsg.NewDescribeQuorumResponseNode()
			n.NodeID = v.ID
			l := kmsg.NewDescribeQuorumResponseNodeListener()
			if len(h.d.Broker.ControllerListenerNames) > 0 {
				l.Name = h.d.Broker.ControllerListenerNames[0]
			}
			l.Host, l.Port = v.Host, uint16(v.Port)
			n.Listeners = append(n.Listeners, l)
			resp.Nodes = append(resp.Nodes, n)
		}
	}
	return resp, nil
}
