package metrics

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// everyMetric is a registry with every metric recorded at least once, so
// that its vectors have a child each and Gather lists them all: metric
// name -> label names.
func everyMetric(t *testing.T) map[string]map[string]bool {
	t.Helper()
	r := New(func() State {
		return State{
			Broker: true, Controller: true, ActiveController: true,
			Partitions:      []PartitionState{{Topic: "t", Partition: 0, Leader: true}},
			Purgatories:     map[string]int{"Produce": 0},
			ClientQuotas:    []ClientQuotaSensor{{Type: "Produce"}, {Type: "Fetch"}, {Type: "Request"}, {Type: "ControllerMutation"}},
			Groups:          GroupCoordinator{Consumer: map[string]int{"Stable": 1}, Share: map[string]int{"Stable": 1}},
			SharePartitions: []SharePartition{{Group: "sg", Topic: "t", Partition: 0, InFlightRecords: 1, InFlightBatches: 1}},
			FollowerLags:    []FollowerLag{{Topic: "t", Partition: 0, Lag: 1}},
			Raft:            RaftState{Known: true, Leader: 1, Epoch: 1, State: "leader"},
		}
	})
	r.SetGroupLag(func(context.Context) ([]GroupLag, error) {
		return []GroupLag{{Group: "g", Topic: "t", Partition: 0, Lag: 1}}, nil
	})
	now := time.Now()
	resp := kmsg.NewPtrCreateTopicsResponse()
	rt := kmsg.NewCreateTopicsResponseTopic()
	rt.ErrorCode = kerr.TopicAlreadyExists.Code
	resp.Topics = append(resp.Topics, rt)
	r.ObserveRequest(19, 100, resp, now, now, now, now)
	r.ObserveSent(19, now, now, now, now)
	r.Produced("t", 1, 1)
	r.Fetched("t", 1)
	r.ISRChanged("expand")
	r.ISRChanged("shrink")
	for _, reauth := range []bool{false, true} {
		r.Authenticated("L", "PLAIN", reauth, nil)
		r.Authenticated("L", "PLAIN", reauth, os.ErrPermission)
	}
	r.ConnectionOpened("L")
	r.AcceptThrottled("L", time.Millisecond)
	r.AcceptorBlocked("L", time.Millisecond)
	r.OffsetsCommitted(1)
	r.ClassicRebalanceCompleted()
	r.ConsumerGroupRebalanced()
	r.ShareGroupRebalanced()
	r.RecordsAcknowledged("Accept", 1)
	r.LocksTimedOut("sg", "t", 0, 1)
	r.PartitionLoaded(time.Millisecond)
	r.FetchLockReleased("sg", "t", 0, time.Millisecond, 50)
	r.ShareFetched(map[string]bool{"t": true})
	r.ShareAcknowledged(map[string]bool{"t": true})
	r.Replicated(1)
	r.RaftCommitted(1, time.Millisecond)
	mfs, err := r.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]bool{}
	for _, mf := range mfs {
		labels := map[string]bool{}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = true
			}
		}
		name := mf.GetName()
		out[name] = labels
		if mf.GetType().String() == "HISTOGRAM" {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				with := map[string]bool{"le": suffix == "_bucket"}
				for l := range labels {
					with[l] = true
				}
				out[name+suffix] = with
			}
		}
	}
	return out
}

var (
	metricRef = regexp.MustCompile(`\b((?:kafka|process|go)_[a-z0-9_]+)(\{[^}]*\})?`)
	matcher   = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)`)
	byLabels  = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
)

// TestGrafanaDashboard: the dashboard in docs/grafana imports (the
// structure Grafana's import needs: its Prometheus input, panels with
// ids, places and queries) and every query names metrics, and labels of
// them, that Gregor exports.
func TestGrafanaDashboard(t *testing.T) {
	data, err := os.ReadFile("../../docs/grafana/gregor.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Inputs []struct {
			Name, Type, PluginID string
		} `json:"__inputs"`
		Title, UID string
		Panels     []struct {
			ID         int
			Type       string
			Title      string
			Datasource *struct{ Type, UID string }
			GridPos    struct{ H, W, X, Y int }
			Targets    []struct{ RefID, Expr string }
		}
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("docs/grafana/gregor.json: %v", err)
	}
	if len(dash.Inputs) != 1 || dash.Inputs[0].Name != "DS_PROMETHEUS" || dash.Inputs[0].PluginID != "prometheus" || dash.Title == "" || dash.UID == "" {
		t.Fatalf("dashboard header: inputs %+v, title %q, uid %q", dash.Inputs, dash.Title, dash.UID)
	}
	exported := everyMetric(t)
	ids := map[int]bool{}
	queries := 0
	for _, p := range dash.Panels {
		if ids[p.ID] || p.ID == 0 {
			t.Errorf("panel %q: id %d repeated or missing", p.Title, p.ID)
		}
		ids[p.ID] = true
		if g := p.GridPos; g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: grid position %+v", p.Title, g)
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${DS_PROMETHEUS}" || len(p.Targets) == 0 {
			t.Errorf("panel %q: datasource %+v, %d queries", p.Title, p.Datasource, len(p.Targets))
		}
		for _, tg := range p.Targets {
			queries++
			refs := metricRef.FindAllStringSubmatch(tg.Expr, -1)
			if len(refs) == 0 {
				t.Errorf("panel %q: query %q names no metric", p.Title, tg.Expr)
			}
			// Labels a query matches on or groups by must be the
			// labels of one of its metrics.
			var labels []string
			for _, ref := range refs {
				have, ok := exported[ref[1]]
				if !ok {
					t.Errorf("panel %q: %s is not a metric Gregor exports", p.Title, ref[1])
					continue
				}
				for _, m := range matcher.FindAllStringSubmatch(ref[2], -1) {
					if !have[m[1]] {
						t.Errorf("panel %q: %s has no label %s", p.Title, ref[1], m[1])
					}
				}
			}
			for _, by := range byLabels.FindAllStringSubmatch(tg.Expr, -1) {
				for _, l := range strings.Split(by[1], ",") {
					if l = strings.TrimSpace(l); l != "" && l != "instance" && l != "le" {
						labels = append(labels, l)
					}
				}
			}
			for _, l := range labels {
				found := false
				for _, ref := range refs {
					found = found || exported[ref[1]][l]
				}
				if !found {
					t.Errorf("panel %q: query %q groups by %s, a label none of its metrics has", p.Title, tg.Expr, l)
				}
			}
		}
	}
	if queries < 30 {
		t.Errorf("%d queries, want the dashboard's 30 and more", queries)
	}
}

// TestGrafanaDashboardSchema decodes docs/grafana/gregor.json strictly with
// the Go types Grafana generates from its dashboard and panel schemas
// (grafana-foundation-sdk): an unknown field, a wrong type or a field
// Grafana always saves that is missing fails, and so does Grafana's own
// validation. What import needs beyond that (a Prometheus data source for
// ${DS_PROMETHEUS}) is in the __inputs, which the import form consumes
// before the dashboard is decoded, so they are left out here as it does.
func TestGrafanaDashboardSchema(t *testing.T) {
	plugins.RegisterDefaultPlugins()
	data, err := os.ReadFile("../../docs/grafana/gregor.json")
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		t.Fatal(err)
	}
	for k := range fields {
		if strings.HasPrefix(k, "__") {
			delete(fields, k)
		}
	}
	body, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard.Dashboard
	if err := d.UnmarshalJSONStrict(body); err != nil {
		// The decoder returns its (possibly empty) list of errors.
		if errs, ok := err.(cog.BuildErrors); !ok || len(errs) > 0 {
			t.Fatalf("docs/grafana/gregor.json against Grafana's schema: %v", err)
		}
	}
	if err := d.Validate(); err != nil {
		t.Fatalf("docs/grafana/gregor.json: Grafana's validation: %v", err)
	}
	if len(d.Panels) == 0 {
		t.Fatal("no panels decoded")
	}
}
