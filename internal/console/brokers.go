package console

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// brokerPage is /api/brokers/{id}: one broker as DescribeCluster lists
// it (fenced ones included), a page of the partitions it hosts, its log
// directories (DescribeLogDirs, sent to it) and its configs
// (DescribeConfigs of the BROKER resource). A fenced or unreachable
// broker still has its partitions listed, from the metadata; its log dirs
// and configs show why they are missing.
type brokerPage struct {
	brokerView
	Controller   bool                      `json:"controller"` // the metadata quorum's leader
	ControllerID int32                     `json:"controllerId"`
	Partitions   page[brokerPartitionView] `json:"partitions"`
	LogDirs      []logDirView              `json:"logDirs"`
	LogDirsError string                    `json:"logDirsError,omitempty"`
	Configs      []configView              `json:"configs"`
	ConfigsError string                    `json:"configsError,omitempty"`
}

// brokerPartitionView is a partition the broker hosts a replica of.
type brokerPartitionView struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Role      string `json:"role"` // leader or follower
	Leader    int32  `json:"leader"`
	InSync    bool   `json:"inSync"`
	Offline   bool   `json:"offline"` // the replica is in the partition's offline replicas
	Size      int64  `json:"size"`    // of this broker's copy, -1 when its log dirs are unknown
}

// logDirView is one of the broker's log.dirs.
type logDirView struct {
	Path        string `json:"path"`
	Error       string `json:"error,omitempty"` // e.g. KAFKA_STORAGE_ERROR for a failed directory
	Partitions  int    `json:"partitions"`
	Size        int64  `json:"size"`
	TotalBytes  int64  `json:"totalBytes"`  // the volume's, -1 unreported
	UsableBytes int64  `json:"usableBytes"` // the volume's, -1 unreported
}

// brokerAskTimeout bounds each request the broker page sends to the
// broker itself (DescribeLogDirs, DescribeConfigs).
const brokerAskTimeout = 3 * time.Second

// brokerPartitionSorts are the keys a broker's partitions sort by; the
// tiebreak is topic then partition.
var brokerPartitionSorts = sorter[brokerPartitionView]{
	"topic": func(a, b brokerPartitionView) int { return 0 },
	"role":  func(a, b brokerPartitionView) int { return cmp.Compare(a.Role, b.Role) },
	"size":  func(a, b brokerPartitionView) int { return cmp.Compare(a.Size, b.Size) },
}

func (c *Console) brokerDetail(ctx context.Context, r *http.Request, cl *kgo.Client) (any, error) {
	id64, err := strconv.ParseInt(r.PathValue("id"), 10, 32)
	if err != nil {
		return nil, badRequest("broker id %q is not a number", r.PathValue("id"))
	}
	id := int32(id64)
	lq, err := parseListQuery(r, slices.Sorted(maps.Keys(brokerPartitionSorts)), "topic")
	if err != nil {
		return nil, err
	}
	resp, err := describeCluster(ctx, cl)
	if err != nil {
		return nil, err
	}
	v := &brokerPage{ControllerID: -1, LogDirs: []logDirView{}, Configs: []configView{}}
	found := false
	for _, b := range resp.Brokers {
		if b.NodeID == id {
			found = true
			v.brokerView = brokerView{ID: b.NodeID, Host: b.Host, Port: b.Port, Fenced: b.IsFenced}
			if b.Rack != nil {
				v.Rack = *b.Rack
			}
		}
	}
	if !found {
		return nil, notFound("broker %d is not registered", id)
	}
	if q, err := describeQuorum(ctx, cl); err == nil {
		v.ControllerID, v.Controller = q.LeaderID, q.LeaderID == id
	}

	adm := kadm.NewClient(cl)
	sizes := map[string]map[int32]int64{}
	// Log dirs and configs are asked of the broker itself: a broker that
	// is down (killed, not yet fenced) would hold the page for the
	// client's retries, so each ask is bounded on its own.
	askCtx, cancel := context.WithTimeout(ctx, brokerAskTimeout)
	dirs, err := adm.DescribeBrokerLogDirs(askCtx, id, nil)
	cancel()
	if err != nil {
		v.LogDirsError = err.Error()
	}
	for _, d := range dirs.Sorted() {
		dv := logDirView{Path: d.Dir, TotalBytes: d.TotalBytes, UsableBytes: d.UsableBytes}
		if d.Err != nil {
			dv.Error = d.Err.Error()
		}
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			dv.Partitions++
			dv.Size += p.Size
			if sizes[p.Topic] == nil {
				sizes[p.Topic] = map[int32]int64{}
			}
			sizes[p.Topic][p.Partition] += p.Size
		})
		v.LogDirs = append(v.LogDirs, dv)
	}

	tds, err := adm.ListTopicsWithInternal(ctx)
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	rows := []brokerPartitionView{}
	for _, td := range tds {
		if td.Err != nil || !lq.matches(td.Topic) {
			continue
		}
		for _, p := range td.Partitions {
			if !slices.Contains(p.Replicas, id) {
				continue
			}
			row := brokerPartitionView{Topic: td.Topic, Partition: p.Partition, Role: "follower", Leader: p.Leader,
				InSync: slices.Contains(p.ISR, id), Offline: slices.Contains(p.OfflineReplicas, id), Size: -1}
			if p.Leader == id {
				row.Role = "leader"
			}
			if s, ok := sizes[td.Topic][p.Partition]; ok {
				row.Size = s
			}
			rows = append(rows, row)
		}
	}
	v.Partitions = paginate(rows, lq, brokerPartitionSorts, func(p brokerPartitionView) string {
		// Partitions of a topic in numeric order: zero-padded.
		return fmt.Sprintf("%s\x00%010d", p.Topic, p.Partition)
	})

	askCtx, cancel = context.WithTimeout(ctx, brokerAskTimeout)
	rcs, err := adm.DescribeBrokerConfigs(askCtx, id)
	cancel()
	if err == nil {
		var rc kadm.ResourceConfig
		if rc, err = rcs.On(strconv.Itoa(int(id)), nil); err == nil {
			err = rc.Err
		}
		if err == nil {
			v.Configs = configViews(rc)
		}
	}
	if err != nil {
		v.ConfigsError = err.Error()
	}
	return v, nil
}

// describeCluster lists the brokers, fenced ones included (DescribeCluster
// v2; older brokers list the unfenced only).
func describeCluster(ctx context.Context, cl *kgo.Client) (*kmsg.DescribeClusterResponse, error) {
	req := kmsg.NewPtrDescribeClusterRequest()
	req.IncludeFencedBrokers = true
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("describe cluster: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("describe cluster: %w", err)
	}
	return resp, nil
}
