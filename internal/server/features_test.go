package server

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// apiVersionsAt asks cl's broker for ApiVersions at version v.
func apiVersionsAt(t *testing.T, cl *kgo.Client, v int16) *kmsg.ApiVersionsResponse {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version, req.ClientSoftwareName, req.ClientSoftwareVersion = v, "test", "1"
	resp, err := cl.SeedBrokers()[0].Request(ctxT(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.(*kmsg.ApiVersionsResponse); got.Version == v {
		return got
	}
	t.Fatalf("ApiVersions answered at v%d, want v%d", resp.GetVersion(), v)
	return nil
}

func finalized(resp *kmsg.ApiVersionsResponse) map[string]int16 {
	out := map[string]int16{}
	for _, f := range resp.FinalizedFeatures {
		out[f.Name] = f.MaxVersionLevel
	}
	return out
}

// setFeature finalizes one feature level through UpdateFeatures (v2) and
// fails the test unless the update succeeded.
func setFeature(t *testing.T, cl *kgo.Client, name string, level int16, upgradeType int8, validateOnly bool) {
	t.Helper()
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.ValidateOnly = validateOnly
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = name, level, upgradeType
	req.FeatureUpdates = append(req.FeatureUpdates, u)
	resp, err := req.RequestWith(ctxT(t), cl)
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("update %s to %d: %v %+v", name, level, err, resp)
	}
}

// TestFeatureGating: share.version and group.version turn their APIs off
// and on cluster-wide, as Kafka 4.2 does: while a feature is 0 its APIs
// stay advertised and answer UNSUPPORTED_VERSION, and a level set through
// UpdateFeatures (forwarded by the broker) survives a restart.
func TestFeatureGating(t *testing.T) {
	dir := t.TempDir()
	props := map[string]string{"offsets.topic.num.partitions": "1", "share.coordinator.state.topic.num.partitions": "1"}
	ts := startServer(t, dir, props)
	cl := ts.client()
	ctx := ctxT(t)
	if _, err := ts.admin().CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	defaults := map[string]int16{"metadata.version": 25, "group.version": 1, "share.version": 1, "eligible.leader.replicas.version": 1, "transaction.version": 2}
	if got := finalized(apiVersionsAt(t, cl, 4)); !maps.Equal(got, defaults) {
		t.Fatalf("a new cluster's features %v, want %v", got, defaults)
	}
	if r := shareHeartbeat(t, cl, "sg", "member-1", 0, []string{"t"}); r.ErrorCode != 0 {
		t.Fatalf("join with share.version=1: %+v", r)
	}

	// validate_only changes nothing.
	setFeature(t, cl, "share.version", 0, 2, true)
	if got := finalized(apiVersionsAt(t, cl, 4)); got["share.version"] != 1 {
		t.Fatalf("after a validate-only downgrade: %v", got)
	}

	setFeature(t, cl, "share.version", 0, 2, false)
	resp := apiVersionsAt(t, cl, 4)
	if got := finalized(resp); got["share.version"] != 0 || len(got) != 4 || resp.FinalizedFeaturesEpoch <= 0 {
		t.Fatalf("after disabling share groups: %v epoch %d", got, resp.FinalizedFeaturesEpoch)
	}
	advertised := map[int16]bool{}
	for _, k := range resp.ApiKeys {
		advertised[k.ApiKey] = true
	}
	for _, key := range []int16{76, 77, 78, 79, 90, 91, 92} {
		if !advertised[key] {
			t.Errorf("%s not advertised while share.version=0 (Kafka advertises it)", kmsg.NameForKey(key))
		}
	}
	checkShareAPIs(t, cl, kerr.UnsupportedVersion.Code)

	// The level is in the metadata log: a restart keeps it.
	ts.stop()
	ts = startServer(t, dir, props)
	cl = ts.client()
	if got := finalized(apiVersionsAt(t, cl, 4)); got["share.version"] != 0 {
		t.Fatalf("after a restart: %v", got)
	}
	checkShareAPIs(t, cl, kerr.UnsupportedVersion.Code)

	setFeature(t, cl, "share.version", 1, 1, false)
	if r := shareHeartbeat(t, cl, "sg", "member-2", 0, []string{"t"}); r.ErrorCode != 0 {
		t.Fatalf("join after share.version=1 again: %+v", r)
	}
	checkShareAPIs(t, cl, 0)

	// group.version=0 turns the KIP-848 protocol off the same way.
	setFeature(t, cl, "group.version", 0, 2, false)
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch, hb.SubscribedTopicNames, hb.RebalanceTimeoutMillis = "cg", "m", 0, []string{"t"}, 30000
	hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if r, err := hb.RequestWith(ctx, cl); err != nil || r.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("consumer group heartbeat with group.version=0: %v %+v", err, r)
	}
	cd := kmsg.NewPtrConsumerGroupDescribeRequest()
	cd.Groups = []string{"cg", "other"}
	if r, err := cd.RequestWith(ctx, cl); err != nil || len(r.Groups) != 2 || r.Groups[1].ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("consumer group describe with group.version=0: %v %+v", err, r)
	}
	setFeature(t, cl, "group.version", 1, 1, false)
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := hb.RequestWith(ctx, cl)
		if err == nil && r.ErrorCode == 0 {
			break
		}
		if time.Now().After(deadline) || (err == nil && !retriable(r.ErrorCode)) {
			msg := ""
			if r != nil && r.ErrorMessage != nil {
				msg = *r.ErrorMessage
			}
			t.Fatalf("consumer group heartbeat with group.version=1: %v %+v %s", err, r, msg)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkShareAPIs checks that the share group APIs that a feature turns off
// answer want (0: they are served, whatever their own answer).
func checkShareAPIs(t *testing.T, cl *kgo.Client, want int16) {
	t.Helper()
	ctx := ctxT(t)
	check := func(api string, code int16, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", api, err)
		}
		if (want != 0 && code != want) || (want == 0 && code == kerr.UnsupportedVersion.Code) {
			t.Errorf("%s answered %v, want %v", api, kerr.ErrorForCode(code), kerr.ErrorForCode(want))
		}
	}
	if want != 0 {
		r := shareHeartbeat(t, cl, "sg", "member-9", 0, []string{"t"})
		check("ShareGroupHeartbeat", r.ErrorCode, nil)
	}
	d := kmsg.NewPtrShareGroupDescribeRequest()
	d.Version, d.GroupIDs = 1, []string{"sg"}
	if r, err := d.RequestWith(ctx, cl); err == nil && len(r.Groups) == 1 {
		check("ShareGroupDescribe", r.Groups[0].ErrorCode, nil)
	} else {
		t.Fatalf("ShareGroupDescribe: %v %+v", err, r)
	}
	f := kmsg.NewPtrShareFetchRequest()
	f.Version, f.GroupID, f.MemberID, f.ShareSessionEpoch, f.MaxWaitMillis = 1, kmsg.StringPtr("sg"), kmsg.StringPtr("member-1-share-fetch-id00"), 0, 0
	if r, err := f.RequestWith(ctx, cl); err == nil {
		check("ShareFetch", r.ErrorCode, nil)
	} else {
		check("ShareFetch", 0, err)
	}
	a := kmsg.NewPtrShareAcknowledgeRequest()
	a.Version, a.GroupID, a.MemberID, a.ShareSessionEpoch = 1, kmsg.StringPtr("sg"), kmsg.StringPtr("member-1-share-fetch-id00"), 1
	if r, err := a.RequestWith(ctx, cl); err == nil {
		check("ShareAcknowledge", r.ErrorCode, nil)
	} else {
		check("ShareAcknowledge", 0, err)
	}
	o := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	og := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	og.GroupID = "sg"
	o.Groups = append(o.Groups, og)
	if r, err := o.RequestWith(ctx, cl); err == nil && len(r.Groups) == 1 {
		check("DescribeShareGroupOffsets", r.Groups[0].ErrorCode, nil)
	} else {
		t.Fatalf("DescribeShareGroupOffsets: %v %+v", err, r)
	}
	if want != 0 { // altering and deleting offsets needs an empty group
		al := kmsg.NewPtrAlterShareGroupOffsetsRequest()
		al.GroupID = "sg"
		r, err := al.RequestWith(ctx, cl)
		check("AlterShareGroupOffsets", func() int16 {
			if r == nil {
				return 0
			}
			return r.ErrorCode
		}(), err)
		dl := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
		dl.GroupID = "sg"
		dr, err := dl.RequestWith(ctx, cl)
		check("DeleteShareGroupOffsets", func() int16 {
			if dr == nil {
				return 0
			}
			return dr.ErrorCode
		}(), err)
	}
}

// TestApiVersionsFeatures: a v4 answer lists every supported feature, an
// older one leaves out those whose lowest level is 0 (as Kafka, for
// clients that cannot read them); the controller listener answers with the
// same features (kafka-features --bootstrap-controller) and serves
// UpdateFeatures itself.
func TestApiVersionsFeatures(t *testing.T) {
	ts := startServer(t, t.TempDir(), nil)
	names := func(resp *kmsg.ApiVersionsResponse) map[string][2]int16 {
		out := map[string][2]int16{}
		for _, f := range resp.SupportedFeatures {
			out[f.Name] = [2]int16{f.MinVersion, f.MaxVersion}
		}
		return out
	}
	all := map[string][2]int16{"metadata.version": {7, 25}, "group.version": {0, 1}, "share.version": {0, 1}, "eligible.leader.replicas.version": {0, 1}, "transaction.version": {0, 2}}
	cl := ts.client()
	if got := names(apiVersionsAt(t, cl, 4)); !maps.Equal(got, all) {
		t.Errorf("v4 supported features %v, want %v", got, all)
	}
	// kgo asks at the highest version both sides know, so cap it.
	v3 := kversion.Stable()
	v3.SetMaxKeyVersion(18, 3)
	old := ts.client(kgo.MaxVersions(v3))
	if got := names(apiVersionsAt(t, old, 3)); !maps.Equal(got, map[string][2]int16{"metadata.version": {7, 25}}) {
		t.Errorf("v3 supported features %v, want metadata.version only", got)
	}

	ctrl, err := kgo.NewClient(kgo.SeedBrokers(ts.srv.Addr("CONTROLLER").String()))
	if err != nil {
		t.Fatal(err)
	}
	defer ctrl.Close()
	resp := apiVersionsAt(t, ctrl, 4)
	if got := names(resp); !maps.Equal(got, all) || !maps.Equal(finalized(resp), map[string]int16{"metadata.version": 25, "group.version": 1, "share.version": 1, "eligible.leader.replicas.version": 1, "transaction.version": 2}) {
		t.Fatalf("controller listener: supported %v finalized %v", got, finalized(resp))
	}
	// The controller listener answers UpdateFeatures itself; its answer
	// comes once the record is committed, and the broker sees it once
	// its image catches up.
	req := kmsg.NewPtrUpdateFeaturesRequest()
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = "share.version", 0, 2
	req.FeatureUpdates = append(req.FeatureUpdates, u)
	var ur *kmsg.UpdateFeaturesResponse
	deadline := time.Now().Add(30 * time.Second)
	for {
		var kr kmsg.Response
		kr, err = ctrl.SeedBrokers()[0].Request(context.Background(), req)
		if err == nil {
			ur = kr.(*kmsg.UpdateFeaturesResponse)
			if ur.ErrorCode != kerr.NotController.Code {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("update on the controller listener: %v %+v", err, ur)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if ur.ErrorCode != 0 {
		t.Fatalf("update on the controller listener: %+v", ur)
	}
	if got := finalized(apiVersionsAt(t, ctrl, 4)); got["share.version"] != 0 {
		t.Fatalf("controller listener after the update: %v", got)
	}
	waitFor(t, "the broker's image", 10*time.Second, func() bool {
		return finalized(apiVersionsAt(t, cl, 4))["share.version"] == 0
	})
}

// TestConsumerProtocolNeedsConfig: as Kafka 4.2, the KIP-848 protocol also
// needs "consumer" in group.coordinator.rebalance.protocols.
func TestConsumerProtocolNeedsConfig(t *testing.T) {
	ts := startServer(t, t.TempDir(), map[string]string{"group.coordinator.rebalance.protocols": "classic"})
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.SubscribedTopicNames, hb.RebalanceTimeoutMillis = "cg", "m", []string{"t"}, 30000
	hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	// Straight to the node: the check comes before the coordinator's.
	r, err := ts.client().SeedBrokers()[0].Request(ctxT(t), hb)
	if err != nil || r.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("consumer group heartbeat without the consumer protocol: %v %+v", err, r)
	}
}

// setTxnVersion finalizes transaction.version at level (a safe downgrade or
// an upgrade) and waits until the broker's ApiVersions shows it.
func setTxnVersion(t *testing.T, cl *kgo.Client, level int16) {
	t.Helper()
	setFeature(t, cl, "transaction.version", level, 2, false)
	waitFor(t, "transaction.version finalized", 20*time.Second, func() bool {
		return finalized(apiVersionsAt(t, cl, 4))["transaction.version"] == level
	})
}
