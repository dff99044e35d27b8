package handlers

// DescribeLogDirs (key 35), v1-4 (v1 is Kafka 4.0's floor). For each log
// dir: its path, an error if it is offline, the size of every requested
// partition it holds (a null topic list means all), offset lag 0 (no future
// replicas yet), and total and usable bytes (v4).

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/network"
)

var describeLogDirsAPI = api{key: 35, min: 1, max: 4, handle: (*Handlers).describeLogDirs}

func (h *Handlers) describeLogDirs(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.DescribeLogDirsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	if !h.authorizedCluster(ctx, req, kmsg.ACLOperationDescribe) {
		// Kafka answers no log dirs (v3+: with the error).
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	wanted := func(string, int32) bool { return true }
	if r.Topics != nil {
		set := make(map[string]map[int32]bool)
		for _, t := range r.Topics {
			if set[t.Topic] == nil {
				set[t.Topic] = make(map[int32]bool)
			}
			for _, p := range t.Partitions {
				set[t.Topic][p] = true
			}
		}
		wanted = func(topic string, p int32) bool { return set[topic][p] }
	}
	for _, d := range h.d.Logs.DescribeDirs() {
		rd := kmsg.NewDescribeLogDirsResponseDir()
		rd.Dir = d.Path
		if d.Err != nil {
			// As Kafka: an offline dir is its error alone (sizes stay -1).
			rd.ErrorCode = kerr.KafkaStorageError.Code
		} else {
			rd.TotalBytes, rd.UsableBytes = d.TotalBytes, d.UsableBytes
		}
		byTopic := make(map[string]*kmsg.DescribeLogDirsResponseDirTopic)
		for _, p := range d.Partitions {
			if !wanted(p.TP.Topic, p.TP.Partition) {
				continue
			}
			t := byTopic[p.TP.Topic]
			if t == nil {
				nt := kmsg.NewDescribeLogDirsResponseDirTopic()
				nt.Topic = p.TP.Topic
				t = &nt
				byTopic[p.TP.Topic] = t
			}
			rp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			rp.Partition, rp.Size = p.TP.Partition, p.Size
			t.Partitions = append(t.Partitions, rp)
		}
		names := make([]string, 0, len(byTopic))
		for n := range byTopic {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			rd.Topics = append(rd.Topics, *byTopic[n])
		}
		resp.Dirs = append(resp.Dirs, rd)
	}
	return resp, nil
}
