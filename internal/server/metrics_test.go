package server

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// scrape fetches a path of the node's HTTP listener.
func scrape(t *testing.T, ts *testServer, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + ts.srv.HTTPAddr().String() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// sample returns a metric's value from Prometheus text (-1 if absent).
func sample(text, series string) float64 {
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` ([0-9.e+-]+)$`)
	m := re.FindStringSubmatch(text)
	if m == nil {
		return -1
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

func TestMetricsEndpoint(t *testing.T) {
	ts := startServer(t, t.TempDir(), nil)
	if code, body := scrape(t, ts, "/healthz"); code != 200 || !strings.Contains(body, "ok") {
		t.Fatalf("/healthz: %d %q", code, body)
	}
	if code, body := scrape(t, ts, "/readyz"); code != 200 {
		t.Fatalf("/readyz: %d %q", code, body)
	}
	cl := ts.client(kgo.DefaultProduceTopic("m"))
	if _, err := kadm.NewClient(cl).CreateTopic(ctxT(t), 2, 1, nil, "m"); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := cl.ProduceSync(ctxT(t), &kgo.Record{Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// An error a client causes shows in the error counter.
	if _, err := kadm.NewClient(cl).CreateTopic(ctxT(t), 1, 1, nil, "m"); err == nil {
		t.Fatal("creating an existing topic succeeded")
	}
	// A fetch that waits its max wait on an empty partition: its handling
	// is remote time.
	empty, err := kadm.NewClient(cl).CreateTopic(ctxT(t), 1, 1, nil, "empty")
	if err != nil {
		t.Fatal(err)
	}
	fetch := kmsg.NewPtrFetchRequest()
	fetch.ReplicaID, fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes = -1, 300, 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = "empty", empty.ID // by name before v13, by id after
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = 0, 0, 1<<20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	fresp, err := fetch.RequestWith(ctxT(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(fresp.Topics) != 1 || len(fresp.Topics[0].Partitions) != 1 || fresp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("fetch: %+v", fresp)
	}
	_, text := scrape(t, ts, "/metrics")
	checks := map[string]float64{
		`kafka_server_brokertopicmetrics_messagesin_total{topic="m"}`:                                    10,
		`kafka_server_brokertopicmetrics_messagesin_total{topic=""}`:                                     10, // all topics
		`kafka_server_replicamanager_partitioncount`:                                                     3,
		`kafka_server_replicamanager_leadercount`:                                                        3,
		`kafka_server_replicamanager_underreplicatedpartitions`:                                          0,
		`kafka_controller_kafkacontroller_activecontrollercount`:                                         1,
		`kafka_controller_kafkacontroller_globaltopiccount`:                                              2,
		`kafka_controller_kafkacontroller_offlinepartitionscount`:                                        0,
		`kafka_network_requestmetrics_errors_total{error="TOPIC_ALREADY_EXISTS",request="CreateTopics"}`: 1,
		`kafka_server_raft_metrics_current_leader`:                                                       1,
		`kafka_server_raft_metrics_current_state{state="leader"}`:                                        1,
	}
	for series, want := range checks {
		if got := sample(text, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	if got := sample(text, `kafka_network_requestmetrics_requests_total{request="Produce"}`); got < 10 {
		t.Errorf("Produce requests = %v, want >= 10", got)
	}
	if got := sample(text, `kafka_server_brokertopicmetrics_bytesin_total{topic="m"}`); got <= 0 {
		t.Errorf("bytes in = %v", got)
	}
	if got := sample(text, `kafka_server_raft_metrics_commit_latency_ms_count`); got < 2 {
		t.Errorf("raft commit latency observed %v times, want one per topic created at least", got)
	}
	if got := sample(text, `kafka_server_raft_metrics_append_records_total`); got < 2 {
		t.Errorf("raft append records %v, want a record per topic created at least", got)
	}
	if got := sample(text, `kafka_server_raft_metrics_high_watermark`); got <= 0 {
		t.Errorf("raft high watermark %v", got)
	}
	// The single voter was busy appending the topics' records, and idle
	// for most of the test.
	if got := sample(text, `kafka_server_raft_metrics_poll_idle_ratio_avg`); !(got > 0 && got < 1) {
		t.Errorf("raft poll idle ratio %v, want in (0, 1)", got)
	}
	// Each request's time, split as Kafka splits it.
	if got := sample(text, `kafka_network_requestmetrics_remotetimems_sum{request="Fetch"}`); got < 200 {
		t.Errorf("Fetch remote time = %v ms, want the ~300 ms the fetch waited", got)
	}
	if got := sample(text, `kafka_network_requestmetrics_localtimems_sum{request="Fetch"}`); got >= 200 {
		t.Errorf("Fetch local time = %v ms, want the wait counted as remote", got)
	}
	for _, name := range []string{"localtimems", "remotetimems", "responsequeuetimems", "responsesendtimems", "totaltimems"} {
		if got := sample(text, `kafka_network_requestmetrics_`+name+`_count{request="Produce"}`); got < 10 {
			t.Errorf("%s of Produce observed %v times, want >= 10", name, got)
		}
	}
	// Each produce carried a record batch, whose header alone is 61 bytes.
	if n, sum := sample(text, `kafka_network_requestmetrics_requestbytes_count{request="Produce"}`), sample(text, `kafka_network_requestmetrics_requestbytes_sum{request="Produce"}`); n < 10 || sum < 61*n {
		t.Errorf("Produce request bytes: %v requests of %v bytes in all, want >= 10 of >= 61 bytes each", n, sum)
	}
	for _, name := range []string{"kafka_network_requestmetrics_totaltimems_bucket", "kafka_log_log_size{", "go_goroutines", "process_resident_memory_bytes"} {
		if !strings.Contains(text, name) {
			t.Errorf("no %s in /metrics", name)
		}
	}
	// A group committed at offset 1 of partition 0.
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctxT(t), "m")
	if err != nil {
		t.Fatal(err)
	}
	end0, _ := ends.Lookup("m", 0)
	var commit kadm.Offsets
	commit.Add(kadm.Offset{Topic: "m", Partition: 0, At: 1})
	if _, err := adm.CommitOffsets(ctxT(t), "lagging", commit); err != nil {
		t.Fatal(err)
	}
	_, text = scrape(t, ts, "/metrics")
	// The group coordinator's meters and gauges: one commit, by a group
	// that has no members (Empty).
	for series, want := range map[string]float64{
		`kafka_server_group_coordinator_metrics_offset_commit_total`:             1,
		`kafka_coordinator_group_groupmetadatamanager_numoffsets`:                1,
		`kafka_coordinator_group_groupmetadatamanager_numgroups`:                 1,
		`kafka_coordinator_group_groupmetadatamanager_numgroupsempty`:            1,
		`kafka_coordinator_group_groupmetadatamanager_numgroupsstable`:           0,
		`kafka_server_group_coordinator_metrics_group_count{protocol="classic"}`: 1,
	} {
		if got := sample(text, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	if got, want := sample(text, `kafka_consumergroup_lag{group="lagging",partition="0",topic="m"}`), float64(max(end0.Offset-1, 0)); got != want {
		t.Errorf("group lag = %v, want %v", got, want)
	}
	if got := sample(text, `kafka_consumergroup_lag_sum{group="lagging"}`); got != float64(max(end0.Offset-1, 0)) {
		t.Errorf("group lag sum = %v", got)
	}
}

// TestGroupCoordinatorMetrics: a consumer group member that joined shows as
// a rebalance and a group in its protocol's Stable state.
func TestGroupCoordinatorMetrics(t *testing.T) {
	ts := startServer(t, t.TempDir(), map[string]string{"group.initial.rebalance.delay.ms": "0"})
	if _, err := ts.admin().CreateTopic(ctxT(t), 1, 1, nil, "gm"); err != nil {
		t.Fatal(err)
	}
	cl := ts.client(kgo.ConsumerGroup("gm-group"), kgo.ConsumeTopics("gm"))
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		cl.PollFetches(ctx)
		cancel()
		_, text := scrape(t, ts, "/metrics")
		rebalances := sample(text, `kafka_server_group_coordinator_metrics_group_completed_rebalance_total`) +
			sample(text, `kafka_server_group_coordinator_metrics_consumer_group_rebalance_total`)
		// The consumer-group-count series of a state exists only while a
		// group is in it.
		stable := sample(text, `kafka_coordinator_group_groupmetadatamanager_numgroupsstable`) +
			max(sample(text, `kafka_server_group_coordinator_metrics_consumer_group_count{state="Stable"}`), 0)
		if rebalances >= 1 && stable == 1 && sample(text, `kafka_coordinator_group_groupmetadatamanager_numgroups`) == 1 {
			return
		}
		if time.Now().After(deadline) {
			var groupLines []string
			for _, l := range strings.Split(text, "\n") {
				if strings.Contains(l, "group") && !strings.HasPrefix(l, "#") {
					groupLines = append(groupLines, l)
				}
			}
			t.Fatalf("no stable group after a rebalance: rebalances %v, stable %v:\n%s", rebalances, stable, strings.Join(groupLines, "\n"))
		}
	}
}
