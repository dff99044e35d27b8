package replica

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/log"
)

func TestFollowerSession(t *testing.T) {
	a, b, c := log.TopicPartition{Topic: "t", Partition: 0}, log.TopicPartition{Topic: "t", Partition: 1}, log.TopicPartition{Topic: "u", Partition: 0}
	param := func(tp log.TopicPartition, offset int64) kmsg.FetchRequestTopicPartition {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = tp.Partition, offset, 1<<20
		return rp
	}
	var s followerSession
	// fetch builds one request from the wanted offsets and returns what it
	// named and forgot.
	fetch := func(offsets map[log.TopicPartition]int64) (req *kmsg.FetchRequest, named, forgot []string) {
		want := map[log.TopicPartition]kmsg.FetchRequestTopicPartition{}
		var order []log.TopicPartition
		for _, tp := range []log.TopicPartition{a, b, c} {
			if off, ok := offsets[tp]; ok {
				want[tp] = param(tp, off)
				order = append(order, tp)
			}
		}
		req = kmsg.NewPtrFetchRequest()
		s.fill(req, want, order)
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				named = append(named, log.TopicPartition{Topic: t.Topic, Partition: p.Partition}.String())
			}
		}
		for _, t := range req.ForgottenTopics {
			for _, p := range t.Partitions {
				forgot = append(forgot, log.TopicPartition{Topic: t.Topic, Partition: p}.String())
			}
		}
		return req, named, forgot
	}
	answer := func(id int32, code int16) {
		resp := kmsg.NewPtrFetchResponse()
		resp.SessionID, resp.ErrorCode = id, code
		s.answered(resp)
	}
	check := func(what string, req *kmsg.FetchRequest, id, epoch int32, named, wantNamed, forgot, wantForgot []string) {
		t.Helper()
		if req.SessionID != id || req.SessionEpoch != epoch || !slices.Equal(named, wantNamed) || !slices.Equal(forgot, wantForgot) {
			t.Fatalf("%s: session %d epoch %d named %v forgot %v; want session %d epoch %d named %v forgot %v",
				what, req.SessionID, req.SessionEpoch, named, forgot, id, epoch, wantNamed, wantForgot)
		}
	}
	ts := func(tps ...log.TopicPartition) []string {
		var out []string
		for _, tp := range tps {
			out = append(out, tp.String())
		}
		return out
	}

	req, named, forgot := fetch(map[log.TopicPartition]int64{a: 0, b: 0})
	check("first", req, 0, 0, named, ts(a, b), forgot, nil)
	answer(7, 0)
	req, named, forgot = fetch(map[log.TopicPartition]int64{a: 0, b: 5})
	check("b moved", req, 7, 1, named, ts(b), forgot, nil)
	answer(7, 0)
	req, named, forgot = fetch(map[log.TopicPartition]int64{b: 5, c: 0})
	check("a gone, c new", req, 7, 2, named, ts(c), forgot, ts(a))
	answer(7, 0)
	req, named, forgot = fetch(map[log.TopicPartition]int64{b: 5, c: 0})
	check("nothing moved", req, 7, 3, named, nil, forgot, nil)

	// The request got no answer: a full fetch closing the session.
	s.failed()
	req, named, _ = fetch(map[log.TopicPartition]int64{b: 5, c: 0})
	check("after a failure", req, 7, 0, named, ts(b, c), nil, nil)
	answer(9, 0)
	req, _, _ = fetch(map[log.TopicPartition]int64{b: 5, c: 0})
	check("new session", req, 9, 1, nil, nil, nil, nil)

	// Epoch refused: full, closing; session unknown: full, without id.
	answer(0, kerr.InvalidFetchSessionEpoch.Code)
	req, named, _ = fetch(map[log.TopicPartition]int64{b: 5})
	check("after INVALID_FETCH_SESSION_EPOCH", req, 9, 0, named, ts(b), nil, nil)
	answer(0, kerr.FetchSessionIDNotFound.Code)
	req, named, _ = fetch(map[log.TopicPartition]int64{b: 5})
	check("after FETCH_SESSION_ID_NOT_FOUND", req, 0, 0, named, ts(b), nil, nil)

	// The leader has no room: full fetches go on.
	answer(0, 0)
	req, named, _ = fetch(map[log.TopicPartition]int64{b: 5})
	check("no session granted", req, 0, 0, named, ts(b), nil, nil)
}
