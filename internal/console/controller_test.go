package console_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/server"
)

// TestActiveControllerIsTheQuorumLeader: with the controller on a node of
// its own, the broker's DescribeCluster names the broker (KRaft brokers do),
// but the console shows the metadata quorum's leader as the active
// controller.
func TestActiveControllerIsTheQuorumLeader(t *testing.T) {
	b := startSeparateRoles(t, 2)[2]
	var cluster struct {
		ControllerID int32 `json:"controllerId"`
		Brokers      []struct {
			ID int32 `json:"id"`
		} `json:"brokers"`
		Quorum *struct {
			LeaderID int32 `json:"leaderId"`
		} `json:"quorum"`
	}
	resp, err := http.Get(b.url("/api/cluster"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&cluster); err != nil || resp.StatusCode != 200 {
		t.Fatalf("/api/cluster: %d %v", resp.StatusCode, err)
	}
	if cluster.Quorum == nil || cluster.Quorum.LeaderID != 1 || cluster.ControllerID != 1 ||
		len(cluster.Brokers) != 1 || cluster.Brokers[0].ID != 2 {
		t.Fatalf("active controller %d, quorum %+v, brokers %+v: want controller 1 (the quorum leader), broker 2",
			cluster.ControllerID, cluster.Quorum, cluster.Brokers)
	}

	// The broker follows the quorum as an observer: its raft-metrics say
	// so, and its poll idle ratio counts the time it applied records.
	mresp, err := http.Get(b.url("/metrics"))
	if err != nil {
		t.Fatal(err)
	}
	defer mresp.Body.Close()
	text, _ := io.ReadAll(mresp.Body)
	if !strings.Contains(string(text), "\nkafka_server_raft_metrics_current_state{state=\"observer\"} 1\n") {
		t.Errorf("broker 2's /metrics has no observer state")
	}
	m := regexp.MustCompile(`(?m)^kafka_server_raft_metrics_poll_idle_ratio_avg ([0-9.e+-]+)$`).FindSubmatch(text)
	if m == nil {
		t.Fatal("broker 2's /metrics has no poll idle ratio")
	}
	if r, err := strconv.ParseFloat(string(m[1]), 64); err != nil || !(r > 0 && r < 1) {
		t.Errorf("broker 2's poll idle ratio %s, want in (0, 1)", m[1])
	}
}

// TestStoppedBrokerShownFenced: a broker that went away stays in the
// brokers table, marked fenced, the topic page still has a size for every
// partition, and a topic left without a leader still has its page. (A
// broker killed but not yet fenced fails its DescribeLogDirs; that the
// others' answers are kept then is internal/logdirs' test.)
func TestStoppedBrokerShownFenced(t *testing.T) {
	brokers := startSeparateRoles(t, 2, 3)
	b := brokers[2]
	cl := b.client(kgo.DefaultProduceTopic("sized"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	ctx := ctxT(t)
	waitUntil(t, "both brokers registered and the topic created on them", func() bool {
		_, err := adm.CreateTopic(ctx, 4, 2, nil, "sized")
		return err == nil || errors.Is(err, kerr.TopicAlreadyExists)
	})
	for p := int32(0); p < 4; p++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte("0123456789")}).FirstErr(); err != nil {
			t.Fatalf("produce to partition %d: %v", p, err)
		}
	}
	waitUntil(t, "both replicas of every partition in sync", func() bool {
		md, err := adm.Metadata(ctx, "sized")
		if err != nil {
			return false
		}
		for _, p := range md.Topics["sized"].Partitions {
			if len(p.ISR) != 2 {
				return false
			}
		}
		return len(md.Topics["sized"].Partitions) == 4
	})
	// A topic whose only replica is on broker 3 goes offline with it.
	lonely := kmsg.NewPtrCreateTopicsRequest()
	lt := kmsg.NewCreateTopicsRequestTopic()
	lt.Topic, lt.NumPartitions, lt.ReplicationFactor = "lonely", -1, -1
	la := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	la.Partition, la.Replicas = 0, []int32{3}
	lt.ReplicaAssignment = append(lt.ReplicaAssignment, la)
	lonely.Topics = append(lonely.Topics, lt)
	if resp, err := lonely.RequestWith(ctx, cl); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create lonely on broker 3: %v %+v", err, resp)
	}

	brokers[3].stop()
	var cluster struct {
		Brokers []struct {
			ID     int32 `json:"id"`
			Fenced bool  `json:"fenced"`
		} `json:"brokers"`
	}
	waitUntil(t, "broker 3 listed as fenced", func() bool {
		getJSON(t, b.url("/api/cluster"), http.StatusOK, &cluster)
		return len(cluster.Brokers) == 2 && cluster.Brokers[0].ID == 2 && !cluster.Brokers[0].Fenced &&
			cluster.Brokers[1].ID == 3 && cluster.Brokers[1].Fenced
	})
	var topic topicJSON
	getJSON(t, b.url("/api/topics/sized"), http.StatusOK, &topic)
	if len(topic.PartitionList) != 4 {
		t.Fatalf("%d partitions listed, want 4", len(topic.PartitionList))
	}
	for _, p := range topic.PartitionList {
		if p.Size <= 0 || p.EndOffset != 1 {
			t.Errorf("partition %d: size %d, end offset %d with broker 3 down, want its copy on broker 2 with 1 record", p.Partition, p.Size, p.EndOffset)
		}
	}
	// The offline topic's page and the topic list still load: the offline
	// partition just has no offsets or size.
	getJSON(t, b.url("/api/topics/lonely"), http.StatusOK, &topic)
	if len(topic.PartitionList) != 1 || topic.PartitionList[0].Leader != -1 || topic.PartitionList[0].EndOffset != -1 {
		t.Errorf("offline topic: %+v", topic.PartitionList)
	}
	var listed pageJSON[topicJSON]
	getJSON(t, b.url("/api/topics"), http.StatusOK, &listed)
	topics := listed.Items
	if len(topics) < 2 {
		t.Errorf("topic list with a topic offline: %+v", topics)
	}

	// The stopped broker's page: fenced, its replicas listed from the
	// metadata, its log dirs missing with the reason; the live one's with
	// its copies' sizes. The controller is node 1, on a node of its own.
	var down, up brokerJSON
	getJSON(t, b.url("/api/brokers/3"), http.StatusOK, &down)
	if !down.Fenced || down.Controller || down.ControllerID != 1 || down.Partitions.Total != 5 || down.LogDirsError == "" || len(down.LogDirs) != 0 {
		t.Errorf("stopped broker 3's page: %+v", down)
	}
	getJSON(t, b.url("/api/brokers/2?q=sized&sort=size&order=desc&limit=2"), http.StatusOK, &up)
	if up.Fenced || up.Partitions.Total != 4 || len(up.Partitions.Items) != 2 || len(up.LogDirs) != 1 || up.LogDirs[0].Size <= 0 || up.LogDirs[0].Error != "" {
		t.Errorf("broker 2's page: %+v", up)
	}
	for _, p := range up.Partitions.Items {
		if p.Topic != "sized" || p.Size <= 0 || !p.InSync && p.Role == "leader" {
			t.Errorf("broker 2's partition %+v", p)
		}
	}
	if len(up.Configs) == 0 || up.ConfigsError != "" {
		t.Errorf("broker 2's configs: %d, error %q", len(up.Configs), up.ConfigsError)
	}
	var e struct{ Error string }
	getJSON(t, b.url("/api/brokers/9"), http.StatusNotFound, &e)
	getJSON(t, b.url("/api/brokers/x"), http.StatusBadRequest, &e)

	// The same in the browser: the stopped broker's page says it is down,
	// names the controller, and why its log dirs are missing.
	if chromium() == "" {
		return
	}
	br := newBrowser(t)
	br.do("open the stopped broker's page",
		chromedp.Navigate(b.url("/#/brokers/3")),
		chromedp.WaitVisible(br.css("#broker-logdirs-error")),
		chromedp.WaitVisible(br.css(`#broker-partitions tr[data-topic="lonely"]`)))
	if cards := br.text("main .cards"); !strings.Contains(cards, "fenced (down)") || !strings.Contains(cards, "node 1") {
		t.Errorf("stopped broker's cards %q: want fenced and controller node 1", cards)
	}
	if row := br.text(`#broker-partitions tr[data-topic="lonely"]`); !strings.Contains(row, "leader") && !strings.Contains(row, "follower") {
		t.Errorf("lonely's row on broker 3 %q", row)
	}
	br.checkExceptions()
}

// startSeparateRoles starts controller 1 on a node of its own and a broker
// node for each of brokerIDs, returning the brokers by id.
func startSeparateRoles(t *testing.T, brokerIDs ...int32) map[int32]*node {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	voters := fmt.Sprintf("1@127.0.0.1:%d", port)
	id := server.RandomUUID()
	format := func(nodeID int32) string {
		dir := t.TempDir()
		if _, err := server.Format([]string{dir}, nodeID, id, false); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	if _, err := tryStartNode(t, map[string]string{
		"process.roles": "controller", "node.id": "1",
		"listeners":                fmt.Sprintf("CONTROLLER://127.0.0.1:%d", port),
		"controller.quorum.voters": voters, "log.dirs": format(1),
	}); err != nil {
		t.Fatal(err)
	}
	brokers := map[int32]*node{}
	for _, nodeID := range brokerIDs {
		b, err := tryStartNode(t, map[string]string{
			"process.roles": "broker", "node.id": fmt.Sprint(nodeID),
			"listeners":                "PLAINTEXT://127.0.0.1:0",
			"controller.quorum.voters": voters, "log.dirs": format(nodeID),
		})
		if err != nil {
			t.Fatal(err)
		}
		brokers[nodeID] = b
	}
	return brokers
}
