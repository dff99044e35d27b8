package console_test

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestStaticAssets(t *testing.T) {
	n := startNode(t)
	for path, want := range map[string]string{
		"/":                 "<title>Gregor console</title>",
		"/static/app.js":    "function route()",
		"/static/style.css": "--accent",
		"/metrics":          "go_goroutines",
		"/healthz":          "ok",
	} {
		resp, err := http.Get(n.url(path))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %d, body lacks %q", path, resp.StatusCode, want)
		}
	}
	// The console's root does not swallow unknown paths.
	resp, err := http.Get(n.url("/nope"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /nope: %d, want 404", resp.StatusCode)
	}
}

type partitionJSON struct {
	Partition   int32   `json:"partition"`
	Leader      int32   `json:"leader"`
	Replicas    []int32 `json:"replicas"`
	ISR         []int32 `json:"isr"`
	StartOffset int64   `json:"startOffset"`
	EndOffset   int64   `json:"endOffset"`
	Size        int64   `json:"size"`
}

type topicJSON struct {
	Name              string          `json:"name"`
	Internal          bool            `json:"internal"`
	Partitions        int             `json:"partitions"`
	ReplicationFactor int             `json:"replicationFactor"`
	Records           int64           `json:"records"`
	Size              int64           `json:"size"`
	PartitionList     []partitionJSON `json:"partitionList"`
	Configs           []struct {
		Name, Value, Source string
	} `json:"configs"`
	Groups []struct {
		Group string `json:"group"`
		Lag   int64  `json:"lag"`
	} `json:"groups"`
}

func TestClusterAndTopics(t *testing.T) {
	n := startNode(t)
	seed(t, n, "console-t", "console-g", 4)

	var cluster struct {
		ClusterID    string `json:"clusterId"`
		ControllerID int32  `json:"controllerId"`
		Brokers      []struct {
			ID      int32 `json:"id"`
			Port    int32 `json:"port"`
			Leaders int   `json:"leaders"`
		} `json:"brokers"`
		Quorum *struct {
			LeaderID      int32 `json:"leaderId"`
			HighWatermark int64 `json:"highWatermark"`
			Replicas      []struct {
				ID   int32  `json:"id"`
				Role string `json:"role"`
			} `json:"replicas"`
		} `json:"quorum"`
		QuorumError string `json:"quorumError"`
	}
	getJSON(t, n.url("/api/cluster"), http.StatusOK, &cluster)
	if cluster.ClusterID != n.srv.ClusterID() || cluster.ControllerID != 1 || len(cluster.Brokers) != 1 || cluster.Brokers[0].ID != 1 {
		t.Fatalf("cluster = %+v", cluster)
	}
	if cluster.Brokers[0].Leaders < 3 {
		t.Errorf("broker 1 leads %d partitions, want at least console-t's 3", cluster.Brokers[0].Leaders)
	}
	if cluster.Quorum == nil {
		t.Fatalf("no quorum: %s", cluster.QuorumError)
	}
	if q := cluster.Quorum; q.LeaderID != 1 || q.HighWatermark <= 0 || len(q.Replicas) != 1 || q.Replicas[0].Role != "Leader" {
		t.Errorf("quorum = %+v", *q)
	}

	var listed pageJSON[topicJSON]
	getJSON(t, n.url("/api/topics?internal=true"), http.StatusOK, &listed)
	topics := listed.Items
	i := slices.IndexFunc(topics, func(tj topicJSON) bool { return tj.Name == "console-t" })
	if i < 0 {
		t.Fatalf("console-t not in %+v", topics)
	}
	if tj := topics[i]; tj.Partitions != 3 || tj.ReplicationFactor != 1 || tj.Records != 10 || tj.Size <= 0 || tj.Internal {
		t.Errorf("console-t = %+v", tj)
	}
	if !slices.ContainsFunc(topics, func(tj topicJSON) bool { return tj.Name == "__consumer_offsets" && tj.Internal }) {
		t.Errorf("__consumer_offsets (internal) not listed: %+v", topics)
	}

	var topic topicJSON
	getJSON(t, n.url("/api/topics/console-t"), http.StatusOK, &topic)
	if len(topic.PartitionList) != 3 {
		t.Fatalf("partitions = %+v", topic.PartitionList)
	}
	p0 := topic.PartitionList[0]
	if p0.Partition != 0 || p0.Leader != 1 || !slices.Equal(p0.Replicas, []int32{1}) || !slices.Equal(p0.ISR, []int32{1}) ||
		p0.StartOffset != 0 || p0.EndOffset != 10 || p0.Size <= 0 {
		t.Errorf("partition 0 = %+v", p0)
	}
	if p1 := topic.PartitionList[1]; p1.EndOffset != 0 || p1.Size != 0 {
		t.Errorf("partition 1 = %+v", p1)
	}
	if !slices.ContainsFunc(topic.Configs, func(c struct{ Name, Value, Source string }) bool {
		return c.Name == "cleanup.policy" && c.Value == "delete"
	}) {
		t.Errorf("configs lack cleanup.policy=delete: %+v", topic.Configs)
	}
	if len(topic.Groups) != 1 || topic.Groups[0].Group != "console-g" || topic.Groups[0].Lag != 6 {
		t.Errorf("groups of console-t = %+v, want console-g with lag 6", topic.Groups)
	}

	var e struct{ Error string }
	getJSON(t, n.url("/api/topics/no-such-topic"), http.StatusNotFound, &e)
	if !strings.Contains(e.Error, "no-such-topic") {
		t.Errorf("error = %q", e.Error)
	}
}

type recordsJSON struct {
	StartOffset int64 `json:"startOffset"`
	EndOffset   int64 `json:"endOffset"`
	From        int64 `json:"from"`
	Records     []struct {
		Partition int32 `json:"partition"`
		Offset    int64 `json:"offset"`
		Timestamp int64 `json:"timestamp"`
		Key       *struct {
			Encoding, Data string
			Size           int
		} `json:"key"`
		Value *struct {
			Encoding, Data string
			Size           int
		} `json:"value"`
		Headers []struct {
			Key   string
			Value struct{ Data string }
		} `json:"headers"`
	} `json:"records"`
}

func (r recordsJSON) offsets() []int64 {
	var out []int64
	for _, rec := range r.Records {
		out = append(out, rec.Offset)
	}
	return out
}

func TestBrowseRecords(t *testing.T) {
	n := startNode(t)
	seed(t, n, "browse", "browse-g", 0)
	base := n.url("/api/topics/browse/records")

	var r recordsJSON
	getJSON(t, base+"?partition=0&offset=6&limit=3", http.StatusOK, &r)
	if !slices.Equal(r.offsets(), []int64{6, 7, 8}) || r.StartOffset != 0 || r.EndOffset != 10 || r.From != 6 {
		t.Fatalf("offset=6 limit=3: %+v", r)
	}
	if k := r.Records[0].Key; k == nil || k.Encoding != "text" || k.Data != "k6" {
		t.Errorf("key of 6 = %+v", k)
	}
	if v := r.Records[0].Value; v == nil || v.Encoding != "text" || v.Data != "value-6" {
		t.Errorf("value of 6 = %+v", v)
	}
	if v := r.Records[1].Value; v == nil || v.Encoding != "hex" || v.Data != "00ff10" || v.Size != 3 {
		t.Errorf("binary value of 7 = %+v", v)
	}
	if h := r.Records[0].Headers; len(h) != 1 || h[0].Key != "h" || h[0].Value.Data != "x" {
		t.Errorf("headers of 6 = %+v", h)
	}
	if ts := r.Records[0].Timestamp; time.Since(time.UnixMilli(ts)) > time.Minute {
		t.Errorf("timestamp %d is not recent", ts)
	}

	// The default shows the last records; earliest the first.
	r = recordsJSON{}
	getJSON(t, base+"?limit=4", http.StatusOK, &r)
	if !slices.Equal(r.offsets(), []int64{6, 7, 8, 9}) {
		t.Errorf("latest 4: %v", r.offsets())
	}
	r = recordsJSON{}
	getJSON(t, base+"?offset=earliest&limit=2", http.StatusOK, &r)
	if !slices.Equal(r.offsets(), []int64{0, 1}) {
		t.Errorf("earliest 2: %v", r.offsets())
	}
	// Past the end and an empty partition: nothing, at once.
	r = recordsJSON{}
	getJSON(t, base+"?offset=50", http.StatusOK, &r)
	if len(r.Records) != 0 || r.From != 10 {
		t.Errorf("offset 50: %+v", r)
	}
	r = recordsJSON{}
	getJSON(t, base+"?partition=2", http.StatusOK, &r)
	if len(r.Records) != 0 || r.EndOffset != 0 {
		t.Errorf("empty partition 2: %+v", r)
	}

	var e struct{ Error string }
	for url, status := range map[string]int{
		base + "?limit=1000":              http.StatusBadRequest,
		base + "?offset=soon":             http.StatusBadRequest,
		base + "?partition=x":             http.StatusBadRequest,
		base + "?partition=9":             http.StatusNotFound,
		n.url("/api/topics/nope/records"): http.StatusNotFound,
	} {
		getJSON(t, url, status, &e)
		if e.Error == "" {
			t.Errorf("GET %s: no error message", url)
		}
	}
}

type groupJSON struct {
	Group    string `json:"group"`
	State    string `json:"state"`
	TotalLag int64  `json:"totalLag"`
	Members  []struct {
		MemberID string `json:"memberId"`
		ClientID string `json:"clientId"`
		Assigned []struct {
			Topic      string  `json:"topic"`
			Partitions []int32 `json:"partitions"`
		} `json:"assigned"`
	} `json:"members"`
	Offsets []struct {
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
		Committed int64  `json:"committed"`
		EndOffset int64  `json:"endOffset"`
		Lag       int64  `json:"lag"`
		ClientID  string `json:"clientId"`
	} `json:"offsets"`
}

func TestGroups(t *testing.T) {
	n := startNode(t)
	seed(t, n, "grouped", "idle-g", 4)

	// A live member: a group consumer that read everything and committed.
	ctx := ctxT(t)
	live := n.client(kgo.ConsumerGroup("live-g"), kgo.ConsumeTopics("grouped"), kgo.ClientID("live-client"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	for got := 0; got < 10; {
		fs := live.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("poll: %v", err)
		}
		got += fs.NumRecords()
	}
	if err := live.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}

	var listed pageJSON[struct {
		Group   string `json:"group"`
		State   string `json:"state"`
		Members int    `json:"members"`
		Lag     int64  `json:"lag"`
	}]
	getJSON(t, n.url("/api/groups"), http.StatusOK, &listed)
	groups := listed.Items
	if len(groups) != 2 || groups[0].Group != "idle-g" || groups[1].Group != "live-g" {
		t.Fatalf("groups = %+v", groups)
	}
	if g := groups[0]; g.State != "Empty" || g.Members != 0 || g.Lag != 6 {
		t.Errorf("idle-g = %+v", g)
	}
	if g := groups[1]; g.State != "Stable" || g.Members != 1 || g.Lag != 0 {
		t.Errorf("live-g = %+v", g)
	}

	var idle groupJSON
	getJSON(t, n.url("/api/groups/idle-g"), http.StatusOK, &idle)
	if idle.State != "Empty" || len(idle.Members) != 0 || idle.TotalLag != 6 || len(idle.Offsets) != 1 {
		t.Fatalf("idle-g = %+v", idle)
	}
	if o := idle.Offsets[0]; o.Topic != "grouped" || o.Partition != 0 || o.Committed != 4 || o.EndOffset != 10 || o.Lag != 6 {
		t.Errorf("idle-g offsets = %+v", o)
	}

	var g groupJSON
	getJSON(t, n.url("/api/groups/live-g"), http.StatusOK, &g)
	if g.State != "Stable" || len(g.Members) != 1 || g.Members[0].ClientID != "live-client" {
		t.Fatalf("live-g = %+v", g)
	}
	if a := g.Members[0].Assigned; len(a) != 1 || a[0].Topic != "grouped" || !slices.Equal(a[0].Partitions, []int32{0, 1, 2}) {
		t.Errorf("assignment = %+v", a)
	}
	// Partition 0 was committed at 10; 1 and 2 are owned and empty.
	if len(g.Offsets) != 3 || g.Offsets[0].Committed != 10 || g.Offsets[0].Lag != 0 || g.Offsets[0].ClientID != "live-client" {
		t.Errorf("live-g offsets = %+v", g.Offsets)
	}

	var e struct{ Error string }
	getJSON(t, n.url("/api/groups/no-such-group"), http.StatusNotFound, &e)
}

func TestThroughput(t *testing.T) {
	n := startNode(t)
	seed(t, n, "tp", "tp-g", 0)
	cl := n.client(kgo.DefaultProduceTopic("tp"))
	ctx := ctxT(t)
	type series struct {
		IntervalMs int64 `json:"intervalMs"`
		Samples    []struct {
			T              int64    `json:"t"`
			RecordsPerSec  *float64 `json:"recordsPerSec"`
			BytesInPerSec  float64  `json:"bytesInPerSec"`
			BytesOutPerSec float64  `json:"bytesOutPerSec"`
		} `json:"samples"`
	}
	// Watching starts the end-offset sampling; keep producing until a
	// sample shows records and bytes flowing in.
	deadline := time.Now().Add(15 * time.Second)
	for {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("tick")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		var s series
		getJSON(t, n.url("/api/throughput"), http.StatusOK, &s)
		if s.IntervalMs != 1000 {
			t.Fatalf("intervalMs = %d", s.IntervalMs)
		}
		var records, bytesIn bool
		for i, p := range s.Samples {
			if i > 0 && p.T <= s.Samples[i-1].T {
				t.Fatalf("samples out of order: %+v", s.Samples)
			}
			records = records || (p.RecordsPerSec != nil && *p.RecordsPerSec > 0)
			bytesIn = bytesIn || p.BytesInPerSec > 0
		}
		if records && bytesIn {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no sample with records/s and bytes in/s > 0: %+v", s.Samples)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
