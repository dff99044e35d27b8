package sharecoord

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/sharestate"
)

// Peers sends a request to another broker.
type Peers interface {
	Request(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error)
}

// PersisterConfig configures a Persister.
type PersisterConfig struct {
	// NodeID is this broker's id.
	NodeID int32
	// Local serves the share-partitions this broker coordinates
	// in-process; nil sends every call over the wire.
	Local *Service
	// Coordinator finds the broker coordinating a FindCoordinator key of
	// type SHARE (CoordinatorKey), creating __share_group_state when it
	// does not exist yet; while there is none it returns a retriable kerr
	// error (COORDINATOR_NOT_AVAILABLE).
	Coordinator func(ctx context.Context, key string) (int32, error)
	// Peers reaches the share coordinators of other brokers.
	Peers Peers
	// RetryBackoff is the wait after the first retriable error, doubled
	// after each further one up to MaxRetryBackoff; 0: 100 ms and 1 s.
	RetryBackoff, MaxRetryBackoff time.Duration
}

// Persister is the sharestate.Persister of a broker (Kafka's
// DefaultStatePersister): it finds the share coordinator of a
// share-partition, calls it in-process when it is this broker and over
// the wire (APIs 83-87) otherwise, and retries NOT_COORDINATOR,
// COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE and unreachable
// coordinators, with backoff, until ctx ends. Every answer it returns
// without error is committed to the __share_group_state partition's ISR.
type Persister struct {
	cfg PersisterConfig
}

var _ sharestate.Persister = (*Persister)(nil)

// NewPersister returns a Persister.
func NewPersister(cfg PersisterConfig) *Persister {
	if cfg.RetryBackoff <= 0 {
		cfg.RetryBackoff = 100 * time.Millisecond
	}
	if cfg.MaxRetryBackoff < cfg.RetryBackoff {
		cfg.MaxRetryBackoff = max(time.Second, cfg.RetryBackoff)
	}
	return &Persister{cfg: cfg}
}

// Initialize implements sharestate.Persister.
func (p *Persister) Initialize(ctx context.Context, k sharestate.Key, stateEpoch int32, startOffset int64) error {
	return p.call(ctx, k, func(ctx context.Context) error {
		return p.cfg.Local.Initialize(ctx, k, stateEpoch, startOffset)
	}, func(ctx context.Context, node int32) error {
		req := kmsg.NewPtrInitializeShareGroupStateRequest()
		req.GroupID = k.GroupID
		t := kmsg.NewInitializeShareGroupStateRequestTopic()
		t.TopicID = k.TopicID
		pt := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
		pt.Partition, pt.StateEpoch, pt.StartOffset = k.Partition, stateEpoch, startOffset
		t.Partitions = append(t.Partitions, pt)
		req.Topics = append(req.Topics, t)
		resp, err := p.request(ctx, node, req)
		if err != nil {
			return err
		}
		for _, rt := range resp.(*kmsg.InitializeShareGroupStateResponse).Topics {
			for _, rp := range rt.Partitions {
				if rt.TopicID == k.TopicID && rp.Partition == k.Partition {
					return answerError(rp.ErrorCode, rp.ErrorMessage, "")
				}
			}
		}
		return missingPartition(k)
	})
}

// Read implements sharestate.Persister.
func (p *Persister) Read(ctx context.Context, k sharestate.Key, leaderEpoch int32) (sharestate.State, error) {
	var st sharestate.State
	err := p.call(ctx, k, func(ctx context.Context) error {
		var err error
		st, err = p.cfg.Local.Read(ctx, k, leaderEpoch)
		// As over the wire, where ReadShareGroupState carries no
		// delivery-complete count: the answer does not depend on which
		// broker coordinates (ReadSummary reports the count).
		st.DeliveryCompleteCount = -1
		return err
	}, func(ctx context.Context, node int32) error {
		req := kmsg.NewPtrReadShareGroupStateRequest()
		req.GroupID = k.GroupID
		t := kmsg.NewReadShareGroupStateRequestTopic()
		t.TopicID = k.TopicID
		pt := kmsg.NewReadShareGroupStateRequestTopicPartition()
		pt.Partition, pt.LeaderEpoch = k.Partition, leaderEpoch
		t.Partitions = append(t.Partitions, pt)
		req.Topics = append(req.Topics, t)
		resp, err := p.request(ctx, node, req)
		if err != nil {
			return err
		}
		for _, rt := range resp.(*kmsg.ReadShareGroupStateResponse).Topics {
			for _, rp := range rt.Partitions {
				if rt.TopicID != k.TopicID || rp.Partition != k.Partition {
					continue
				}
				if err := answerError(rp.ErrorCode, rp.ErrorMessage, opRead); err != nil {
					return err
				}
				// ReadShareGroupState carries no leader epoch or
				// delivery-complete count: the epoch is the one just
				// read with (a read records it), the count not known.
				st = sharestate.State{StateEpoch: rp.StateEpoch, LeaderEpoch: leaderEpoch, StartOffset: rp.StartOffset, DeliveryCompleteCount: -1}
				for _, b := range rp.StateBatches {
					st.Batches = append(st.Batches, sharestate.Batch{
						FirstOffset: b.FirstOffset, LastOffset: b.LastOffset,
						DeliveryState: sharestate.DeliveryState(b.DeliveryState), DeliveryCount: b.DeliveryCount,
					})
				}
				return nil
			}
		}
		return missingPartition(k)
	})
	return st, err
}

// Write implements sharestate.Persister.
func (p *Persister) Write(ctx context.Context, k sharestate.Key, u sharestate.Update) error {
	return p.call(ctx, k, func(ctx context.Context) error {
		return p.cfg.Local.Write(ctx, k, u)
	}, func(ctx context.Context, node int32) error {
		req := kmsg.NewPtrWriteShareGroupStateRequest()
		req.Version = 1 // DeliveryCompleteCount
		req.GroupID = k.GroupID
		t := kmsg.NewWriteShareGroupStateRequestTopic()
		t.TopicID = k.TopicID
		pt := kmsg.NewWriteShareGroupStateRequestTopicPartition()
		pt.Partition, pt.StateEpoch, pt.LeaderEpoch, pt.StartOffset = k.Partition, u.StateEpoch, u.LeaderEpoch, u.StartOffset
		pt.DeliveryCompleteCount = u.DeliveryCompleteCount
		for _, b := range u.Batches {
			sb := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
			sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b.FirstOffset, b.LastOffset, int8(b.DeliveryState), b.DeliveryCount
			pt.StateBatches = append(pt.StateBatches, sb)
		}
		t.Partitions = append(t.Partitions, pt)
		req.Topics = append(req.Topics, t)
		resp, err := p.request(ctx, node, req)
		if err != nil {
			return err
		}
		for _, rt := range resp.(*kmsg.WriteShareGroupStateResponse).Topics {
			for _, rp := range rt.Partitions {
				if rt.TopicID == k.TopicID && rp.Partition == k.Partition {
					return answerError(rp.ErrorCode, rp.ErrorMessage, opWrite)
				}
			}
		}
		return missingPartition(k)
	})
}

// ReadSummary implements sharestate.Persister.
func (p *Persister) ReadSummary(ctx context.Context, k sharestate.Key) (sharestate.Summary, error) {
	var sum sharestate.Summary
	err := p.call(ctx, k, func(ctx context.Context) error {
		var err error
		sum, err = p.cfg.Local.ReadSummary(ctx, k)
		return err
	}, func(ctx context.Context, node int32) error {
		req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
		req.Version = 1 // DeliveryCompleteCount
		req.GroupID = k.GroupID
		t := kmsg.NewReadShareGroupStateSummaryRequestTopic()
		t.TopicID = k.TopicID
		pt := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
		pt.Partition, pt.LeaderEpoch = k.Partition, -1
		t.Partitions = append(t.Partitions, pt)
		req.Topics = append(req.Topics, t)
		resp, err := p.request(ctx, node, req)
		if err != nil {
			return err
		}
		for _, rt := range resp.(*kmsg.ReadShareGroupStateSummaryResponse).Topics {
			for _, rp := range rt.Partitions {
				if rt.TopicID != k.TopicID || rp.Partition != k.Partition {
					continue
				}
				if err := answerError(rp.ErrorCode, rp.ErrorMessage, ""); err != nil {
					return err
				}
				sum = sharestate.Summary{StateEpoch: rp.StateEpoch, LeaderEpoch: rp.LeaderEpoch, StartOffset: rp.StartOffset, DeliveryCompleteCount: rp.DeliveryCompleteCount}
				return nil
			}
		}
		return missingPartition(k)
	})
	return sum, err
}

// Delete implements sharestate.Persister.
func (p *Persister) Delete(ctx context.Context, k sharestate.Key) error {
	return p.call(ctx, k, func(ctx context.Context) error {
		return p.cfg.Local.Delete(ctx, k)
	}, func(ctx context.Context, node int32) error {
		req := kmsg.NewPtrDeleteShareGroupStateRequest()
		req.GroupID = k.GroupID
		t := kmsg.NewDeleteShareGroupStateRequestTopic()
		t.TopicID = k.TopicID
		pt := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
		pt.Partition = k.Partition
		t.Partitions = append(t.Partitions, pt)
		req.Topics = append(req.Topics, t)
		resp, err := p.request(ctx, node, req)
		if err != nil {
			return err
		}
		for _, rt := range resp.(*kmsg.DeleteShareGroupStateResponse).Topics {
			for _, rp := range rt.Partitions {
				if rt.TopicID == k.TopicID && rp.Partition == k.Partition {
					return answerError(rp.ErrorCode, rp.ErrorMessage, "")
				}
			}
		}
		return missingPartition(k)
	})
}

// call runs one operation at the share-partition's coordinator, retrying
// retriable errors with backoff until ctx ends.
func (p *Persister) call(ctx context.Context, k sharestate.Key, local func(context.Context) error, remote func(context.Context, int32) error) error {
	if k.GroupID == "" {
		return fmt.Errorf("%w: the group id is empty", kerr.InvalidRequest)
	}
	backoff := p.cfg.RetryBackoff
	for {
		err := p.attempt(ctx, k, local, remote)
		if err == nil || !retriable(err) {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w (gave up: %w)", err, ctx.Err())
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (gave up: %w)", err, ctx.Err())
		case <-t.C:
		}
		backoff = min(2*backoff, p.cfg.MaxRetryBackoff)
	}
}

func (p *Persister) attempt(ctx context.Context, k sharestate.Key, local func(context.Context) error, remote func(context.Context, int32) error) error {
	node, err := p.cfg.Coordinator(ctx, CoordinatorKey(k))
	if err != nil {
		return fmt.Errorf("find the share coordinator of %s: %w", CoordinatorKey(k), err)
	}
	if node == p.cfg.NodeID && p.cfg.Local != nil {
		return local(ctx)
	}
	if p.cfg.Peers == nil {
		return fmt.Errorf("%w: share coordinator %d is another broker and no peers are configured", kerr.CoordinatorNotAvailable, node)
	}
	return remote(ctx, node)
}

// request sends req to a share coordinator; a broker that cannot be
// reached is COORDINATOR_NOT_AVAILABLE (retriable: it may have failed and
// its partitions moved).
func (p *Persister) request(ctx context.Context, node int32, req kmsg.Request) (kmsg.Response, error) {
	resp, err := p.cfg.Peers.Request(ctx, node, req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: share coordinator %d: %w", kerr.CoordinatorNotAvailable, node, err)
	}
	return resp, nil
}

// retriable reports the errors after which the coordinator is looked up
// again.
func retriable(err error) bool {
	return errors.Is(err, kerr.NotCoordinator) || errors.Is(err, kerr.CoordinatorLoadInProgress) || errors.Is(err, kerr.CoordinatorNotAvailable)
}

// answerError is the error of a partition's answer: nil for none, the
// uninitialized share-partition error for its message under op.
func answerError(code int16, msg *string, op string) error {
	if code == 0 {
		return nil
	}
	e := kerr.ErrorForCode(code)
	if msg == nil {
		return e
	}
	if op != "" && e == kerr.InvalidRequest && *msg == uninitializedMessage(op) {
		return uninitializedError{op: op}
	}
	return fmt.Errorf("%w: %s", e, *msg)
}

func missingPartition(k sharestate.Key) error {
	return fmt.Errorf("%w: the share coordinator's answer lacks %s", kerr.UnknownServerError, CoordinatorKey(k))
}
