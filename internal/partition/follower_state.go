package partition

// This file is the follower's decisions for one partition (the follower
// half of Kafka's AbstractFetcherThread and Partition): what to do with one
// partition of the leader's answer to a replica fetch — append, truncate
// to where the two logs agree (KIP-320 diverging epoch), start over at the
// leader's log start, or give up until the metadata moves the partition —
// and, after an append, which high watermark and log start offset to adopt
// from the leader.
//
// Like LeaderState these are pure functions: no goroutines, no locks, no
// log writes. They read the follower's log through FollowerLog and return
// the action; the replica fetcher (internal/replica) carries it out on the
// log under the partition's lock.

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/internal/log"
)

// FollowerLog is what the follower's decisions read of its local log
// (*log.Log satisfies it).
type FollowerLog interface {
	LogStartOffset() int64
	LogEndOffset() int64
	HighWatermark() int64
	// EndOffsetForEpoch is the leader epoch cache's answer for epoch: the
	// largest epoch at or below it and where that epoch ends, or
	// log.UndefinedEpochOffset as the offset when it cannot say.
	EndOffsetForEpoch(epoch int32) (int32, int64)
}

// FetchAnswer is one partition of the leader's answer to a replica fetch.
type FetchAnswer struct {
	// Err is the partition's error (a kerr error), nil for none.
	Err            error
	HighWatermark  int64
	LogStartOffset int64
	// DivergingEpoch and DivergingEndOffset are the KIP-320 diverging
	// epoch; both -1 when the leader found no divergence.
	DivergingEpoch     int32
	DivergingEndOffset int64
}

// FollowerStep is what the follower does with a fetch answer.
type FollowerStep int8

const (
	// FollowerAppend: append the answer's complete batches, then adopt
	// the leader's offsets (AdoptLeaderOffsets).
	FollowerAppend FollowerStep = iota
	// FollowerTruncate: truncate the log to Offset (also when Offset is at
	// the log end: the epoch cache drops the epochs the leader lacks).
	FollowerTruncate
	// FollowerStartOver: the log is behind the leader's log start; empty
	// it and start at Offset.
	FollowerStartOver
	// FollowerFail: nothing to do until the metadata moves the partition
	// or the next fetch; Err says why.
	FollowerFail
)

func (s FollowerStep) String() string {
	switch s {
	case FollowerAppend:
		return "append"
	case FollowerTruncate:
		return "truncate"
	case FollowerStartOver:
		return "start-over"
	case FollowerFail:
		return "fail"
	}
	return "unknown"
}

// FollowerDecision is the follower's action on one fetch answer.
type FollowerDecision struct {
	Step FollowerStep
	// Offset is the truncation target (FollowerTruncate) or the new log
	// start (FollowerStartOver).
	Offset int64
	// Err is why a FollowerFail.
	Err error
}

// DecideFetchAnswer is the follower's decision on one partition's fetch
// answer, as Kafka's fetcher makes it:
//   - OFFSET_OUT_OF_RANGE: a log end below the leader's log start starts
//     over there (retention moved on); a log end above the leader's high
//     watermark truncates to it (an unclean leader lost what we hold);
//     otherwise it stays an error.
//   - another error (NOT_LEADER_OR_FOLLOWER, FENCED/UNKNOWN_LEADER_EPOCH):
//     nothing to do until the metadata moves the partition.
//   - a diverging epoch (KIP-320, AbstractFetcherThread's truncation
//     state): truncate to the leader's end of that epoch, or to our own
//     end of it if that is earlier; when our epoch cache lacks the
//     leader's epoch (it answers a lower one), to the end of our largest
//     epoch below it — what we hold past that is not the leader's, and
//     cutting to the leader's offset instead would keep records of an
//     epoch the leader never had and ask the same question for ever; with
//     no epoch history to compare, to the leader's offset.
//   - otherwise append.
func DecideFetchAnswer(l FollowerLog, a FetchAnswer) FollowerDecision {
	switch err := a.Err; {
	case err == nil:
	case errors.Is(err, kerr.OffsetOutOfRange):
		leo := l.LogEndOffset()
		if a.LogStartOffset >= 0 && leo < a.LogStartOffset {
			return FollowerDecision{Step: FollowerStartOver, Offset: a.LogStartOffset}
		}
		if a.HighWatermark >= 0 && leo > a.HighWatermark {
			return FollowerDecision{Step: FollowerTruncate, Offset: a.HighWatermark}
		}
		return FollowerDecision{Step: FollowerFail, Err: err}
	default:
		return FollowerDecision{Step: FollowerFail, Err: err}
	}
	if a.DivergingEpoch >= 0 && a.DivergingEndOffset >= 0 {
		target := a.DivergingEndOffset
		switch e, end := l.EndOffsetForEpoch(a.DivergingEpoch); {
		case end == log.UndefinedEpochOffset:
		case e != a.DivergingEpoch:
			target = end
		default:
			target = min(target, end)
		}
		return FollowerDecision{Step: FollowerTruncate, Offset: target}
	}
	return FollowerDecision{Step: FollowerAppend}
}

// LeaderOffsets is what a follower adopts from its leader after an append.
type LeaderOffsets struct {
	// HighWatermark is the follower's new high watermark, or -1 to keep
	// its own.
	HighWatermark int64
	// DeleteBefore is the offset before which the follower deletes
	// records to follow the leader's log start, or -1 for none.
	DeleteBefore int64
}

// AdoptLeaderOffsets is what the follower takes from the leader's answer
// once its batches are appended (l is the log after the append): the
// leader's high watermark, bounded by its own log end, when that raises
// its own (a follower's high watermark never goes back); and the leader's
// log start when it is ahead of the follower's, bounded by that high
// watermark (Kafka's maybeIncrementLogStartOffset on the follower).
func AdoptLeaderOffsets(l FollowerLog, a FetchAnswer) LeaderOffsets {
	out := LeaderOffsets{HighWatermark: -1, DeleteBefore: -1}
	hw := min(a.HighWatermark, l.LogEndOffset())
	if hw > l.HighWatermark() {
		out.HighWatermark = hw
	}
	if a.LogStartOffset > l.LogStartOffset() {
		out.DeleteBefore = min(a.LogStartOffset, hw)
	}
	return out
}
