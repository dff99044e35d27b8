package logdirs

import (
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

func dir(broker int32, sizes map[int32]int64) kadm.DescribedLogDirs {
	parts := map[int32]kadm.DescribedLogDirPartition{}
	for p, s := range sizes {
		parts[p] = kadm.DescribedLogDirPartition{Broker: broker, Dir: "/d", Topic: "t", Partition: p, Size: s}
	}
	return kadm.DescribedLogDirs{"/d": {Broker: broker, Dir: "/d", Topics: kadm.DescribedLogDirTopics{"t": parts}}}
}

func TestPartitionSizes(t *testing.T) {
	tds := kadm.TopicDetails{"t": {Topic: "t", Partitions: kadm.PartitionDetails{
		0: {Partition: 0, Leader: 1, Replicas: []int32{1, 2, 3}},
		1: {Partition: 1, Leader: 2, Replicas: []int32{2, 3, 1}},
		2: {Partition: 2, Leader: 3, Replicas: []int32{3, 1, 2}},
		3: {Partition: 3, Leader: -1, Replicas: []int32{1, 2}},
		4: {Partition: 4, Leader: 3, Replicas: []int32{3}},
	}}}
	for _, tc := range []struct {
		name string
		dirs kadm.DescribedAllLogDirs
		want map[int32]int64
	}{
		{
			name: "every broker answered: the leaders' copies",
			dirs: kadm.DescribedAllLogDirs{
				1: dir(1, map[int32]int64{0: 100, 1: 90, 2: 80, 3: 5}),
				2: dir(2, map[int32]int64{0: 99, 1: 200, 2: 79, 3: 7}),
				3: dir(3, map[int32]int64{0: 98, 1: 199, 2: 300, 4: 40}),
			},
			// Partition 3 has no leader: the largest copy.
			want: map[int32]int64{0: 100, 1: 200, 2: 300, 3: 7, 4: 40},
		},
		{
			name: "broker 3 down: its partitions from the largest copy left",
			dirs: kadm.DescribedAllLogDirs{
				1: dir(1, map[int32]int64{0: 100, 1: 90, 2: 80}),
				2: dir(2, map[int32]int64{0: 99, 1: 200, 2: 79}),
			},
			// Partition 4 had its only copy on broker 3: absent.
			want: map[int32]int64{0: 100, 1: 200, 2: 80},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := PartitionSizes(tc.dirs, tds)["t"]
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("sizes %v, want %v", got, tc.want)
			}
		})
	}
}

// A directory that failed to be described tells nothing, and a topic not
// asked about is left out.
func TestPartitionSizesSkipsFailedDirsAndOtherTopics(t *testing.T) {
	tds := kadm.TopicDetails{"t": {Topic: "t", Partitions: kadm.PartitionDetails{0: {Partition: 0, Leader: 1}}}}
	failed := dir(1, map[int32]int64{0: 100})
	d := failed["/d"]
	d.Err = errFailed{}
	failed["/d"] = d
	other := dir(2, map[int32]int64{0: 5})
	other["/d"].Topics["u"] = other["/d"].Topics["t"]
	got := PartitionSizes(kadm.DescribedAllLogDirs{1: failed, 2: other}, tds)
	if want := map[string]map[int32]int64{"t": {0: 5}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("sizes %v, want %v", got, want)
	}
}

type errFailed struct{}

func (errFailed) Error() string { return "KAFKA_STORAGE_ERROR" }
