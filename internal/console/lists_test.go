package console_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The topic and group lists are filtered, sorted and paged by the server;
// only the page's topics get offsets and sizes.
func TestPagedLists(t *testing.T) {
	n := startNode(t)
	cl := n.client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	ctx := ctxT(t)
	for i, parts := range []int32{3, 1, 4, 1, 5} {
		if _, err := adm.CreateTopic(ctx, parts, 1, nil, fmt.Sprintf("app-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := adm.CreateTopic(ctx, 9, 1, nil, "zz-other"); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "app-4", Partition: 2, Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	names := func(p pageJSON[topicJSON]) []string {
		var out []string
		for _, tj := range p.Items {
			out = append(out, tj.Name)
		}
		return out
	}

	// The console's client answers lists from metadata up to 100 ms old
	// (clientOpts): wait, within reason, for a list that has every topic.
	var p pageJSON[topicJSON]
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		p = pageJSON[topicJSON]{}
		getJSON(t, n.url("/api/topics?q=APP&sort=partitions&order=desc&limit=2"), http.StatusOK, &p)
		if p.Total == 5 || time.Now().After(deadline) {
			break
		}
	}
	if got := names(p); p.Total != 5 || !slices.Equal(got, []string{"app-4", "app-2"}) || p.Sort != "partitions" || p.Order != "desc" {
		t.Fatalf("app topics by partitions, descending, first 2: total %d, %v", p.Total, got)
	}
	if tj := p.Items[0]; tj.Partitions != 5 || tj.Records != 1 || tj.Size <= 0 {
		t.Errorf("app-4 on the page: %+v, want its records and size", tj)
	}
	// Ties (1 partition each) in name order; the next page.
	p = pageJSON[topicJSON]{}
	getJSON(t, n.url("/api/topics?q=app&sort=partitions&offset=0&limit=3"), http.StatusOK, &p)
	if got := names(p); !slices.Equal(got, []string{"app-1", "app-3", "app-0"}) {
		t.Errorf("by partitions ascending: %v", got)
	}
	p = pageJSON[topicJSON]{}
	getJSON(t, n.url("/api/topics?q=app&sort=partitions&offset=3&limit=3"), http.StatusOK, &p)
	if got := names(p); !slices.Equal(got, []string{"app-2", "app-4"}) || p.Offset != 3 {
		t.Errorf("second page: %v", got)
	}
	p = pageJSON[topicJSON]{}
	getJSON(t, n.url("/api/topics?offset=100"), http.StatusOK, &p)
	if len(p.Items) != 0 || p.Total != 6 {
		t.Errorf("past the end: %+v", p)
	}
	// Internal topics only when asked for.
	p = pageJSON[topicJSON]{}
	getJSON(t, n.url("/api/topics?q=__"), http.StatusOK, &p)
	if p.Total != 0 {
		t.Errorf("internal topics listed without internal=true: %v", names(p))
	}

	for _, g := range []string{"team-b", "team-a", "team-c", "solo"} {
		offs := kadm.Offsets{}
		offs.Add(kadm.Offset{Topic: "app-0", Partition: 0, At: 0, LeaderEpoch: -1})
		if err := adm.CommitAllOffsets(ctx, g, offs); err != nil {
			t.Fatal(err)
		}
	}
	var groups pageJSON[struct {
		Group string `json:"group"`
		Lag   int64  `json:"lag"`
	}]
	getJSON(t, n.url("/api/groups?q=team&sort=group&order=desc&limit=2"), http.StatusOK, &groups)
	if groups.Total != 3 || len(groups.Items) != 2 || groups.Items[0].Group != "team-c" || groups.Items[1].Group != "team-b" || groups.Items[0].Lag != 0 {
		t.Errorf("team groups, descending, first 2: %+v", groups)
	}
	groups.Items = nil
	getJSON(t, n.url("/api/groups?type=share"), http.StatusOK, &groups)
	if groups.Total != 0 || len(groups.Items) != 0 {
		t.Errorf("share groups: %+v", groups)
	}

	var e struct{ Error string }
	for _, q := range []string{"/api/topics?sort=size", "/api/topics?order=up", "/api/topics?limit=0", "/api/topics?limit=5000",
		"/api/topics?offset=-1", "/api/groups?sort=lag", "/api/brokers/1?sort=name"} {
		getJSON(t, n.url(q), http.StatusBadRequest, &e)
		if e.Error == "" {
			t.Errorf("%s: no error message", q)
		}
	}
}
