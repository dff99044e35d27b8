package group

import (
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestShareGroupOffsetsAlterDescribeDelete(t *testing.T) {
	h := newShareHarness(t)
	topics := cghTopics(2)

	// Alter on an unused id makes an empty share group with a new epoch.
	epoch, code, _, r := h.s.AlterShareGroupOffsets("sg")
	if code != 0 || epoch != 1 {
		t.Fatalf("alter of a new group: epoch %d code %d", epoch, code)
	}
	if err := Finish(h.w, r, errCode); err != nil {
		t.Fatal(err)
	}
	if err := Finish(h.w, h.s.ShareGroupOffsetsAltered("sg", topicA, "a", []int32{1}), errCode); err != nil {
		t.Fatal(err)
	}
	got, code, _ := h.s.ShareGroupStateTopics("sg", false)
	want := []ShareStateTopic{{ID: topicA, Name: "a", Initialized: []int32{1}}}
	if code != 0 || !reflect.DeepEqual(got, want) {
		t.Fatalf("state topics %+v (code %d), want %+v", got, code, want)
	}

	// A member joining finds partition 1 initialized: only 0 is asked for,
	// with a state epoch above the alter's.
	h.hb(0, shgReq("m1", 0, "a"), topics)
	if len(h.inits) != 1 || !reflect.DeepEqual(h.inits[0].Partitions, []int32{0}) || h.inits[0].StateEpoch <= epoch {
		t.Fatalf("initializations after alter: %+v", h.inits)
	}
	// With a member, alter and delete are NON_EMPTY_GROUP; describe is not.
	if _, code, _, _ := h.s.AlterShareGroupOffsets("sg"); code != kerr.NonEmptyGroup.Code {
		t.Fatalf("alter of a non-empty group: %d", code)
	}
	if _, code, _ := h.s.ShareGroupStateTopics("sg", true); code != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete of a non-empty group: %d", code)
	}
	if got, code, _ := h.s.ShareGroupStateTopics("sg", false); code != 0 || !reflect.DeepEqual(got[0].Initialized, []int32{0, 1}) {
		t.Fatalf("describe of a non-empty group: %+v %d", got, code)
	}

	// Empty again: an alter takes a state epoch above every one used.
	h.hb(1, shgReq("m1", -1), topics)
	last := h.s.shares["sg"].epoch
	epoch, code, _, r = h.s.AlterShareGroupOffsets("sg")
	if code != 0 || epoch <= last || epoch <= h.inits[0].StateEpoch {
		t.Fatalf("alter of an emptied group: epoch %d (last %d) code %d", epoch, last, code)
	}
	if err := Finish(h.w, r, errCode); err != nil {
		t.Fatal(err)
	}
	code, r = h.s.ShareGroupOffsetsDeleted("sg", [][16]byte{topicA})
	if code != 0 {
		t.Fatalf("delete: %d", code)
	}
	if err := Finish(h.w, r, errCode); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := h.s.ShareGroupStateTopics("sg", true); len(got) != 0 {
		t.Fatalf("state topics after delete: %+v", got)
	}

	// The records replay to the same group.
	s2 := h.shard()
	for _, rec := range h.w.records {
		if err := s2.Replay(100, rec.Key, rec.Value); err != nil {
			t.Fatal(err)
		}
	}
	if s2.shares["sg"] == nil || s2.shares["sg"].epoch != epoch || len(s2.shares["sg"].initialized) != 0 {
		t.Fatalf("reloaded group: %+v", s2.shares["sg"])
	}

	// Other ids.
	if _, code, msg := h.s.ShareGroupStateTopics("nope", false); code != kerr.GroupIDNotFound.Code || msg != "Group nope not found." {
		t.Fatalf("unknown group: %d %q", code, msg)
	}
	if _, code, _, _ := h.s.AlterShareGroupOffsets(""); code != kerr.InvalidGroupID.Code {
		t.Fatalf("empty group id: %d", code)
	}
}
