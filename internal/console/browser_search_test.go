package console_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kadm"
)

// TestConsoleSearchInBrowser: in headless Chromium, the topics list is
// filtered and sorted by the server; a topic's search finds a record by a
// substring of its value across partitions (JSON pretty-printed, the
// download link carrying the same search), continues a search the scan
// budget stopped, and shows text as hex on request; the broker page shows
// its log dirs, configs and partitions; the groups list filters by name.
func TestConsoleSearchInBrowser(t *testing.T) {
	n := startNode(t)
	base := seedSearch(t, n)
	adm := kadm.NewClient(n.client())
	for _, name := range []string{"orders-archive", "payments"} {
		if _, err := adm.CreateTopic(ctxT(t), 2, 1, nil, name); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range []string{"billing", "shipping", "audit"} {
		offs := kadm.Offsets{}
		offs.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 4, LeaderEpoch: -1})
		if err := adm.CommitAllOffsets(ctxT(t), g, offs); err != nil {
			t.Fatal(err)
		}
	}
	b := newBrowser(t)
	css, text, do := b.css, b.text, b.do

	do("open the topics list",
		chromedp.Navigate(n.url("/#/topics")),
		chromedp.WaitVisible(css(`#topics a[data-topic="payments"]`)),
		chromedp.SendKeys(css("#topics-filter"), "orders"))
	b.poll("the list filtered to the two orders topics",
		`!document.querySelector('#topics a[data-topic="payments"]') && document.querySelectorAll("#topics tbody tr").length === 2`)
	if c := text("#topics-count"); c != "1–2 of 2" {
		t.Errorf("filtered count %q", c)
	}
	do("sort by partitions", chromedp.Click(css(`#topics th[data-sort="partitions"]`)))
	b.poll("sorted by partitions, ascending", `document.querySelector("#topics tbody tr").dataset.topicRow === "orders-archive"`)
	do("sort by partitions, descending", chromedp.Click(css(`#topics th[data-sort="partitions"]`)))
	b.poll("sorted by partitions, descending", `document.querySelector("#topics tbody tr").dataset.topicRow === "orders"`)

	do("search the topic for a value substring",
		chromedp.Click(css(`#topics a[data-topic="orders"]`)),
		chromedp.WaitVisible(css("#search-value")),
		chromedp.SendKeys(css("#search-value"), "needle"),
		chromedp.Click(css("#search-submit")),
		chromedp.WaitVisible(css(`#search-results tr[data-partition="1"][data-offset="7"]`)))
	if p := text("#search-progress"); !strings.Contains(p, "Scanned 30 of 30 records") || !strings.Contains(p, "found 1.") || !strings.Contains(p, "The whole range is read.") {
		t.Errorf("search progress %q", p)
	}
	if rows := evalJS[int](b, `document.querySelectorAll("#search-results tbody tr").length`); rows != 1 {
		t.Errorf("%d records found, want 1", rows)
	}
	pretty := evalJS[string](b, `document.querySelector('#search-results tr[data-offset="7"] pre.json').textContent`)
	if want := "{\n  \"id\": 17,\n  \"note\": \"the needle is here\"\n}"; pretty != want {
		t.Errorf("value shown as %q, want it pretty-printed %q", pretty, want)
	}
	href := evalJS[string](b, `document.getElementById("search-download").href`)
	if !strings.Contains(href, "format=jsonl") || !strings.Contains(href, "value=needle") {
		t.Errorf("download link %q", href)
	}
	resp, err := http.Get(href)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	body := string(raw)
	if lines := strings.Count(body, "\n"); resp.StatusCode != 200 || lines != 1 || !strings.Contains(body, "the needle is here") {
		t.Errorf("download: %d, %d lines: %q", resp.StatusCode, lines, body)
	}

	do("text as hex", chromedp.Click(css(".hex-toggle")))
	if k := text(`#search-results tr[data-offset="7"] td:nth-child(4)`); !strings.Contains(k, "70312d6b37") { // p1-k7
		t.Errorf("key as hex: %q", k)
	}
	do("back to text", chromedp.Click(css(".hex-toggle")))

	evalJS[bool](b, `(document.getElementById("search-value").value = "") === ""`)
	do("a search the budget stops",
		chromedp.SendKeys(css("#search-header"), "type=even"),
		chromedp.SetValue(css("#search-max-scan"), "7"),
		chromedp.Click(css("#search-submit")),
		chromedp.WaitVisible(css("#search-continue")))
	if p := text("#search-progress"); !strings.Contains(p, "Scanned 7 of 30 records") || !strings.Contains(p, "23 left") {
		t.Errorf("first step %q", p)
	}
	do("continue", chromedp.Click(css("#search-continue")))
	b.poll("the second step", `document.getElementById("search-progress").textContent.includes("Scanned 14 of 30")`)
	for i := 0; i < 5 && evalJS[bool](b, `!!document.getElementById("search-continue")`); i++ {
		do("continue", chromedp.Click(css("#search-continue")))
		b.poll("the next step", fmt.Sprintf(`document.getElementById("search-progress").textContent.includes("Scanned %d of 30")`, min(14+7*(i+1), 30)))
	}
	if p := text("#search-progress"); !strings.Contains(p, "found 15.") || !strings.Contains(p, "The whole range is read.") {
		t.Errorf("after continuing to the end: %q", p)
	}

	// A time range, typed as local date and time: ids 12 to 14.
	evalJS[bool](b, fmt.Sprintf(`(() => {
		const local = ms => new Date(ms - new Date(ms).getTimezoneOffset() * 60000).toISOString().slice(0, 19);
		document.getElementById("search-header").value = "";
		document.getElementById("search-max-scan").value = "10000";
		document.getElementById("search-from-time").value = local(%d);
		document.getElementById("search-to-time").value = local(%d);
		return true; })()`, base.Add(12*time.Second).UnixMilli(), base.Add(14*time.Second).UnixMilli()))
	do("search a time range", chromedp.Click(css("#search-submit")))
	b.poll("the time range's three records", `(document.getElementById("search-progress") || {textContent: ""}).textContent.includes("found 3.")`)
	if got := evalJS[string](b, `Array.from(document.querySelectorAll("#search-results tbody tr"), tr => tr.dataset.partition + "/" + tr.dataset.offset).join(" ")`); got != "1/2 1/3 1/4" {
		t.Errorf("time range found %q, want 1/2 1/3 1/4", got)
	}

	do("open broker 1 from the cluster page",
		chromedp.Navigate(n.url("/#/")),
		chromedp.WaitVisible(css(`a[data-broker-link="1"]`)),
		chromedp.Click(css(`a[data-broker-link="1"]`)),
		chromedp.WaitVisible(css("#broker-logdirs")),
		chromedp.WaitVisible(css(`#broker-configs tr[data-config="log.dirs"]`)),
		chromedp.WaitVisible(css(`#broker-partitions tr[data-topic="orders"][data-partition="2"]`)))
	if cards := text("main .cards"); !strings.Contains(cards, "this broker") || !strings.Contains(cards, "up") {
		t.Errorf("broker cards %q: want it up and the active controller", cards)
	}
	if d := evalJS[[]string](b, `Array.from(document.querySelector("#broker-logdirs tbody tr").children, td => td.textContent)`); len(d) != 6 || !strings.HasPrefix(d[0], "/") || d[1] == "0" || d[2] == "-" || d[5] != "-" {
		t.Errorf("log dir row %q: want a path, partitions, a size and no error", d)
	}
	do("filter the broker's partitions", chromedp.SendKeys(css("#broker-partitions-filter"), "payments"))
	b.poll("only payments' two partitions", `document.querySelectorAll("#broker-partitions tbody tr").length === 2 && !!document.querySelector('#broker-partitions tr[data-topic="payments"]')`)

	do("the groups list, filtered",
		chromedp.Click(css(`header nav a[data-nav="groups"]`)),
		chromedp.WaitVisible(css(`#groups a[data-group="audit"]`)),
		chromedp.SendKeys(css("#groups-filter"), "ing"))
	b.poll("billing and shipping only", `document.querySelectorAll("#groups tbody tr").length === 2 && !document.querySelector('#groups a[data-group="audit"]')`)
	if lag := text(`#groups td[data-group-lag="billing"]`); lag != "6" {
		t.Errorf("billing's lag %q, want 6", lag)
	}
	b.checkExceptions()
}

// TestConsoleTenThousandTopics loads the topics page of a cluster with
// 10,000 topics in headless Chromium: the first page, the next, and a
// filter. It logs the times; it asserts only that the page loads within
// the browser's deadline (no timing is asserted: the machine may be busy).
func TestConsoleTenThousandTopics(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 10,000 topics")
	}
	if chromium() == "" {
		t.Skip("no chromium binary on PATH")
	}
	n := startNode(t)
	adm := kadm.NewClient(n.client())
	const topics = 10_000
	start := time.Now()
	for b := 0; b < topics/1000; b++ {
		names := make([]string, 0, 1000)
		for i := range 1000 {
			names = append(names, fmt.Sprintf("t-%05d", b*1000+i))
		}
		resp, err := adm.CreateTopics(ctxT(t), 1, 1, nil, names...)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatalf("create topics %s..: %v", names[0], err)
		}
	}
	t.Logf("created %d topics in %v", topics, time.Since(start))

	apiStart := time.Now()
	var p pageJSON[topicJSON]
	getJSON(t, n.url("/api/topics"), http.StatusOK, &p)
	apiTime := time.Since(apiStart)
	if p.Total != topics || len(p.Items) != 50 || p.Items[0].Name != "t-00000" || p.Items[0].Size < 0 {
		t.Fatalf("/api/topics: total %d, %d items, first %+v", p.Total, len(p.Items), p.Items[0])
	}

	b := newBrowser(t)
	css, text, do := b.css, b.text, b.do
	loadStart := time.Now()
	do("open the topics page",
		chromedp.Navigate(n.url("/#/topics")),
		chromedp.WaitVisible(css(`#topics a[data-topic="t-00049"]`)))
	load := time.Since(loadStart)
	if c := text("#topics-count"); c != "1–50 of 10,000" {
		t.Errorf("count %q", c)
	}
	nextStart := time.Now()
	do("the next page",
		chromedp.Click(css("#topics-next")),
		chromedp.WaitVisible(css(`#topics a[data-topic="t-00099"]`)))
	next := time.Since(nextStart)
	filterStart := time.Now()
	do("filter", chromedp.SendKeys(css("#topics-filter"), "t-0999"))
	b.poll("ten topics", `document.querySelectorAll("#topics tbody tr").length === 10`)
	filter := time.Since(filterStart)
	t.Logf("10,000 topics: /api/topics %v; topics page loaded in %v, next page %v, filter (250 ms typing pause included) %v", apiTime, load, next, filter)

	// The other pages that list every topic's partitions.
	timed := func(what, hash, sel string) time.Duration {
		start := time.Now()
		do(what, chromedp.Navigate(n.url(hash)), chromedp.WaitVisible(css(sel)))
		return time.Since(start)
	}
	overview := timed("the cluster page", "/#/", `#brokers tr[data-broker="1"]`)
	broker := timed("broker 1's page", "/#/brokers/1", `#broker-partitions tr[data-topic="t-00049"]`)
	if c := text("#broker-partitions-count"); c != "1–50 of 10,000" {
		t.Errorf("broker partitions count %q", c)
	}
	topic := timed("a topic's page", "/#/topics/t-05000", `#topic-partitions tr[data-partition="0"]`)
	t.Logf("10,000 topics: cluster page %v, broker page %v, topic page %v", overview, broker, topic)
	b.checkExceptions()
}
