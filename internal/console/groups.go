package console

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/internal/metrics"
)

// groupSummary is one row of /api/groups.
type groupSummary struct {
	Group        string `json:"group"`
	State        string `json:"state"`
	ProtocolType string `json:"protocolType"`
	Type         string `json:"type,omitempty"` // classic or consumer (KIP-848), when the broker says
	Coordinator  int32  `json:"coordinator"`
	Members      int    `json:"members"`
	// Lag is the sum over partitions with a commit; -1 when it could not
	// be computed (Error says why).
	Lag   int64  `json:"lag"`
	Error string `json:"error,omitempty"`
}

type memberView struct {
	MemberID   string           `json:"memberId"`
	InstanceID string           `json:"instanceId,omitempty"`
	ClientID   string           `json:"clientId"`
	Host       string           `json:"host"`
	Assigned   []assignmentView `json:"assigned"`
}

type assignmentView struct {
	Topic      string  `json:"topic"`
	Partitions []int32 `json:"partitions"`
}

// offsetView is one row of kafka-consumer-groups --describe: a partition
// the group committed to or owns.
type offsetView struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Committed int64  `json:"committed"` // -1 when nothing is committed
	EndOffset int64  `json:"endOffset"` // -1 when unknown
	Lag       int64  `json:"lag"`       // -1 when not computable (no commit)
	MemberID  string `json:"memberId,omitempty"`
	ClientID  string `json:"clientId,omitempty"`
	Host      string `json:"host,omitempty"`
}

type groupView struct {
	Group        string       `json:"group"`
	Type         string       `json:"type,omitempty"` // share for a share group (KIP-932)
	State        string       `json:"state"`
	ProtocolType string       `json:"protocolType"`
	Assignor     string       `json:"assignor"`
	Coordinator  int32        `json:"coordinator"`
	Members      []memberView `json:"members"`
	Offsets      []offsetView `json:"offsets"`
	TotalLag     int64        `json:"totalLag"`
	// SharePartitions are a share group's partitions: those assigned and
	// those with share-partition state (a share group commits no offsets:
	// Offsets stays empty).
	SharePartitions []sharePartitionView `json:"sharePartitions,omitempty"`
	// ShareOffsetsError says why the share-partitions' start offsets and
	// lag are unknown (DescribeShareGroupOffsets failed or is not served).
	ShareOffsetsError string `json:"shareOffsetsError,omitempty"`
}

// sharePartitionView is one partition assigned in a share group: every
// member it is assigned to reads it (Kafka's simple share assignor).
type sharePartitionView struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// StartOffset is the share-partition start offset (SPSO) and Lag the
	// records from it to the end not yet acknowledged or archived, as
	// kafka-share-groups --describe shows them; -1 when unknown.
	StartOffset int64    `json:"startOffset"`
	Lag         int64    `json:"lag"`
	EndOffset   int64    `json:"endOffset"` // -1 when unknown
	Members     []string `json:"members"`   // client ids of the members assigned it
}

// groupSorts are the keys /api/groups sorts by: what ListGroups tells of
// every group. Members and lag are asked for the page's groups only.
var groupSorts = sorter[groupSummary]{
	"group":       func(a, b groupSummary) int { return 0 },
	"state":       func(a, b groupSummary) int { return cmp.Compare(a.State, b.State) },
	"type":        func(a, b groupSummary) int { return cmp.Compare(groupType(a), groupType(b)) },
	"coordinator": func(a, b groupSummary) int { return cmp.Compare(a.Coordinator, b.Coordinator) },
}

// groupType is the type a group's row shows: classic, consumer or share,
// or the protocol type from a broker that does not say.
func groupType(g groupSummary) string {
	if g.Type != "" {
		return g.Type
	}
	return g.ProtocolType
}

// groups is /api/groups: a page of the groups (lists.go), of one type with
// ?type=classic|consumer|share. ListGroups lists them all; the page's
// groups are then described (their lag, or a share group's members).
func (c *Console) groups(ctx context.Context, r *http.Request, cl *kgo.Client) (any, error) {
	lq, err := parseListQuery(r, slices.Sorted(maps.Keys(groupSorts)), "group")
	if err != nil {
		return nil, err
	}
	typ := r.URL.Query().Get("type")
	adm := kadm.NewClient(cl)
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		return nil, fmt.Errorf("list groups: %w", err)
	}
	rows := []groupSummary{}
	for _, lg := range listed.Sorted() {
		s := groupSummary{Group: lg.Group, State: lg.State, ProtocolType: lg.ProtocolType, Type: lg.GroupType, Coordinator: lg.Coordinator, Lag: -1}
		if lq.matches(lg.Group) && (typ == "" || groupType(s) == typ) {
			rows = append(rows, s)
		}
	}
	pg := paginate(rows, lq, groupSorts, func(g groupSummary) string { return g.Group })
	if len(pg.Items) == 0 {
		return pg, nil
	}
	// Share groups commit no offsets: they are described, not lagged.
	var committing, shares []string
	for _, g := range pg.Items {
		if g.Type == "share" {
			shares = append(shares, g.Group)
		} else {
			committing = append(committing, g.Group)
		}
	}
	lags := kadm.DescribedGroupLags{}
	if len(committing) > 0 {
		if lags, err = adm.Lag(ctx, committing...); err != nil {
			return nil, fmt.Errorf("group lag: %w", err)
		}
	}
	described := kadm.DescribedShareGroups{}
	if len(shares) > 0 {
		if described, err = adm.DescribeShareGroups(ctx, shares...); err != nil {
			return nil, fmt.Errorf("describe share groups: %w", err)
		}
	}
	for i := range pg.Items {
		s := &pg.Items[i]
		if d, ok := described[s.Group]; ok && s.Type == "share" {
			if d.Err != nil {
				s.Error = d.Err.Error()
			} else {
				s.State, s.Members = d.GroupState, len(d.Members)
			}
		}
		if l, ok := lags[s.Group]; ok {
			if err := l.Error(); err != nil {
				s.Error = err.Error()
			} else {
				s.State, s.Members, s.Lag = l.State, len(l.Members), committedLag(l.Lag)
			}
		}
	}
	return pg, nil
}

// committedLag sums the lag of partitions with a commit (a partition
// owned but never committed has no lag to speak of yet).
func committedLag(l kadm.GroupLag) int64 {
	var total int64
	for _, ps := range l {
		for _, ml := range ps {
			if ml.Commit.At >= 0 && ml.Lag > 0 {
				total += ml.Lag
			}
		}
	}
	return total
}

func (c *Console) group(ctx context.Context, r *http.Request, cl *kgo.Client) (any, error) {
	name := r.PathValue("group")
	adm := kadm.NewClient(cl)
	lags, err := adm.Lag(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("describe group %q: %w", name, err)
	}
	l, ok := lags[name]
	if !ok || l.State == "Dead" || errors.Is(l.DescribeErr, kerr.GroupIDNotFound) {
		// Not a classic or consumer group: a share group, or none.
		return c.shareGroup(ctx, adm, name)
	}
	if err := l.Error(); err != nil {
		return nil, fmt.Errorf("describe group %q: %w", name, err)
	}
	v := &groupView{Group: name, State: l.State, ProtocolType: l.ProtocolType, Assignor: l.Protocol, Coordinator: l.Coordinator.NodeID, Members: []memberView{}, Offsets: []offsetView{}}
	assigned := map[string]kadm.TopicsSet{} // member id -> partitions
	for _, m := range l.Members {
		mv := memberView{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost}
		if m.InstanceID != nil {
			mv.InstanceID = *m.InstanceID
		}
		set := kadm.TopicsSet{}
		if a, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range a.Topics {
				set.Add(t.Topic, t.Partitions...)
			}
		}
		assigned[m.MemberID] = set
		v.Members = append(v.Members, mv)
	}
	// A KIP-848 group's assignments come from ConsumerGroupDescribe; a
	// classic group (or a broker without the API) keeps the view above.
	if cgs, err := adm.DescribeConsumerGroups(ctx, name); err == nil {
		if cg, ok := cgs[name]; ok && cg.Err == nil {
			v.State, v.Assignor, v.Coordinator, v.Members = cg.State, cg.AssignorName, cg.Coordinator.NodeID, []memberView{}
			assigned = map[string]kadm.TopicsSet{}
			for _, m := range cg.Members {
				mv := memberView{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost}
				if m.InstanceID != nil {
					mv.InstanceID = *m.InstanceID
				}
				// A broker that names assigned topics only by id leaves
				// the name empty: nothing to show or look up.
				delete(m.Assignment, "")
				assigned[m.MemberID] = m.Assignment
				v.Members = append(v.Members, mv)
			}
		}
	}
	owner := map[string]map[int32]*memberView{}
	for i := range v.Members {
		m := &v.Members[i]
		m.Assigned = []assignmentView{}
		for _, t := range assigned[m.MemberID].Sorted() {
			m.Assigned = append(m.Assigned, assignmentView{Topic: t.Topic, Partitions: t.Partitions})
			if owner[t.Topic] == nil {
				owner[t.Topic] = map[int32]*memberView{}
			}
			for _, p := range t.Partitions {
				owner[t.Topic][p] = m
			}
		}
	}
	seen := map[string]map[int32]bool{}
	for _, ml := range l.Lag.Sorted() {
		o := owner[ml.Topic][ml.Partition]
		if ml.Commit.At < 0 && o == nil {
			continue // neither committed nor owned: not the group's
		}
		if seen[ml.Topic] == nil {
			seen[ml.Topic] = map[int32]bool{}
		}
		seen[ml.Topic][ml.Partition] = true
		row := offsetView{Topic: ml.Topic, Partition: ml.Partition, Committed: -1, EndOffset: -1, Lag: -1}
		if ml.Commit.At >= 0 {
			row.Committed = ml.Commit.At
		}
		if ml.End.Err == nil && ml.End.Offset >= 0 {
			row.EndOffset = ml.End.Offset
		}
		if ml.Commit.At >= 0 && ml.Lag >= 0 {
			row.Lag = ml.Lag
			v.TotalLag += ml.Lag
		}
		if o != nil {
			row.MemberID, row.ClientID, row.Host = o.MemberID, o.ClientID, o.Host
		}
		v.Offsets = append(v.Offsets, row)
	}
	// Owned partitions Lag did not list (a KIP-848 assignment without a
	// commit): rows with their end offsets.
	var missing []string
	for t, ps := range owner {
		for p := range ps {
			if !seen[t][p] {
				missing = append(missing, t)
			}
		}
	}
	if len(missing) > 0 {
		ends, err := adm.ListEndOffsets(ctx, missing...)
		if err != nil {
			return nil, fmt.Errorf("list end offsets: %w", err)
		}
		for t, ps := range owner {
			for p, o := range ps {
				if seen[t][p] {
					continue
				}
				row := offsetView{Topic: t, Partition: p, Committed: -1, EndOffset: -1, Lag: -1, MemberID: o.MemberID, ClientID: o.ClientID, Host: o.Host}
				if e, ok := ends.Lookup(t, p); ok && e.Err == nil {
					row.EndOffset = e.Offset
				}
				v.Offsets = append(v.Offsets, row)
			}
		}
		sort.Slice(v.Offsets, func(i, j int) bool {
			a, b := v.Offsets[i], v.Offsets[j]
			return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
		})
	}
	return v, nil
}

// shareGroup is the page of a share group (ShareGroupDescribe): its
// members and their assignments, and its partitions with their end
// offsets and, from DescribeShareGroupOffsets, their share-partition start
// offsets and lag (unknown, with the reason, where the broker does not
// answer it).
func (c *Console) shareGroup(ctx context.Context, adm *kadm.Client, name string) (any, error) {
	described, err := adm.DescribeShareGroups(ctx, name)
	if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		return nil, fmt.Errorf("describe share group %q: %w", name, err)
	}
	d, ok := described[name]
	if !ok || d.GroupState == "Dead" || errors.Is(d.Err, kerr.GroupIDNotFound) {
		return nil, notFound("group %q does not exist", name)
	}
	if d.Err != nil {
		return nil, fmt.Errorf("describe share group %q: %w", name, d.Err)
	}
	v := &groupView{Group: name, Type: "share", State: d.GroupState, ProtocolType: "share", Assignor: d.Assignor,
		Coordinator: d.Coordinator.NodeID, Members: []memberView{}, Offsets: []offsetView{}, SharePartitions: []sharePartitionView{}}
	readers := map[string]map[int32][]string{} // topic -> partition -> client ids
	for _, m := range d.Members {
		mv := memberView{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, Assigned: []assignmentView{}}
		delete(m.Assignment, "") // assigned by id only: nothing to show
		for _, t := range m.Assignment.Sorted() {
			mv.Assigned = append(mv.Assigned, assignmentView{Topic: t.Topic, Partitions: t.Partitions})
			if readers[t.Topic] == nil {
				readers[t.Topic] = map[int32][]string{}
			}
			for _, p := range t.Partitions {
				readers[t.Topic][p] = append(readers[t.Topic][p], m.ClientID)
			}
		}
		v.Members = append(v.Members, mv)
	}
	starts, err := adm.DescribeShareGroupOffsets(ctx, name)
	var offsets kadm.ShareOffsets
	if err == nil {
		err = starts[name].Err
		offsets = starts[name].Offsets
	}
	if err != nil {
		v.ShareOffsetsError = err.Error()
	}
	for t, ps := range offsets {
		for p, o := range ps {
			if t == "" || o.Err != nil {
				continue
			}
			if readers[t] == nil {
				readers[t] = map[int32][]string{}
			}
			if _, ok := readers[t][p]; !ok {
				readers[t][p] = []string{} // state, but no member reads it now
			}
		}
	}
	if len(readers) == 0 {
		return v, nil
	}
	topics := make([]string, 0, len(readers))
	for t := range readers {
		topics = append(topics, t)
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("list end offsets: %w", err)
	}
	for t, ps := range readers {
		for p, clients := range ps {
			row := sharePartitionView{Topic: t, Partition: p, StartOffset: -1, Lag: -1, EndOffset: -1, Members: clients}
			if e, ok := ends.Lookup(t, p); ok && e.Err == nil {
				row.EndOffset = e.Offset
			}
			if o, ok := offsets.Lookup(t, p); ok && o.Err == nil && o.StartOffset >= 0 {
				row.StartOffset, row.Lag = o.StartOffset, max(o.Lag, -1)
			}
			v.SharePartitions = append(v.SharePartitions, row)
		}
	}
	sort.Slice(v.SharePartitions, func(i, j int) bool {
		a, b := v.SharePartitions[i], v.SharePartitions[j]
		return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
	})
	return v, nil
}

// GroupLags lists the committed lag of every group whose coordinator is
// broker coordinator, for the metrics endpoint. There are none when the
// broker listener requires SASL: the console has no credentials of its own
// to read them with (and an error would fail the whole scrape).
func (c *Console) GroupLags(ctx context.Context, coordinator int32) ([]metrics.GroupLag, error) {
	adm, err := c.admin()
	if errors.Is(err, errLoginRequired) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		return nil, fmt.Errorf("list groups: %w", err)
	}
	var mine []string
	for _, g := range listed.Sorted() {
		if g.Coordinator == coordinator && g.GroupType != "share" { // share groups commit no offsets
			mine = append(mine, g.Group)
		}
	}
	if len(mine) == 0 {
		return nil, nil
	}
	lags, err := adm.Lag(ctx, mine...)
	if err != nil {
		return nil, fmt.Errorf("group lag: %w", err)
	}
	var out []metrics.GroupLag
	for _, g := range mine {
		l, ok := lags[g]
		if !ok || l.Error() != nil {
			continue
		}
		for topic, ps := range l.Lag {
			for p, ml := range ps {
				if ml.Commit.At >= 0 && ml.Err == nil {
					out = append(out, metrics.GroupLag{Group: g, Topic: topic, Partition: p, Lag: max(ml.Lag, 0)})
				}
			}
		}
	}
	return out, nil
}
