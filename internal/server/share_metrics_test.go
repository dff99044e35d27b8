package server

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// alterGroupConfig sets one config of a group (IncrementalAlterConfigs on
// the GROUP resource).
func alterGroupConfig(t *testing.T, cl *kgo.Client, group, name, value string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = name, kmsg.StringPtr(value)
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctxT(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.Resources[0]; r.ErrorCode != 0 {
		t.Fatalf("alter %s of group %s: %+v", name, group, r)
	}
}

// waitMetrics scrapes /metrics until ok holds for its text, failing with
// the share group series after a deadline.
func waitMetrics(t *testing.T, ts *testServer, what string, ok func(text string) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, text := scrape(t, ts, "/metrics")
		if ok(text) {
			return
		}
		if time.Now().After(deadline) {
			var lines []string
			for _, l := range strings.Split(text, "\n") {
				if strings.Contains(l, "share") && !strings.HasPrefix(l, "#") {
					lines = append(lines, l)
				}
			}
			t.Fatalf("%s: not seen in /metrics:\n%s", what, strings.Join(lines, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestShareGroupMetrics drives real share consumers (franz-go) and reads
// Kafka's share group metrics back from /metrics: records acknowledged by
// type, acquisition lock timeouts, in-flight records and batches, share
// fetch and acknowledgement requests by topic (and a failed one), share
// groups by state and their rebalances.
func TestShareGroupMetrics(t *testing.T) {
	ts := startServer(t, t.TempDir(), map[string]string{"group.share.min.record.lock.duration.ms": "1000"})
	admin := ts.client()
	if _, err := ts.admin().CreateTopic(ctxT(t), 1, 1, nil, "sm"); err != nil {
		t.Fatal(err)
	}
	prod := ts.client(kgo.DefaultProduceTopic("sm"))
	for i := range 10 {
		if err := prod.ProduceSync(ctxT(t), &kgo.Record{Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range []string{"acks-g", "lock-g"} {
		alterGroupConfig(t, admin, g, "share.auto.offset.reset", "earliest")
	}
	alterGroupConfig(t, admin, "lock-g", "share.record.lock.duration.ms", "1000")

	// lock-g: a member takes records and never acknowledges them; their
	// locks time out after a second.
	holder := ts.client(kgo.ShareGroup("lock-g"), kgo.ConsumeTopics("sm"))
	ctx := ctxT(t)
	for got := 0; got == 0; {
		fs := holder.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("poll lock-g: %v", err)
		}
		got = fs.NumRecords()
	}
	inFlight := `{group="lock-g",partition="0",topic="sm"}`
	waitMetrics(t, ts, "lock-g's records in flight", func(text string) bool {
		return sample(text, "kafka_server_sharepartitionmetrics_inflightmessagecount"+inFlight) >= 1 &&
			sample(text, "kafka_server_sharepartitionmetrics_inflightbatchcount"+inFlight) >= 1
	})
	waitMetrics(t, ts, "lock-g's lock timeouts", func(text string) bool {
		return sample(text, "kafka_server_sharepartitionmetrics_acquisitionlocktimeout_total"+inFlight) >= 1
	})
	// Its fetches held the share-partition's fetch lock, the first after
	// loading it.
	waitMetrics(t, ts, "lock-g's fetch lock holds and the partition load", func(text string) bool {
		return sample(text, "kafka_server_sharepartitionmetrics_fetchlocktimems_count"+inFlight) >= 1 &&
			sample(text, "kafka_server_sharepartitionmetrics_fetchlockratio_count"+inFlight) >= 1 &&
			sample(text, "kafka_server_sharegroupmetrics_partitionloadtimems_count") >= 1
	})

	// acks-g: one record rejected, one released, the others accepted.
	acker := ts.client(kgo.ShareGroup("acks-g"), kgo.ConsumeTopics("sm"))
	var rejected, released bool
	accepted := 0
	for !rejected || !released || accepted < 8 {
		fs := acker.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("poll acks-g: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			switch {
			case !rejected:
				r.Ack(kgo.AckReject)
				rejected = true
			case !released:
				r.Ack(kgo.AckRelease)
				released = true
			default:
				r.Ack(kgo.AckAccept)
				accepted++
			}
		})
		if err := acker.FlushAcks(ctx); err != nil {
			t.Fatalf("flush acks: %v", err)
		}
	}
	waitMetrics(t, ts, "acknowledgements by type", func(text string) bool {
		return sample(text, `kafka_server_sharegroupmetrics_recordacknowledgements_total{ackType="Reject"}`) == 1 &&
			sample(text, `kafka_server_sharegroupmetrics_recordacknowledgements_total{ackType="Release"}`) == 1 &&
			sample(text, `kafka_server_sharegroupmetrics_recordacknowledgements_total{ackType="Accept"}`) >= 8
	})
	waitMetrics(t, ts, "share fetch and acknowledgement requests", func(text string) bool {
		return sample(text, `kafka_server_brokertopicmetrics_totalsharefetchrequests_total{topic="sm"}`) >= 2 &&
			sample(text, `kafka_server_brokertopicmetrics_totalsharefetchrequests_total{topic=""}`) >= 2 &&
			sample(text, `kafka_server_brokertopicmetrics_totalshareacknowledgementrequests_total{topic="sm"}`) >= 1 &&
			sample(text, `kafka_server_brokertopicmetrics_totalshareacknowledgementrequests_total{topic=""}`) >= 1
	})

	// A member acknowledging a record it does not hold: a failed share
	// acknowledgement of topic sm.
	topics, err := ts.admin().ListTopics(ctx, "sm")
	if err != nil {
		t.Fatal(err)
	}
	topicID := topics["sm"].ID
	member := "raw-member-0123456789abcdefghijk"
	fetch := kmsg.NewPtrShareFetchRequest()
	fetch.GroupID, fetch.MemberID, fetch.ShareSessionEpoch = kmsg.StringPtr("raw-g"), &member, 0
	ft := kmsg.NewShareFetchRequestTopic()
	ft.TopicID = topicID
	fp := kmsg.NewShareFetchRequestTopicPartition()
	fp.Partition = 0
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	if fresp, err := fetch.RequestWith(ctx, admin); err != nil || fresp.ErrorCode != 0 {
		t.Fatalf("share fetch: %v %+v", err, fresp)
	}
	ack := kmsg.NewPtrShareAcknowledgeRequest()
	ack.GroupID, ack.MemberID, ack.ShareSessionEpoch = kmsg.StringPtr("raw-g"), &member, 1
	at := kmsg.NewShareAcknowledgeRequestTopic()
	at.TopicID = topicID
	ap := kmsg.NewShareAcknowledgeRequestTopicPartition()
	ap.Partition = 0
	ab := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
	ab.FirstOffset, ab.LastOffset, ab.AcknowledgeTypes = 0, 0, []int8{1}
	ap.AcknowledgementBatches = append(ap.AcknowledgementBatches, ab)
	at.Partitions = append(at.Partitions, ap)
	ack.Topics = append(ack.Topics, at)
	aresp, err := ack.RequestWith(ctx, admin)
	if err != nil || aresp.ErrorCode != 0 || len(aresp.Topics) != 1 || aresp.Topics[0].Partitions[0].ErrorCode == 0 {
		t.Fatalf("share acknowledge of a record not held: %v %+v", err, aresp)
	}
	waitMetrics(t, ts, "a failed share acknowledgement", func(text string) bool {
		return sample(text, `kafka_server_brokertopicmetrics_failedshareacknowledgementrequests_total{topic="sm"}`) >= 1 &&
			sample(text, `kafka_server_brokertopicmetrics_failedshareacknowledgementrequests_total{topic=""}`) >= 1
	})

	waitMetrics(t, ts, "share groups by state", func(text string) bool {
		return sample(text, `kafka_server_group_coordinator_metrics_group_count{protocol="share"}`) == 2 &&
			sample(text, `kafka_server_group_coordinator_metrics_share_group_count{state="Stable"}`) == 2 &&
			sample(text, `kafka_server_group_coordinator_metrics_share_group_rebalance_total`) >= 2
	})

	// Both members leave: their groups are Empty.
	holder.Close()
	acker.Close()
	waitMetrics(t, ts, "empty share groups", func(text string) bool {
		return sample(text, `kafka_server_group_coordinator_metrics_share_group_count{state="Empty"}`) == 2 &&
			sample(text, `kafka_server_group_coordinator_metrics_share_group_count{state="Stable"}`) == 0
	})

	// lock-g deleted: its share-partition series go with it.
	if resp, err := ts.admin().DeleteGroup(ctx, "lock-g"); err != nil || resp.Err != nil {
		t.Fatalf("delete lock-g: %v %v", err, resp.Err)
	}
	waitMetrics(t, ts, "lock-g's series gone", func(text string) bool {
		return sample(text, "kafka_server_sharepartitionmetrics_acquisitionlocktimeout_total"+inFlight) == -1 &&
			sample(text, "kafka_server_sharepartitionmetrics_inflightmessagecount"+inFlight) == -1 &&
			sample(text, "kafka_server_sharepartitionmetrics_fetchlocktimems_count"+inFlight) == -1 &&
			sample(text, `kafka_server_group_coordinator_metrics_share_group_count{state="Empty"}`) == 1
	})
}
