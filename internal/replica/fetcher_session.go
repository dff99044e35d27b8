package replica

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/log"
)

// followerSession is a fetcher's side of its fetch session with the leader
// (KIP-227, Kafka's FetchSessionHandler): after a full fetch opens it,
// each fetch names only the partitions whose fetch parameters changed
// since they were last sent (new ones included) and forgets those no
// longer followed; the leader reads the others with what it cached. Any
// session error, or a failed request, starts over with a full fetch.
// Only the fetcher's goroutine uses it.
type followerSession struct {
	id    int32
	epoch int32 // 0: the next fetch is full
	// sent are the parameters of the session's partitions as last sent.
	sent map[log.TopicPartition]kmsg.FetchRequestTopicPartition
}

// sameParams reports whether two fetch parameters of a partition are the
// same (what an incremental fetch need not repeat).
func sameParams(a, b *kmsg.FetchRequestTopicPartition) bool {
	return a.FetchOffset == b.FetchOffset && a.LogStartOffset == b.LogStartOffset &&
		a.PartitionMaxBytes == b.PartitionMaxBytes && a.CurrentLeaderEpoch == b.CurrentLeaderEpoch &&
		a.LastFetchedEpoch == b.LastFetchedEpoch
}

// fill sets req's session fields, topics and forgotten topics from the
// wanted partitions, and records what it sends.
func (s *followerSession) fill(req *kmsg.FetchRequest, want map[log.TopicPartition]kmsg.FetchRequestTopicPartition, order []log.TopicPartition) {
	req.SessionID, req.SessionEpoch = s.id, s.epoch
	full := s.epoch == 0
	if full || s.sent == nil {
		s.sent = make(map[log.TopicPartition]kmsg.FetchRequestTopicPartition, len(want))
	}
	byTopic := map[string]int{}
	for _, tp := range order {
		rp := want[tp]
		if prev, ok := s.sent[tp]; ok && !full && sameParams(&prev, &rp) {
			continue
		}
		s.sent[tp] = rp
		i, ok := byTopic[tp.Topic]
		if !ok {
			i = len(req.Topics)
			byTopic[tp.Topic] = i
			t := kmsg.NewFetchRequestTopic()
			t.Topic = tp.Topic
			req.Topics = append(req.Topics, t)
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	if full {
		return
	}
	forgotten := map[string]int{}
	for tp := range s.sent {
		if _, ok := want[tp]; ok {
			continue
		}
		delete(s.sent, tp)
		i, ok := forgotten[tp.Topic]
		if !ok {
			i = len(req.ForgottenTopics)
			forgotten[tp.Topic] = i
			ft := kmsg.NewFetchRequestForgottenTopic()
			ft.Topic = tp.Topic
			req.ForgottenTopics = append(req.ForgottenTopics, ft)
		}
		req.ForgottenTopics[i].Partitions = append(req.ForgottenTopics[i].Partitions, tp.Partition)
	}
}

// answered moves the session on after the leader's answer: on a session
// error it starts over (a full fetch closing the old session when the
// leader still has it); otherwise a full fetch's answer opens the session
// the leader gave (none: full fetches go on) and an incremental one moves
// the epoch.
func (s *followerSession) answered(resp *kmsg.FetchResponse) {
	switch resp.ErrorCode {
	case 0:
	case kerr.FetchSessionIDNotFound.Code:
		s.id, s.epoch = 0, 0
		return
	default:
		s.failed()
		return
	}
	if s.epoch == 0 {
		if resp.SessionID > 0 {
			s.id, s.epoch = resp.SessionID, 1
		} else {
			s.id = 0
		}
		return
	}
	s.epoch++
	if s.epoch < 0 {
		s.epoch = 1 // past the largest epoch: 1, as the leader counts
	}
}

// failed makes the next fetch a full one that closes the session, after a
// request that got no answer (its effect on the leader is unknown).
func (s *followerSession) failed() {
	s.epoch = 0
}
