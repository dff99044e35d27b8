package sharecoord

import (
	"sort"

	"gregor/internal/sharestate"
)

// combineBatches merges newer state batches into a share-partition's
// batches, as Kafka's PersisterStateBatchCombiner does: where batches
// overlap, each offset keeps the state of the batch with the higher
// delivery count, and at equal counts the higher delivery state (Available
// 0 < Acknowledged 2 < Archived 4): a record's persisted count and state
// only move forward, so a write that arrives late cannot undo a later one.
// Offsets below startOffset are dropped (startOffset -1 drops none), and
// adjacent batches of the same state and count are joined. The result is
// sorted and has no overlaps; the inputs are not modified.
func combineBatches(soFar, newer []sharestate.Batch, startOffset int64) []sharestate.Batch {
	var out []sharestate.Batch
	if disjoint(soFar) {
		out = append(out, soFar...)
	} else {
		for _, b := range soFar {
			out = paint(out, b)
		}
	}
	for _, b := range newer {
		out = paint(out, b)
	}
	merged := out[:0]
	for _, b := range out {
		if startOffset >= 0 {
			if b.LastOffset < startOffset {
				continue
			}
			b.FirstOffset = max(b.FirstOffset, startOffset)
		}
		if n := len(merged); n > 0 {
			last := &merged[n-1]
			if last.LastOffset+1 == b.FirstOffset && last.DeliveryState == b.DeliveryState && last.DeliveryCount == b.DeliveryCount {
				last.LastOffset = b.LastOffset
				continue
			}
		}
		merged = append(merged, b)
	}
	if len(merged) == 0 {
		return nil
	}
	return merged
}

// behind reports whether a's delivery is behind b's: a lower delivery
// count, or the same count and a lower state.
func behind(a, b sharestate.Batch) bool {
	if a.DeliveryCount != b.DeliveryCount {
		return a.DeliveryCount < b.DeliveryCount
	}
	return a.DeliveryState < b.DeliveryState
}

// paint lays b over the sorted, non-overlapping list: the offsets b covers
// take b's state unless the batch already there is ahead of it.
func paint(list []sharestate.Batch, b sharestate.Batch) []sharestate.Batch {
	i := sort.Search(len(list), func(k int) bool { return list[k].LastOffset >= b.FirstOffset })
	j := sort.Search(len(list), func(k int) bool { return list[k].FirstOffset > b.LastOffset })
	if i >= j {
		return insertAt(list, i, i, []sharestate.Batch{b})
	}
	piece := func(first, last int64, from sharestate.Batch) sharestate.Batch {
		from.FirstOffset, from.LastOffset = first, last
		return from
	}
	var pieces []sharestate.Batch
	next := b.FirstOffset
	for _, e := range list[i:j] {
		if e.FirstOffset < b.FirstOffset {
			pieces = append(pieces, piece(e.FirstOffset, b.FirstOffset-1, e))
		}
		start := max(e.FirstOffset, b.FirstOffset)
		if next < start {
			pieces = append(pieces, piece(next, start-1, b))
		}
		end := min(e.LastOffset, b.LastOffset)
		winner := b
		if behind(b, e) {
			winner = e
		}
		pieces = append(pieces, piece(start, end, winner))
		next = end + 1
		if e.LastOffset > b.LastOffset {
			pieces = append(pieces, piece(b.LastOffset+1, e.LastOffset, e))
		}
	}
	if next <= b.LastOffset {
		pieces = append(pieces, piece(next, b.LastOffset, b))
	}
	return insertAt(list, i, j, pieces)
}

// disjoint reports whether batches are sorted and do not overlap (the
// stored state always is).
func disjoint(batches []sharestate.Batch) bool {
	for k, b := range batches {
		if b.FirstOffset > b.LastOffset || k > 0 && batches[k-1].LastOffset >= b.FirstOffset {
			return false
		}
	}
	return true
}

// insertAt replaces list[i:j] with pieces; list is owned by the caller.
func insertAt(list []sharestate.Batch, i, j int, pieces []sharestate.Batch) []sharestate.Batch {
	if j == len(list) {
		return append(list[:i], pieces...)
	}
	out := make([]sharestate.Batch, 0, len(list)-(j-i)+len(pieces))
	out = append(out, list[:i]...)
	out = append(out, pieces...)
	return append(out, list[j:]...)
}
