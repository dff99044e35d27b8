package console_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kadm"
)

// chromium finds a Chromium or Chrome binary (Debian's package "chromium"
// installs /usr/bin/chromium).
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestConsoleInBrowser opens the console in headless Chromium as a user
// would: the topics list shows the test's topic, its page shows the
// partitions and its group's lag, the group's page the lag per partition,
// the record browser the records, and the cluster page broker and quorum.
func TestConsoleInBrowser(t *testing.T) {
	b := newBrowser(t)
	n := startNode(t)
	seed(t, n, "e2e-orders", "e2e-billing", 3) // lag 7 on partition 0
	css, text, do := b.css, b.text, b.do
	retention := "86400000"
	if _, err := kadm.NewClient(n.client()).AlterTopicConfigs(ctxT(t), []kadm.AlterConfig{{Name: "retention.ms", Value: &retention}}, "e2e-orders"); err != nil {
		t.Fatal(err)
	}

	topicLink := `#topics a[data-topic="e2e-orders"]`
	lagCell := `#topic-groups td[data-group-lag="e2e-billing"]`
	do("open the topics list and the topic",
		chromedp.Navigate(n.url("/#/topics")),
		chromedp.WaitVisible(css(topicLink)),
		chromedp.Click(css(topicLink)),
		chromedp.WaitVisible(css(`#topic-partitions tr[data-partition="2"]`)),
		chromedp.WaitVisible(css(lagCell)))
	p0 := text(`#topic-partitions tr[data-partition="0"]`)
	topicLag := text(lagCell)

	do("browse partition 0",
		chromedp.Click(css(`#topic-partitions tr[data-partition="0"] a`)),
		chromedp.WaitVisible(css(`#records tr[data-offset="9"]`)))
	records := text(`#records`)
	if out := text(`#browse-out`); strings.HasSuffix(strings.TrimSpace(out), "null") {
		t.Errorf("a stray null under the records: %q", out)
	}
	// The topic's own override is listed first, before the defaults.
	do("wait for the configs", chromedp.WaitVisible(css(`#topic-configs tr[data-config="retention.ms"]`)))
	firstConfig := evalJS[string](b, `document.querySelector("#topic-configs tbody tr").dataset.config`)
	if firstConfig != "retention.ms" {
		t.Errorf("first config listed: %q, want the override retention.ms", firstConfig)
	}

	// A topic that does not exist: one error, no record browser.
	do("open a missing topic",
		chromedp.Navigate(n.url("/#/topics/no-such-topic")),
		chromedp.WaitVisible(css(`main p.error`)))
	errorsShown := evalJS[int](b, `document.querySelectorAll("main p.error").length`)
	browserShown := evalJS[bool](b, `!!document.getElementById("browse-out") && document.getElementById("browse-out").offsetParent !== null`)
	if errorsShown != 1 || browserShown {
		t.Errorf("missing topic: %d errors shown, record browser shown %v; want one error and no browser", errorsShown, browserShown)
	}
	do("back to the topic",
		chromedp.Navigate(n.url("/#/topics/e2e-orders")),
		chromedp.WaitVisible(css(`#topic-partitions tr[data-partition="0"]`)))

	do("open the group",
		chromedp.Click(css(`#topic-groups a[data-group="e2e-billing"]`)),
		chromedp.WaitVisible(css(`#group-offsets tr[data-partition="0"] td.lag`)))
	groupLag := text(`#group-offsets tr[data-partition="0"] td.lag`)

	do("open the cluster page",
		chromedp.Click(css(`header nav a[data-nav="overview"]`)),
		chromedp.WaitVisible(css(`#brokers tr[data-broker="1"]`)),
		chromedp.WaitVisible(css(`#quorum`)),
		chromedp.WaitVisible(css(`canvas`)))
	brokers, quorum := text(`#brokers`), text(`#quorum`)

	do("open the security page",
		chromedp.Click(css(`header nav a[data-nav="security"]`)),
		chromedp.WaitVisible(css(`#acls-disabled`)))
	security := text(`main`)
	if !strings.Contains(security, "No authorizer is configured") || !strings.Contains(security, "Client quotas") {
		t.Errorf("security page without an authorizer: %q", security)
	}

	if topicLag != "7" {
		t.Errorf("topic page: lag of e2e-billing = %q, want 7", topicLag)
	}
	if groupLag != "7" {
		t.Errorf("group page: lag of partition 0 = %q, want 7", groupLag)
	}
	// Partition 0: leader 1, offsets 0 to 10.
	if f := strings.Fields(p0); len(f) < 7 || f[0] != "0" || f[1] != "1" || f[5] != "0" || f[6] != "10" {
		t.Errorf("partition 0 row = %q", p0)
	}
	if !strings.Contains(records, "k9") || !strings.Contains(records, "value-9") || !strings.Contains(records, "00ff10") {
		t.Errorf("records table lacks k9/value-9/00ff10: %q", records)
	}
	if !strings.Contains(brokers, "controller") || !strings.Contains(brokers, "up") || strings.Contains(brokers, "fenced") {
		t.Errorf("brokers table does not show broker 1 up and the controller: %q", brokers)
	}
	if !strings.Contains(quorum, "Leader") {
		t.Errorf("quorum table has no leader: %q", quorum)
	}
	// The charts' y axes step in round values (were 634/s, 29.5MB/s).
	axes := evalJS[string](b, `[634, 29.5e6, 0.3, 0].map(m => { const s = niceScale(m);
		const ticks = []; for (let i = 0; i * s.step <= s.top * (1 + 1e-9); i++) ticks.push(fmtRate(i * s.step, "/s"));
		return ticks.join(" "); }).join(" | ")`)
	if want := "0/s 200/s 400/s 600/s 800/s | 0/s 10M/s 20M/s 30M/s | 0/s 0.1/s 0.2/s 0.3/s | 0/s 1/s"; axes != want {
		t.Errorf("chart axes %q, want %q", axes, want)
	}
	b.checkExceptions()
}

// browser is a headless Chromium tab, and helpers that fail the test.
type browser struct {
	t          *testing.T
	ctx        context.Context
	exceptions chan string
}

// newBrowser starts Chromium for the test, or skips it without one.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	bin := chromium()
	if bin == "" {
		t.Skip("no chromium binary on PATH (looked for chromium, chromium-browser, google-chrome, headless-shell); install Debian's package: apt-get install -y chromium")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.NoSandbox, // CI runs as root
		chromedp.DisableGPU,
		chromedp.WindowSize(1280, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	// Any uncaught exception in the page fails the test.
	exceptions := make(chan string, 8)
	tab, cancelTab := chromedp.NewContext(allocCtx, chromedp.WithListener(func(ev any) {
		if e, ok := ev.(*runtime.EventExceptionThrown); ok {
			select {
			case exceptions <- exceptionText(e.ExceptionDetails):
			default:
			}
		}
	}))
	t.Cleanup(cancelTab)
	ctx, cancel := context.WithTimeout(tab, 25*time.Second)
	t.Cleanup(cancel)
	return &browser{t: t, ctx: ctx, exceptions: exceptions}
}

func (b *browser) css(sel string) chromedp.CSS { return chromedp.CSS(sel) }

func (b *browser) text(sel string) string {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Text(b.css(sel), chromedp.NodeVisible))
	if err != nil {
		b.t.Fatalf("text of %s: %v", sel, err)
	}
	return v
}

// evalJS evaluates a JavaScript expression in the page.
func evalJS[T any](b *browser, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

func (b *browser) checkExceptions() {
	b.t.Helper()
	select {
	case e := <-b.exceptions:
		b.t.Errorf("uncaught exception in the page: %s", e)
	default:
	}
}

// TestConsoleLoginInBrowser logs in to the console of a cluster that
// requires SASL: the page asks for credentials first, shows the broker's
// refusal of a wrong password, reads the cluster once logged in, and asks
// again after logging out.
func TestConsoleLoginInBrowser(t *testing.T) {
	b := newBrowser(t)
	srv := saslConsole(t, saslCluster(t))
	css, text, do := b.css, b.text, b.do

	do("open the topics list: the login form instead",
		chromedp.Navigate(srv.URL+"/#/topics"),
		chromedp.WaitVisible(css("#login")))
	if opts := text("#login-mechanism"); !strings.Contains(opts, "PLAIN") || !strings.Contains(opts, "SCRAM-SHA-256") {
		t.Errorf("mechanisms offered: %q", opts)
	}
	do("log in with a wrong password",
		chromedp.SendKeys(css("#login-user"), plainUser),
		chromedp.SendKeys(css("#login-password"), "wrong"),
		chromedp.SetValue(css("#login-mechanism"), "PLAIN"),
		chromedp.Click(css("#login-submit")),
		chromedp.WaitVisible(css("#login-error")))
	if e := text("#login-error"); !strings.HasPrefix(e, "authentication failed: SASL_AUTHENTICATION_FAILED") || !strings.Contains(e, kafkaAuthFailure) {
		t.Errorf("login error %q", e)
	}
	do("log in",
		chromedp.SendKeys(css("#login-password"), plainPassword),
		chromedp.Click(css("#login-submit")),
		chromedp.WaitVisible(css(`#topics a[data-topic="secured"]`)))
	if u := text("#session-user"); u != plainUser {
		t.Errorf("header shows user %q", u)
	}
	do("log out",
		chromedp.Click(css("#logout")),
		chromedp.WaitVisible(css("#login")))
	do("the topic page asks for a login too",
		chromedp.Navigate(srv.URL+"/#/topics/secured"),
		chromedp.WaitVisible(css("#login")))
	b.checkExceptions()
}

func exceptionText(d *runtime.ExceptionDetails) string {
	if d == nil {
		return "(no details)"
	}
	text := fmt.Sprintf("%s at %s:%d:%d", d.Text, d.URL, d.LineNumber+1, d.ColumnNumber+1)
	if d.Exception != nil && d.Exception.Description != "" {
		text += ": " + d.Exception.Description
	}
	return text
}

// poll waits until the JavaScript expression is truthy.
func (b *browser) poll(what, expr string) {
	b.t.Helper()
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[bool](expr)); err != nil {
		b.t.Fatalf("%s (waiting for %s): %v", what, expr, err)
	}
}

// TestConsoleActionsInBrowser does in headless Chromium what an operator
// does with the console's actions: create a topic (after the broker
// refused a replication factor it cannot meet), produce a record and find
// it in the record browser, set a config (after the broker refused a bad
// value), and delete the topic, typing its name to confirm.
func TestConsoleActionsInBrowser(t *testing.T) {
	b := newBrowser(t)
	n := startNode(t)
	css, text, do := b.css, b.text, b.do
	adm := kadm.NewClient(n.client())

	do("open the topics list and the create form",
		chromedp.Navigate(n.url("/#/topics")),
		chromedp.WaitVisible(css("#new-topic")),
		chromedp.Click(css("#new-topic")),
		chromedp.WaitVisible(css("#create-name")),
		chromedp.SendKeys(css("#create-name"), "ui-made"),
		chromedp.SendKeys(css("#create-partitions"), "2"),
		chromedp.SendKeys(css("#create-rf"), "3"),
		chromedp.SendKeys(css("#create-configs"), "retention.ms=3600000"),
		chromedp.Click(css("#create-submit")),
		chromedp.WaitVisible(css("#create-topic-result.error")))
	if e := text("#create-topic-result"); !strings.Contains(e, "INVALID_REPLICATION_FACTOR: Unable to replicate the partition 3 time(s)") {
		t.Errorf("refused create shows %q", e)
	}
	do("create the topic",
		chromedp.SetValue(css("#create-rf"), "1"),
		chromedp.Click(css("#create-submit")),
		chromedp.WaitVisible(css(`#topic-partitions tr[data-partition="1"]`)),
		chromedp.WaitVisible(css(`#topic-configs tr[data-config="retention.ms"]`)))
	if v := text(`#topic-configs tr[data-config="retention.ms"]`); !strings.Contains(v, "3600000") || !strings.Contains(v, "DYNAMIC_TOPIC_CONFIG") {
		t.Errorf("retention.ms row after create: %q", v)
	}

	do("produce a record",
		chromedp.WaitVisible(css("#produce-value")),
		chromedp.SendKeys(css("#produce-partition"), "1"),
		chromedp.SendKeys(css("#produce-key"), "ui-key"),
		chromedp.SendKeys(css("#produce-value"), "hello from the console"),
		chromedp.SendKeys(css("#produce-headers"), "source=browser"),
		chromedp.Click(css("#produce-submit")),
		chromedp.WaitVisible(css("#produce-result.ok")))
	if r := text("#produce-result"); !strings.Contains(r, "Produced to partition 1 at offset 0.") {
		t.Errorf("produce result %q", r)
	}
	// The partitions table shows the new end offset without waiting for its refresh.
	b.poll("partition 1's end offset to be 1",
		`document.querySelector('#topic-partitions tr[data-partition="1"]').children[6].textContent === "1"`)
	do("see it in the record browser",
		chromedp.Click(css("#produce-show")),
		chromedp.WaitVisible(css(`#records tr[data-offset="0"]`)))
	if rec := text(`#records tr[data-offset="0"]`); !strings.Contains(rec, "ui-key") || !strings.Contains(rec, "hello from the console") || !strings.Contains(rec, "source: browser") {
		t.Errorf("record row %q", rec)
	}
	if p := evalJS[string](b, `document.getElementById("browse-partition").value`); p != "1" {
		t.Errorf("record browser on partition %q, want the record's 1", p)
	}
	do("find it by a substring of its value",
		chromedp.SendKeys(css("#search-value"), "from the console"),
		chromedp.Click(css("#search-submit")),
		chromedp.WaitVisible(css(`#search-results tr[data-partition="1"][data-offset="0"]`)))
	if p := text("#search-progress"); !strings.Contains(p, "found 1.") {
		t.Errorf("search for the produced record: %q", p)
	}

	do("refused config value",
		chromedp.Click(css(`#topic-configs tr[data-config="retention.ms"] a.edit`)),
		chromedp.SetValue(css("#config-value"), "soon"),
		chromedp.Click(css("#config-set")),
		chromedp.WaitVisible(css("#config-edit-result.error")))
	if e := text("#config-edit-result"); !strings.Contains(e, `INVALID_CONFIG: invalid value "soon" for configuration retention.ms`) {
		t.Errorf("refused config shows %q", e)
	}
	do("set a config",
		chromedp.SetValue(css("#config-value"), "7200000"),
		chromedp.Click(css("#config-set")),
		chromedp.WaitVisible(css("#config-edit-result.ok")))
	b.poll("the configs table shows the new value",
		`(document.querySelector('#topic-configs tr[data-config="retention.ms"]') || {}).textContent.includes("7200000")`)
	rcs, err := adm.DescribeTopicConfigs(ctxT(t), "ui-made")
	if err != nil {
		t.Fatal(err)
	}
	if rc, err := rcs.On("ui-made", nil); err != nil {
		t.Fatal(err)
	} else if c := configValue(rc, "retention.ms"); c != "7200000" {
		t.Errorf("broker says retention.ms = %q", c)
	}

	do("add partitions",
		chromedp.SendKeys(css("#partitions-count"), "4"),
		chromedp.Click(css("#partitions-submit")),
		chromedp.WaitVisible(css("#add-partitions-result.ok")),
		chromedp.WaitVisible(css(`#topic-partitions tr[data-partition="3"]`)))
	do("elect preferred leaders",
		chromedp.Click(css("#elect-preferred")),
		chromedp.WaitVisible(css("#elect-leaders-result.ok")))
	if r := text("#elect-leaders-result"); !strings.Contains(r, "4 partitions: not needed") {
		t.Errorf("election result %q", r)
	}

	// A group with commits on the topic: reset its offsets (a preview
	// first), then delete it.
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "ui-made", Partition: 1, At: 1, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(ctxT(t), "ui-group", offs); err != nil {
		t.Fatal(err)
	}
	do("preview a reset to earliest",
		chromedp.Navigate(n.url("/#/groups/ui-group")),
		chromedp.WaitVisible(css("#reset-to")),
		chromedp.SetValue(css("#reset-to"), "earliest"),
		chromedp.Click(css("#reset-preview")),
		chromedp.WaitVisible(css(`#reset-offsets-plan tr[data-partition="1"]`)))
	if r := text(`#reset-offsets-plan tr[data-partition="1"]`); !strings.Contains(r, "ui-made") || !strings.Contains(r, "1") || !strings.Contains(r, "0") {
		t.Errorf("reset plan row %q", r)
	}
	if r := text("#reset-offsets-result"); !strings.Contains(r, "Dry run") {
		t.Errorf("preview result %q", r)
	}
	do("reset for real",
		chromedp.Click(css("#reset-execute")),
		chromedp.WaitVisible(css("#reset-offsets-result.ok")))
	b.poll("the offsets table shows the new commit",
		`(document.querySelector('#group-offsets tr[data-partition="1"]') || {children: []}).children[2]?.textContent === "0"`)
	do("delete the group",
		chromedp.SendKeys(css("#group-delete-confirm"), "ui-group"),
		chromedp.WaitEnabled(css("#group-delete-submit")),
		chromedp.Click(css("#group-delete-submit")))
	b.poll("the groups list", `location.hash === "#/groups"`)
	if l, err := adm.ListGroups(ctxT(t)); err != nil || len(l) != 0 {
		t.Errorf("groups after the console deleted ui-group: %v %v", l.Groups(), err)
	}

	do("back to the topic",
		chromedp.Navigate(n.url("/#/topics/ui-made")),
		chromedp.WaitVisible(css("#delete-topic-start")))
	do("start deleting",
		chromedp.Click(css("#delete-topic-start")),
		chromedp.WaitVisible(css("#delete-confirm")),
		chromedp.SendKeys(css("#delete-confirm"), "ui-mad"))
	if evalJS[bool](b, `document.getElementById("delete-submit").disabled`) != true {
		t.Error("delete enabled before the name is typed in full")
	}
	do("delete the topic",
		chromedp.SendKeys(css("#delete-confirm"), "e"),
		chromedp.WaitEnabled(css("#delete-submit")),
		chromedp.Click(css("#delete-submit")),
		chromedp.WaitVisible(css("#new-topic")))
	b.poll("the topics list without ui-made", `location.hash === "#/topics" && !document.querySelector('#topics a[data-topic="ui-made"]')`)
	// A new client: franz-go answers a Metadata request from a recent
	// answer (ListGroups above asked for every topic), for up to its
	// MetadataMinAge.
	tds, err := kadm.NewClient(n.client()).ListTopics(ctxT(t), "ui-made")
	if err != nil || tds["ui-made"].Err == nil {
		t.Errorf("ui-made after deletion: %v %+v", err, tds)
	}
	b.checkExceptions()
}

func configValue(rc kadm.ResourceConfig, name string) string {
	for _, c := range rc.Configs {
		if c.Key == name {
			return c.MaybeValue()
		}
	}
	return ""
}
