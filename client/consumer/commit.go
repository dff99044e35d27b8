package consumer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Versions this client speaks to the group coordinator: the last ones
// before topic ids replaced topic names (OffsetCommit v10, OffsetFetch
// v10) and before the batched forms (FindCoordinator v4, OffsetFetch v8).
const (
	findCoordinatorVersion = 3
	offsetCommitVersion    = 8
	offsetFetchVersion     = 7
)

// commitReq is one queued CommitAsync.
type commitReq struct {
	offsets map[TopicPartition]OffsetAndMetadata
	cb      CommitCallback
}

var errNoGroup = errors.New("group.id is not set: there is no group to commit to or read commits from")

// enqueueCommitLocked queues an asynchronous commit for the committer.
func (e *engine) enqueueCommitLocked(c commitReq) {
	e.commits = append(e.commits, c)
	select {
	case e.commitWake <- struct{}{}:
	default:
	}
}

func (e *engine) commitAsync(offs map[TopicPartition]OffsetAndMetadata, cb CommitCallback) {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		if cb != nil {
			cb(offs, errClosed)
		}
		return
	}
	if e.cfg.GroupID == "" {
		e.mu.Unlock()
		if cb != nil {
			cb(offs, errNoGroup)
		}
		return
	}
	if offs == nil {
		offs = e.positionsLocked()
	}
	e.enqueueCommitLocked(commitReq{offsets: offs, cb: cb})
	e.mu.Unlock()
}

// commitLoop is the committer: it sends queued CommitAsync requests one
// after another, so they reach the coordinator in the order they were made.
func (e *engine) commitLoop() {
	defer e.wg.Done()
	for {
		select {
		case <-e.ctx.Done():
			return
		case <-e.commitWake:
		}
		for {
			e.mu.Lock()
			if len(e.commits) == 0 {
				e.mu.Unlock()
				break
			}
			c := e.commits[0]
			e.commits = e.commits[1:]
			e.mu.Unlock()
			ctx, cancel := context.WithTimeout(e.ctx, e.cfg.DefaultAPITimeout)
			err := e.commitSync(ctx, c.offsets)
			cancel()
			if c.cb != nil {
				c.cb(c.offsets, err)
			}
		}
	}
}

// maybeAutoCommitLocked queues a commit of the positions when
// auto.commit.interval.ms has passed; Poll calls it, as Kafka's does.
func (e *engine) maybeAutoCommitLocked() {
	if !e.cfg.EnableAutoCommit || time.Now().Before(e.nextAutoCommit) {
		return
	}
	e.nextAutoCommit = time.Now().Add(e.cfg.AutoCommitInterval)
	if offs := e.positionsLocked(); len(offs) > 0 {
		e.enqueueCommitLocked(commitReq{offsets: offs})
	}
}

// coordinator returns the group coordinator's node, finding it when not
// known.
func (e *engine) coordinator(ctx context.Context) (int32, error) {
	e.mu.Lock()
	node := e.coord
	e.mu.Unlock()
	if node >= 0 {
		return node, nil
	}
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.Version = findCoordinatorVersion
	req.CoordinatorKey = e.cfg.GroupID
	req.CoordinatorType = 0
	r, err := e.cl.Request(ctx, -1, req)
	if err != nil {
		return -1, fmt.Errorf("find coordinator: %w", err)
	}
	resp := r.(*kmsg.FindCoordinatorResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return -1, fmt.Errorf("find coordinator: %w", err)
	}
	// The coordinator is a broker of the cluster; make sure the client
	// knows its address.
	if err := e.cl.Refresh(ctx, nil); err != nil {
		return -1, err
	}
	e.mu.Lock()
	e.coord = resp.NodeID
	e.mu.Unlock()
	return resp.NodeID, nil
}

// coordinatorFailed forgets the coordinator after an error that says it
// moved or is unreachable.
func (e *engine) coordinatorFailed(err error) {
	if errors.Is(err, kerr.NotCoordinator) || errors.Is(err, kerr.CoordinatorNotAvailable) || !isKafkaErr(err) {
		e.mu.Lock()
		e.coord = -1
		e.mu.Unlock()
	}
}

func isKafkaErr(err error) bool {
	var ke *kerr.Error
	return errors.As(err, &ke)
}

// retryCoordinator runs op until it succeeds, fails with an error that is
// not retriable, or ctx ends; retriable errors (the coordinator moved or
// is loading, the connection dropped) back off for retry.backoff.ms.
func (e *engine) retryCoordinator(ctx context.Context, op func(ctx context.Context, node int32) error) error {
	for {
		node, err := e.coordinator(ctx)
		if err == nil {
			err = op(ctx, node)
			if err == nil {
				return nil
			}
		}
		e.coordinatorFailed(err)
		if isKafkaErr(err) && !isRetriable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
		case <-time.After(e.cfg.RetryBackoff):
		}
	}
}

// commitSync commits offs with OffsetCommit as a consumer outside the
// group's membership: generation -1 and no member id, as Kafka's consumer
// commits for a manual assignment. The coordinator refuses it with
// UNKNOWN_MEMBER_ID (or ILLEGAL_GENERATION) when the group has members.
func (e *engine) commitSync(ctx context.Context, offs map[TopicPartition]OffsetAndMetadata) error {
	if e.cfg.GroupID == "" {
		return errNoGroup
	}
	if len(offs) == 0 {
		return nil
	}
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = offsetCommitVersion
	req.Group = e.cfg.GroupID
	req.Generation = -1
	req.MemberID = ""
	idx := map[string]int{}
	for tp, om := range offs {
		i, ok := idx[tp.Topic]
		if !ok {
			i = len(req.Topics)
			idx[tp.Topic] = i
			t := kmsg.NewOffsetCommitRequestTopic()
			t.Topic = tp.Topic
			req.Topics = append(req.Topics, t)
		}
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Partition = tp.Partition
		p.Offset = om.Offset
		p.LeaderEpoch = om.epoch()
		p.Metadata = kmsg.StringPtr(om.Metadata)
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, p)
	}
	err := e.retryCoordinator(ctx, func(ctx context.Context, node int32) error {
		r, err := e.cl.Request(ctx, node, req)
		if err != nil {
			return err
		}
		var errs []error
		for _, t := range r.(*kmsg.OffsetCommitResponse).Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					errs = append(errs, fmt.Errorf("%s-%d: %w", t.Topic, p.Partition, err))
				}
			}
		}
		if len(errs) > 0 {
			// One error decides retrying: the partitions share a group.
			return fmt.Errorf("%w", errors.Join(errs...))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("commit offsets of group %s: %w", e.cfg.GroupID, err)
	}
	if e.onCommit != nil {
		e.onCommit(offs)
	}
	return nil
}

// fetchCommitted reads the group's committed offsets of tps; partitions
// with none are missing from the answer. Under read_committed it asks the
// coordinator to wait for pending transactional commits (require_stable,
// KIP-447), as Kafka's consumer does.
func (e *engine) fetchCommitted(ctx context.Context, tps []TopicPartition) (map[TopicPartition]OffsetAndMetadata, error) {
	if e.cfg.GroupID == "" {
		return nil, errNoGroup
	}
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = offsetFetchVersion
	req.Group = e.cfg.GroupID
	req.RequireStable = e.isolation == 1
	idx := map[string]int{}
	for _, tp := range tps {
		i, ok := idx[tp.Topic]
		if !ok {
			i = len(req.Topics)
			idx[tp.Topic] = i
			t := kmsg.NewOffsetFetchRequestTopic()
			t.Topic = tp.Topic
			req.Topics = append(req.Topics, t)
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, tp.Partition)
	}
	out := map[TopicPartition]OffsetAndMetadata{}
	err := e.retryCoordinator(ctx, func(ctx context.Context, node int32) error {
		r, err := e.cl.Request(ctx, node, req)
		if err != nil {
			return err
		}
		resp := r.(*kmsg.OffsetFetchResponse)
		if errors.Is(kerr.ErrorForCode(resp.ErrorCode), kerr.GroupIDNotFound) {
			// Kafka answers an unknown group with no offsets; some
			// brokers (kfake) with this error. Either way nothing is
			// committed.
			clear(out)
			return nil
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return err
		}
		clear(out)
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return fmt.Errorf("%s-%d: %w", t.Topic, p.Partition, err)
				}
				if p.Offset < 0 {
					continue // nothing committed
				}
				om := withEpoch(p.Offset, p.LeaderEpoch)
				if p.Metadata != nil {
					om.Metadata = *p.Metadata
				}
				out[TopicPartition{t.Topic, p.Partition}] = om
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("committed offsets of group %s: %w", e.cfg.GroupID, err)
	}
	return out, nil
}

// offsetsFor looks up offsets by timestamp for any partitions (assigned or
// not), retrying failed lookups after a metadata refresh until ctx ends.
func (e *engine) offsetsFor(ctx context.Context, q map[TopicPartition]int64) (map[TopicPartition]*OffsetAndTimestamp, error) {
	out := make(map[TopicPartition]*OffsetAndTimestamp, len(q))
	for {
		seen := map[string]bool{}
		var topics []string
		for tp := range q {
			if !seen[tp.Topic] {
				seen[tp.Topic] = true
				topics = append(topics, tp.Topic)
			}
		}
		err := e.cl.Refresh(ctx, topics)
		if err == nil {
			got, _ := e.listOffsets(ctx, q)
			for tp, ot := range got {
				if ot.Offset >= 0 {
					ot := ot
					out[tp] = &ot
				} else {
					out[tp] = nil // no record at or after the time
				}
				delete(q, tp)
			}
			if len(q) == 0 {
				return out, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("list offsets: %w", ctx.Err())
		case <-time.After(e.cfg.RetryBackoff):
		}
	}
}

func (e *engine) endOffsets(ctx context.Context, tps []TopicPartition, ts int64) (map[TopicPartition]int64, error) {
	q := make(map[TopicPartition]int64, len(tps))
	for _, tp := range tps {
		q[tp] = ts
	}
	got, err := e.offsetsFor(ctx, q)
	if err != nil {
		return nil, err
	}
	out := make(map[TopicPartition]int64, len(got))
	for tp, ot := range got {
		if ot != nil {
			out[tp] = ot.Offset
		}
	}
	return out, nil
}
