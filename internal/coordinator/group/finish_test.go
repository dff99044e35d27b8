package group

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// deferringWriter appends but holds AfterCommit callbacks until the test
// commits or fails them; failAppend makes the append itself fail.
type deferringWriter struct {
	memWriter
	failAppend error
	pending    []func(error)
}

func (w *deferringWriter) Write(rs []Record) error {
	if w.failAppend != nil {
		return w.failAppend
	}
	return w.memWriter.Write(rs)
}

func (w *deferringWriter) AfterCommit(fn func(error)) { w.pending = append(w.pending, fn) }

func (w *deferringWriter) settle(err error) {
	for _, fn := range w.pending {
		fn(err)
	}
	w.pending = nil
}

func commitResult(got *[]kmsg.Response, failed bool) Result {
	resp := kmsg.NewPtrOffsetCommitResponse()
	t := kmsg.NewOffsetCommitResponseTopic()
	t.Topic = "t"
	t.Partitions = []kmsg.OffsetCommitResponseTopicPartition{{Partition: 0}, {Partition: 1}}
	resp.Topics = append(resp.Topics, t)
	to := func(r kmsg.Response) { *got = append(*got, r) }
	r := Result{Records: []Record{{Key: []byte("k"), Value: []byte("v")}}, Replies: []Reply{{To: to, Resp: resp}}}
	if failed {
		r.Failed = func(code int16) []Reply {
			e := kmsg.NewPtrOffsetCommitResponse()
			e.ThrottleMillis = -1 // marks Failed's reply
			return []Reply{{To: to, Resp: e}}
		}
	}
	return r
}

func partitionCodes(r kmsg.Response) []int16 {
	var out []int16
	for _, t := range r.(*kmsg.OffsetCommitResponse).Topics {
		for _, p := range t.Partitions {
			out = append(out, p.ErrorCode)
		}
	}
	return out
}

// TestFinishRepliesOnlyOnceCommitted: replies wait for the commit; a write
// whose commit fails (the shard moved away) or whose append fails is
// answered with errors, never the prepared success.
func TestFinishRepliesOnlyOnceCommitted(t *testing.T) {
	notCoordinator := func(error) int16 { return kerr.NotCoordinator.Code }

	var got []kmsg.Response
	w := &deferringWriter{}
	applied := false
	r := commitResult(&got, false)
	r.Apply = func() { applied = true }
	if err := Finish(w, r, notCoordinator); err != nil {
		t.Fatal(err)
	}
	if !applied || len(got) != 0 {
		t.Fatalf("after the append: applied %v, %d replies delivered (want applied, none)", applied, len(got))
	}
	w.settle(nil)
	if len(got) != 1 || partitionCodes(got[0])[0] != 0 {
		t.Fatalf("after the commit: %v", got)
	}

	got = nil
	Finish(w, commitResult(&got, false), notCoordinator)
	w.settle(errors.New("unloaded"))
	if len(got) != 1 {
		t.Fatalf("%d replies after a lost commit", len(got))
	}
	for _, c := range partitionCodes(got[0]) {
		if c != kerr.NotCoordinator.Code {
			t.Fatalf("lost commit answered with codes %v", partitionCodes(got[0]))
		}
	}

	got = nil
	Finish(w, commitResult(&got, true), notCoordinator)
	w.settle(errors.New("unloaded"))
	if len(got) != 1 || got[0].(*kmsg.OffsetCommitResponse).ThrottleMillis != -1 {
		t.Fatalf("lost commit with Failed: %v", got)
	}

	got = nil
	w.failAppend = kerr.NotEnoughReplicas
	applied = false
	r = commitResult(&got, false)
	r.Apply = func() { applied = true }
	if err := Finish(w, r, notCoordinator); err == nil {
		t.Fatal("failed append: no error")
	}
	if applied || len(got) != 1 || partitionCodes(got[0])[1] != kerr.NotCoordinator.Code {
		t.Fatalf("failed append: applied %v, replies %v", applied, got)
	}
}

func TestErrorRepliesSetsEveryCode(t *testing.T) {
	j := kmsg.NewPtrJoinGroupResponse()
	j.Members = []kmsg.JoinGroupResponseMember{{MemberID: "m", ProtocolMetadata: []byte{1, 2}}}
	errorReplies([]Reply{{Resp: j}}, kerr.CoordinatorNotAvailable.Code)
	if j.ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("JoinGroup code %d", j.ErrorCode)
	}
	h := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	errorReplies([]Reply{{Resp: h}}, kerr.NotCoordinator.Code)
	if h.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("ConsumerGroupHeartbeat code %d", h.ErrorCode)
	}
}
