// Package sharetest holds an in-memory sharestate.Persister for tests of
// the share-partition leader and its handlers: the persister's semantics
// (state epochs, leader epoch fencing, batches merged by offset) without
// the __share_group_state topic, and a switch to make its calls fail.
package sharetest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/internal/sharestate"
)

// Persister is an in-memory sharestate.Persister.
type Persister struct {
	mu     sync.Mutex
	states map[sharestate.Key]*sharestate.State
	fail   error
	writes int
}

// NewPersister returns an empty persister.
func NewPersister() *Persister {
	return &Persister{states: map[sharestate.Key]*sharestate.State{}}
}

// Fail makes every later call fail with err (nil: succeed again).
func (p *Persister) Fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fail = err
}

// Writes counts the successful writes.
func (p *Persister) Writes() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.writes
}

// State returns a copy of key's stored state.
func (p *Persister) State(key sharestate.Key) (sharestate.State, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st, ok := p.states[key]
	if !ok {
		return sharestate.State{}, false
	}
	c := *st
	c.Batches = slices.Clone(st.Batches)
	return c, true
}

// Initialize implements sharestate.Persister.
func (p *Persister) Initialize(_ context.Context, key sharestate.Key, stateEpoch int32, startOffset int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail != nil {
		return p.fail
	}
	if st, ok := p.states[key]; ok && stateEpoch <= st.StateEpoch {
		return fmt.Errorf("state epoch %d, stored %d: %w", stateEpoch, st.StateEpoch, kerr.FencedStateEpoch)
	}
	p.states[key] = &sharestate.State{StateEpoch: stateEpoch, LeaderEpoch: -1, StartOffset: startOffset}
	return nil
}

func (p *Persister) fenced(key sharestate.Key, leaderEpoch int32) (*sharestate.State, error) {
	if p.fail != nil {
		return nil, p.fail
	}
	st, ok := p.states[key]
	if !ok {
		return nil, fmt.Errorf("share-partition %v: %w", key, kerr.UnknownTopicOrPartition)
	}
	if leaderEpoch < st.LeaderEpoch {
		return nil, fmt.Errorf("leader epoch %d, stored %d: %w", leaderEpoch, st.LeaderEpoch, kerr.FencedLeaderEpoch)
	}
	return st, nil
}

// Read implements sharestate.Persister.
func (p *Persister) Read(_ context.Context, key sharestate.Key, leaderEpoch int32) (sharestate.State, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st, err := p.fenced(key, leaderEpoch)
	if err != nil {
		return sharestate.State{}, err
	}
	st.LeaderEpoch = leaderEpoch
	c := *st
	c.Batches = slices.Clone(st.Batches)
	return c, nil
}

// Write implements sharestate.Persister: the update's batches replace the
// stored states of the offsets they cover, and offsets below the start
// offset are dropped.
func (p *Persister) Write(_ context.Context, key sharestate.Key, u sharestate.Update) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	st, err := p.fenced(key, u.LeaderEpoch)
	if err != nil {
		return err
	}
	if u.StateEpoch != st.StateEpoch {
		return fmt.Errorf("state epoch %d, stored %d: %w", u.StateEpoch, st.StateEpoch, kerr.FencedStateEpoch)
	}
	var merged []sharestate.Batch
	for _, old := range st.Batches {
		for _, b := range u.Batches {
			if b.LastOffset < old.FirstOffset || b.FirstOffset > old.LastOffset {
				continue
			}
			if old.FirstOffset < b.FirstOffset {
				head := old
				head.LastOffset = b.FirstOffset - 1
				merged = append(merged, head)
			}
			old.FirstOffset = b.LastOffset + 1
			if old.FirstOffset > old.LastOffset {
				break
			}
		}
		if old.FirstOffset <= old.LastOffset {
			merged = append(merged, old)
		}
	}
	merged = append(merged, u.Batches...)
	slices.SortFunc(merged, func(a, b sharestate.Batch) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })
	kept := merged[:0]
	for _, b := range merged {
		if b.LastOffset < u.StartOffset {
			continue
		}
		b.FirstOffset = max(b.FirstOffset, u.StartOffset)
		kept = append(kept, b)
	}
	st.LeaderEpoch, st.StartOffset, st.DeliveryCompleteCount, st.Batches = u.LeaderEpoch, u.StartOffset, u.DeliveryCompleteCount, kept
	p.writes++
	return nil
}

// ReadSummary implements sharestate.Persister.
func (p *Persister) ReadSummary(_ context.Context, key sharestate.Key) (sharestate.Summary, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail != nil {
		return sharestate.Summary{}, p.fail
	}
	st, ok := p.states[key]
	if !ok {
		return sharestate.Summary{}, fmt.Errorf("share-partition %v: %w", key, kerr.UnknownTopicOrPartition)
	}
	return sharestate.Summary{StateEpoch: st.StateEpoch, LeaderEpoch: st.LeaderEpoch, StartOffset: st.StartOffset, DeliveryCompleteCount: st.DeliveryCompleteCount}, nil
}

// Delete implements sharestate.Persister.
func (p *Persister) Delete(_ context.Context, key sharestate.Key) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail != nil {
		return p.fail
	}
	delete(p.states, key)
	return nil
}

var _ sharestate.Persister = (*Persister)(nil)
