package server

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestReplicationQuotasFollowConfigs: the throttles take their rates from
// server.properties, then the cluster default, then this broker's dynamic
// config, and their throttled partitions from the topics' entries for this
// broker; deleting the configs lifts them.
func TestReplicationQuotasFollowConfigs(t *testing.T) {
	ts := startServer(t, t.TempDir(), map[string]string{"follower.replication.throttled.rate": "5000"})
	q := ts.srv.replicationQuotas
	if got := q.follower.Bound(); got != 5000 {
		t.Fatalf("static follower bound %v", got)
	}
	if got := q.leader.Bound(); !math.IsInf(got, 1) {
		t.Fatalf("leader bound %v, want none", got)
	}
	_, body := scrape(t, ts, "/metrics")
	for _, m := range []string{"kafka_server_leaderreplication_byte_rate 0", "kafka_server_followerreplication_byte_rate 0"} {
		if !strings.Contains(body, m+"\n") {
			t.Errorf("/metrics lacks %q", m)
		}
	}
	adm := ts.admin()
	ctx := ctxT(t)
	if _, err := adm.CreateTopic(ctx, 3, 1, map[string]*string{
		"leader.replication.throttled.replicas":   kadm.StringPtr("0:1,1:2"),
		"follower.replication.throttled.replicas": kadm.StringPtr("*"),
	}, "moving"); err != nil {
		t.Fatal(err)
	}
	alter := func(broker int32, op kadm.IncrementalOp, key, value string) {
		t.Helper()
		c := kadm.AlterConfig{Op: op, Name: key}
		if op == kadm.SetConfig {
			c.Value = &value
		}
		var err error
		var resps kadm.AlterConfigsResponses
		if broker < 0 {
			resps, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{c})
		} else {
			resps, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{c}, broker)
		}
		if err == nil {
			for _, r := range resps {
				err = r.Err
			}
		}
		if err != nil {
			t.Fatalf("%s %s: %v", key, value, err)
		}
	}
	// A broker listener alters its own broker's configs only (sent to
	// broker 1 directly: a client routes a broker's resource to it).
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeBroker, "7"
	op := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	op.Name, op.Value = "leader.replication.throttled.rate", kmsg.StringPtr("1")
	res.Configs = append(res.Configs, op)
	req.Resources = append(req.Resources, res)
	kresp, err := ts.client().Broker(1).Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if rr := kresp.(*kmsg.IncrementalAlterConfigsResponse).Resources; len(rr) != 1 || rr[0].ErrorCode != kerr.InvalidRequest.Code ||
		rr[0].ErrorMessage == nil || *rr[0].ErrorMessage != "Unexpected broker id, expected 1, but received 7" {
		t.Fatalf("altering broker 7 on broker 1: %+v", rr)
	}
	alter(-1, kadm.SetConfig, "leader.replication.throttled.rate", "7000")
	waitFor(t, "cluster default leader rate", 10*time.Second, func() bool { return q.leader.Bound() == 7000 })
	alter(1, kadm.SetConfig, "leader.replication.throttled.rate", "9000")
	waitFor(t, "broker leader rate", 10*time.Second, func() bool { return q.leader.Bound() == 9000 })
	if !q.leader.IsThrottled("moving", 0) || q.leader.IsThrottled("moving", 1) || !q.follower.IsThrottled("moving", 2) {
		t.Fatal("throttled partitions do not follow the topic configs")
	}
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.DeleteConfig, Name: "leader.replication.throttled.replicas"},
		{Op: kadm.DeleteConfig, Name: "follower.replication.throttled.replicas"},
	}, "moving"); err != nil {
		t.Fatal(err)
	}
	alter(1, kadm.DeleteConfig, "leader.replication.throttled.rate", "")
	waitFor(t, "throttles lifted", 10*time.Second, func() bool {
		return !q.leader.IsThrottled("moving", 0) && !q.follower.IsThrottled("moving", 2) && q.leader.Bound() == 7000
	})
}
