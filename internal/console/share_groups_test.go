package console_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type shareGroupJSON struct {
	Group   string `json:"group"`
	Type    string `json:"type"`
	State   string `json:"state"`
	Members []struct {
		ClientID string `json:"clientId"`
		Assigned []struct {
			Topic      string  `json:"topic"`
			Partitions []int32 `json:"partitions"`
		} `json:"assigned"`
	} `json:"members"`
	SharePartitions []struct {
		Topic       string   `json:"topic"`
		Partition   int32    `json:"partition"`
		StartOffset int64    `json:"startOffset"`
		Lag         int64    `json:"lag"`
		EndOffset   int64    `json:"endOffset"`
		Members     []string `json:"members"`
	} `json:"sharePartitions"`
	ShareOffsetsError string `json:"shareOffsetsError"`
}

// servesAPI reports whether the node advertises an API key.
func servesAPI(t *testing.T, n *node, key int16) bool {
	t.Helper()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctxT(t), n.client())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range resp.ApiKeys {
		if k.ApiKey == key {
			return true
		}
	}
	return false
}

// startShareConsumer seeds topic (10 records on partition 0 of 3, and a
// classic group's commit) and starts a share consumer of group (client id
// share-client) reading from the earliest record, polled until it got
// records.
func startShareConsumer(t *testing.T, n *node, topic, classicGroup, group string) {
	t.Helper()
	seed(t, n, topic, classicGroup, 4)
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctxT(t), n.client())
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.Resources[0]; r.ErrorCode != 0 {
		t.Fatalf("alter share.auto.offset.reset: %+v", r)
	}
	cl := n.client(kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.ClientID("share-client"))
	ctx := ctxT(t)
	for got := 0; got == 0; {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("poll: %v", err)
		}
		got = fs.NumRecords()
	}
}

// TestShareGroups: the groups list shows a share group (type share, its
// state and members, no lag) next to a classic one; its page shows the
// member, its assignment (every partition: the simple share assignor) and
// the partitions with their end offsets and readers.
func TestShareGroups(t *testing.T) {
	n := startNode(t)
	startShareConsumer(t, n, "queue", "idle-g", "share-g")

	type summary struct {
		Group   string `json:"group"`
		Type    string `json:"type"`
		State   string `json:"state"`
		Members int    `json:"members"`
		Lag     int64  `json:"lag"`
		Error   string `json:"error"`
	}
	var groups []summary
	waitUntil(t, "share-g listed Stable with its member", func() bool {
		var listed pageJSON[summary]
		getJSON(t, n.url("/api/groups"), http.StatusOK, &listed)
		groups = listed.Items
		return len(groups) == 2 && groups[1].State == "Stable" && groups[1].Members == 1
	})
	if g := groups[0]; g.Group != "idle-g" || g.Lag != 6 || g.Error != "" {
		t.Errorf("idle-g = %+v", g)
	}
	if g := groups[1]; g.Group != "share-g" || g.Type != "share" || g.Lag != -1 || g.Error != "" {
		t.Errorf("share-g = %+v", g)
	}

	var g shareGroupJSON
	waitUntil(t, "share-g's assignment", func() bool {
		g = shareGroupJSON{}
		getJSON(t, n.url("/api/groups/share-g"), http.StatusOK, &g)
		return len(g.Members) == 1 && len(g.SharePartitions) == 3
	})
	if g.Type != "share" || g.State != "Stable" || g.Members[0].ClientID != "share-client" {
		t.Fatalf("share-g = %+v", g)
	}
	if a := g.Members[0].Assigned; len(a) != 1 || a[0].Topic != "queue" || !slices.Equal(a[0].Partitions, []int32{0, 1, 2}) {
		t.Errorf("assignment = %+v", a)
	}
	// Start offsets and lag come from DescribeShareGroupOffsets: every
	// share-partition starts at 0 (earliest), nothing acknowledged yet.
	// A broker without the API leaves them unknown, saying why.
	describesOffsets := servesAPI(t, n, 90)
	if !describesOffsets && g.ShareOffsetsError == "" {
		t.Errorf("no DescribeShareGroupOffsets and no reason given for unknown start offsets")
	}
	for i, p := range g.SharePartitions {
		wantEnd, wantStart, wantLag := int64(0), int64(-1), int64(-1)
		if i == 0 {
			wantEnd = 10
		}
		if describesOffsets {
			wantStart, wantLag = 0, wantEnd
			if p.Lag == -1 {
				wantLag = -1 // DescribeShareGroupOffsets v0 has no lag
			}
		}
		if p.Topic != "queue" || p.Partition != int32(i) || p.EndOffset != wantEnd || p.StartOffset != wantStart || p.Lag != wantLag ||
			!slices.Equal(p.Members, []string{"share-client"}) {
			t.Errorf("share partition %d = %+v, want start %d, end %d, lag %d", i, p, wantStart, wantEnd, wantLag)
		}
	}

	var e struct{ Error string }
	getJSON(t, n.url("/api/groups/no-such-group"), http.StatusNotFound, &e)
}

// TestShareGroupInBrowser opens a share group from the groups list in
// headless Chromium: its page shows the member and the partitions it
// reads, and no offset reset form.
func TestShareGroupInBrowser(t *testing.T) {
	n := startNode(t)
	startShareConsumer(t, n, "queue", "idle-g", "share-g")
	b := newBrowser(t)
	css := b.css
	b.do("open the share group from the groups list",
		chromedp.Navigate(n.url("/#/groups")),
		chromedp.WaitVisible(css(`#groups a[data-group="share-g"]`)),
		chromedp.Click(css(`#groups a[data-group="share-g"]`)),
		chromedp.WaitVisible(css(`#share-partitions tr[data-partition="2"]`)))
	if got := b.text(`#share-partitions tr[data-partition="0"]`); !strings.Contains(got, "queue") || !strings.Contains(got, "10") || !strings.Contains(got, "share-client") {
		t.Errorf("partition 0 row = %q", got)
	}
	if got := b.text(`#group-members`); !strings.Contains(got, "share-client") {
		t.Errorf("members = %q", got)
	}
	// A share group commits no offsets: its page offers deleting it, not
	// resetting offsets.
	if !evalJS[bool](b, `document.getElementById("group-reset").hidden && document.getElementById("delete-group") !== null`) {
		t.Errorf("share group page: the reset form shown, or no delete form")
	}
	b.checkExceptions()
}
