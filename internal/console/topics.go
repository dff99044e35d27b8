package console

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/internal/logdirs"
)

// topicSummary is one row of /api/topics.
type topicSummary struct {
	Name              string `json:"name"`
	ID                string `json:"id"`
	Internal          bool   `json:"internal"`
	Partitions        int    `json:"partitions"`
	ReplicationFactor int    `json:"replicationFactor"`
	UnderReplicated   int    `json:"underReplicated"`
	Offline           int    `json:"offline"`
	// Records is the sum over partitions of end - start offset: the
	// records a consumer from the beginning would read, give or take
	// compacted-away records and transaction markers.
	Records int64 `json:"records"`
	// Size is the bytes of one copy of the topic (-1 when the brokers do
	// not answer DescribeLogDirs).
	Size int64 `json:"size"`
}

// partitionView is one partition of /api/topics/{topic}.
type partitionView struct {
	Partition   int32   `json:"partition"`
	Leader      int32   `json:"leader"`
	LeaderEpoch int32   `json:"leaderEpoch"`
	Replicas    []int32 `json:"replicas"`
	ISR         []int32 `json:"isr"`
	Offline     []int32 `json:"offlineReplicas"`
	StartOffset int64   `json:"startOffset"` // -1 when unknown
	EndOffset   int64   `json:"endOffset"`   // the high watermark; -1 when unknown
	Size        int64   `json:"size"`        // the leader's copy; -1 when unknown
	Error       string  `json:"error,omitempty"`
}

type configView struct {
	Name      string `json:"name"`
	Value     string `json:"value"`
	Source    string `json:"source"` // Kafka's ConfigSource name, e.g. DYNAMIC_TOPIC_CONFIG
	Sensitive bool   `json:"sensitive"`
}

// topicGroupView is a group with committed offsets on the topic.
type topicGroupView struct {
	Group string `json:"group"`
	State string `json:"state"`
	Lag   int64  `json:"lag"` // summed over the topic's partitions with a commit
}

type topicView struct {
	topicSummary
	PartitionList []partitionView  `json:"partitionList"`
	Configs       []configView     `json:"configs"`
	Groups        []topicGroupView `json:"groups"`
}

// offsetsAndSizes are what a topic's rows need besides metadata.
type offsetsAndSizes struct {
	starts, ends kadm.ListedOffsets
	sizes        map[string]map[int32]int64 // logdirs.PartitionSizes
}

func (c *Console) loadOffsetsAndSizes(ctx context.Context, adm *kadm.Client, tds kadm.TopicDetails) offsetsAndSizes {
	var o offsetsAndSizes
	names := tds.Names()
	if len(names) == 0 {
		return o
	}
	// Offsets and sizes are best effort: a partition without a leader
	// (its broker down, an election under way) or whose brokers did not
	// answer DescribeLogDirs (down, or not supporting it) shows none, and
	// the others still show theirs.
	o.starts, _ = adm.ListStartOffsets(ctx, names...)
	o.ends, _ = adm.ListEndOffsets(ctx, names...)
	dirs, _ := adm.DescribeAllLogDirs(ctx, tds.TopicsSet())
	o.sizes = logdirs.PartitionSizes(dirs, tds)
	return o
}

func summarize(td kadm.TopicDetail, o offsetsAndSizes) topicSummary {
	s := topicSummary{
		Name: td.Topic, Internal: td.IsInternal, Partitions: len(td.Partitions),
		// Topic ids print as Kafka's Uuid.toString: URL-safe base64.
		ID:   base64.RawURLEncoding.EncodeToString(td.ID[:]),
		Size: -1,
	}
	sizes, haveSizes := o.sizes[td.Topic]
	if haveSizes {
		s.Size = 0
	}
	for _, p := range td.Partitions {
		s.ReplicationFactor = max(s.ReplicationFactor, len(p.Replicas))
		if len(p.ISR) < len(p.Replicas) {
			s.UnderReplicated++
		}
		if p.Leader < 0 {
			s.Offline++
		}
		start, okS := o.starts.Lookup(td.Topic, p.Partition)
		end, okE := o.ends.Lookup(td.Topic, p.Partition)
		if okS && okE && start.Err == nil && end.Err == nil && end.Offset > start.Offset {
			s.Records += end.Offset - start.Offset
		}
		if haveSizes {
			s.Size += sizes[p.Partition]
		}
	}
	return s
}

// topicSorts are the keys /api/topics sorts by: what Metadata tells of
// every topic. Records and size need ListOffsets and DescribeLogDirs, asked
// for the page's topics only.
var topicSorts = sorter[topicSummary]{
	"name":              func(a, b topicSummary) int { return 0 },
	"partitions":        func(a, b topicSummary) int { return cmp.Compare(a.Partitions, b.Partitions) },
	"replicationFactor": func(a, b topicSummary) int { return cmp.Compare(a.ReplicationFactor, b.ReplicationFactor) },
	"underReplicated":   func(a, b topicSummary) int { return cmp.Compare(a.UnderReplicated, b.UnderReplicated) },
	"offline":           func(a, b topicSummary) int { return cmp.Compare(a.Offline, b.Offline) },
}

// topics is /api/topics: a page of the topics (lists.go), internal ones
// only with ?internal=true. One Metadata request names and describes
// every topic; offsets and sizes are asked for the page's topics only.
func (c *Console) topics(ctx context.Context, r *http.Request, cl *kgo.Client) (any, error) {
	lq, err := parseListQuery(r, slices.Sorted(maps.Keys(topicSorts)), "name")
	if err != nil {
		return nil, err
	}
	internal := r.URL.Query().Get("internal") == "true"
	adm := kadm.NewClient(cl)
	tds, err := adm.ListTopicsWithInternal(ctx)
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	rows := []topicSummary{}
	for name, td := range tds {
		if td.Err != nil || td.IsInternal && !internal || !lq.matches(name) {
			continue
		}
		rows = append(rows, summarize(td, offsetsAndSizes{}))
	}
	pg := paginate(rows, lq, topicSorts, func(t topicSummary) string { return t.Name })
	shown := kadm.TopicDetails{}
	for _, t := range pg.Items {
		shown[t.Name] = tds[t.Name]
	}
	o := c.loadOffsetsAndSizes(ctx, adm, shown)
	for i, t := range pg.Items {
		pg.Items[i] = summarize(tds[t.Name], o)
	}
	return pg, nil
}

func (c *Console) topic(ctx context.Context, r *http.Request, cl *kgo.Client) (any, error) {
	name := r.PathValue("topic")
	adm := kadm.NewClient(cl)
	td, err := describeTopic(ctx, adm, name)
	if err != nil {
		return nil, err
	}
	tds := kadm.TopicDetails{name: td}
	o := c.loadOffsetsAndSizes(ctx, adm, tds)
	v := topicView{topicSummary: summarize(td, o), PartitionList: []partitionView{}, Configs: []configView{}, Groups: []topicGroupView{}}
	for _, p := range td.Partitions.Sorted() {
		pv := partitionView{
			Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
			Replicas: nonNil(p.Replicas), ISR: nonNil(p.ISR), Offline: nonNil(p.OfflineReplicas),
			StartOffset: -1, EndOffset: -1, Size: -1,
		}
		if p.Err != nil {
			pv.Error = p.Err.Error()
		}
		if s, ok := o.starts.Lookup(name, p.Partition); ok && s.Err == nil {
			pv.StartOffset = s.Offset
		}
		if e, ok := o.ends.Lookup(name, p.Partition); ok && e.Err == nil {
			pv.EndOffset = e.Offset
		}
		if s, ok := o.sizes[name][p.Partition]; ok {
			pv.Size = s
		}
		v.PartitionList = append(v.PartitionList, pv)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("describe configs of %q: %w", name, err)
	}
	if rc, err := rcs.On(name, nil); err == nil && rc.Err == nil {
		v.Configs = configViews(rc)
	}
	v.Groups, err = groupsOfTopic(ctx, adm, name)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// configViews are a resource's configs by name, sensitive values hidden.
func configViews(rc kadm.ResourceConfig) []configView {
	out := []configView{}
	for _, cfg := range rc.Configs {
		cv := configView{Name: cfg.Key, Value: cfg.MaybeValue(), Source: cfg.Source.String(), Sensitive: cfg.Sensitive}
		if cfg.Sensitive {
			cv.Value = "(sensitive)"
		}
		out = append(out, cv)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// describeTopic is one topic's metadata, or 404.
func describeTopic(ctx context.Context, adm *kadm.Client, name string) (kadm.TopicDetail, error) {
	tds, err := adm.ListTopicsWithInternal(ctx, name)
	if err != nil {
		// TOPIC_AUTHORIZATION_FAILED is the visitor's lack of DESCRIBE: 403.
		return kadm.TopicDetail{}, withStatus(fmt.Errorf("describe topic %q: %w", name, err))
	}
	td, ok := tds[name]
	if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		return kadm.TopicDetail{}, notFound("topic %q does not exist", name)
	}
	if td.Err != nil {
		return kadm.TopicDetail{}, withStatus(fmt.Errorf("describe topic %q: %w", name, td.Err))
	}
	return td, nil
}

// groupsOfTopic lists the groups with committed offsets on topic and their
// lag on it.
func groupsOfTopic(ctx context.Context, adm *kadm.Client, topic string) ([]topicGroupView, error) {
	out := []topicGroupView{}
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		return nil, fmt.Errorf("list groups: %w", err)
	}
	if len(listed) == 0 {
		return out, nil
	}
	lags, err := adm.Lag(ctx, listed.Groups()...)
	if err != nil {
		return nil, fmt.Errorf("group lag: %w", err)
	}
	for _, l := range lags.Sorted() {
		ps, ok := l.Lag[topic]
		if !ok || l.Error() != nil {
			continue
		}
		g := topicGroupView{Group: l.Group, State: l.State}
		committed := false
		for _, ml := range ps {
			if ml.Commit.At >= 0 {
				committed = true
				if ml.Lag > 0 {
					g.Lag += ml.Lag
				}
			}
		}
		if committed {
			out = append(out, g)
		}
	}
	return out, nil
}

func nonNil(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return slices.Clone(s)
}
