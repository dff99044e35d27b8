package log

import (
	"slices"

	"gregor/internal/record"
)

// cleanedTxnState is what a clean knows about transactions while it walks
// the log in offset order (Kafka's CleanedTransactionMetadata):
//
//   - the aborted transactions (from the transaction indexes) whose first
//     offset has been passed are "ongoing aborted": their producer's
//     transactional batches are dropped (and never enter the offset map);
//   - other transactional batches belong to committed transactions and are
//     cleaned like any batch;
//   - an ABORT marker whose transaction still had batches in this pass is
//     kept, and its entry goes into the cleaned segment's transaction index;
//     otherwise (and a COMMIT marker whose transaction had no batch in this
//     pass, and an emptied control batch) the marker may go: it is first
//     stamped with a delete horizon (now + delete.retention.ms) and dropped
//     by a clean past that horizon, so that a consumer part way through the
//     transaction still sees it.
type cleanedTxnState struct {
	// pending are aborted transactions not yet reached, by first offset.
	pending          []AbortedTxn
	ongoingAborted   map[int64]*abortedTxnProgress
	ongoingCommitted map[int64]bool
	// cleanedIndex receives the kept aborted transactions; nil while the
	// offset map is built.
	cleanedIndex *txnIndex
}

type abortedTxnProgress struct {
	txn     AbortedTxn
	sawData bool
}

func newCleanedTxnState(cleanedIndex *txnIndex) *cleanedTxnState {
	return &cleanedTxnState{ongoingAborted: map[int64]*abortedTxnProgress{}, ongoingCommitted: map[int64]bool{}, cleanedIndex: cleanedIndex}
}

// add queues aborted transactions found for the next segment; the same
// transaction may come again from each segment it spans.
func (s *cleanedTxnState) add(txns []AbortedTxn) {
	s.pending = append(s.pending, txns...)
	slices.SortStableFunc(s.pending, func(a, b AbortedTxn) int {
		switch {
		case a.FirstOffset < b.FirstOffset:
			return -1
		case a.FirstOffset > b.FirstOffset:
			return 1
		}
		return 0
	})
}

// consumeUpTo makes the aborted transactions that began at or before offset
// ongoing.
func (s *cleanedTxnState) consumeUpTo(offset int64) {
	n := 0
	for n < len(s.pending) && s.pending[n].FirstOffset <= offset {
		a := s.pending[n]
		if _, ok := s.ongoingAborted[a.ProducerID]; !ok {
			s.ongoingAborted[a.ProducerID] = &abortedTxnProgress{txn: a}
		}
		n++
	}
	s.pending = s.pending[n:]
}

// onDataBatch reports whether a data batch belongs to an aborted
// transaction, which makes it discardable.
func (s *cleanedTxnState) onDataBatch(h record.BatchHeader) bool {
	s.consumeUpTo(h.LastOffset())
	if !h.IsTransactional() {
		return false
	}
	if p, ok := s.ongoingAborted[h.ProducerID]; ok {
		p.sawData = true
		return true
	}
	s.ongoingCommitted[h.ProducerID] = true
	return false
}

// onControlBatch reports whether a control batch may be discarded (once its
// delete horizon passed); marker is nil for an emptied batch or a control
// record that is no transaction marker (ok reports which).
func (s *cleanedTxnState) onControlBatch(h record.BatchHeader, marker *endTxnMarker, empty bool) (bool, error) {
	s.consumeUpTo(h.LastOffset())
	if empty {
		return true, nil
	}
	if marker == nil {
		return false, nil
	}
	if marker.commit {
		committed := s.ongoingCommitted[h.ProducerID]
		delete(s.ongoingCommitted, h.ProducerID)
		return !committed, nil
	}
	p, ok := s.ongoingAborted[h.ProducerID]
	delete(s.ongoingAborted, h.ProducerID)
	if ok && p.sawData {
		if s.cleanedIndex != nil {
			if err := s.cleanedIndex.append(p.txn); err != nil {
				return false, err
			}
		}
		return false, nil
	}
	return true, nil
}

// addSegment queues the aborted transactions that may touch segs[i] (Kafka
// collects them from the segment's base offset to the next segment's).
func (s *cleanedTxnState) addSegment(segs []*segment, i int) error {
	upper := int64(0)
	if i+1 < len(segs) {
		upper = segs[i+1].baseOffset
	} else {
		next, err := segs[i].readNextOffset()
		if err != nil {
			return err
		}
		upper = next
	}
	txns, err := collectAbortedTxns(segs, i, segs[i].baseOffset, upper)
	if err != nil {
		return err
	}
	s.add(txns)
	return nil
}

// lastMarkerEpochs returns, per producer whose state holds no data batch,
// its epoch: the producer's last entry in the log is a marker that must stay
// (at least as an empty batch) for fencing (Kafka's
// isBatchLastRecordOfProducer, case 3).
func (l *Log) lastMarkerEpochs() map[int64]int16 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[int64]int16{}
	if l.producers == nil {
		return out
	}
	for id, e := range l.producers.producers {
		if e.isEmpty() {
			out[id] = e.epoch
		}
	}
	return out
}
