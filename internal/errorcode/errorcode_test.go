package errorcode

import (
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestWalkFindsAndSetsEveryCode(t *testing.T) {
	resp := kmsg.NewPtrOffsetCommitResponse()
	tp := kmsg.NewOffsetCommitResponseTopic()
	tp.Partitions = []kmsg.OffsetCommitResponseTopicPartition{{ErrorCode: 0}, {ErrorCode: 7}}
	resp.Topics = append(resp.Topics, tp)
	var seen []int64
	Walk(resp, func(f reflect.Value) { seen = append(seen, f.Int()) })
	if !reflect.DeepEqual(seen, []int64{0, 7}) {
		t.Fatalf("walked %v", seen)
	}
	Walk(resp, func(f reflect.Value) { f.SetInt(15) })
	for _, p := range resp.Topics[0].Partitions {
		if p.ErrorCode != 15 {
			t.Fatalf("not set: %+v", p)
		}
	}
	j := kmsg.NewPtrJoinGroupResponse()
	j.Members = []kmsg.JoinGroupResponseMember{{ProtocolMetadata: []byte{1}}}
	Walk(j, func(f reflect.Value) { f.SetInt(14) })
	if j.ErrorCode != 14 {
		t.Fatalf("JoinGroup code %d", j.ErrorCode)
	}
}
