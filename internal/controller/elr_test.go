package controller

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/metadata"
)

// TestELRMinISRInvariants: turning eligible leader replicas on writes the
// cluster-level min.insync.replicas (the static value) and removes the
// broker-level ones; while it is on, a broker-level value cannot be set and
// the cluster-level one cannot be removed (Kafka's KAFKA-16540 rules), and
// a change of min.insync.replicas clears the ELRs it concerns.
func TestELRMinISRInvariants(t *testing.T) {
	cfg := testConfig()
	cfg.MinInsyncReplicas = 2
	// A cluster formatted with eligible leader replicas off.
	levels := metadata.DefaultFeatureLevels(metadata.LatestMetadataVersion)
	levels[metadata.EligibleLeaderReplicasVersionFeature] = 0
	cfg.Bootstrap = metadata.FeatureLevelRecords(levels)
	n := startNode(t, metadataDir(t), cfg)
	n.mustCreate(newTopic("t", 1, 1))
	broker, topic := kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeTopic
	del := func(name string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
		return incOp(kmsg.IncrementalAlterConfigOpDelete, name, nil)
	}
	if r := n.incAlter(false, incResource(broker, "1", incSet("min.insync.replicas", "3"))); r.Resources[0].ErrorCode != 0 {
		t.Fatalf("broker-level min.insync.replicas with ELR off: %+v", r.Resources[0])
	}

	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.Version = 1
	req.FeatureUpdates = append(req.FeatureUpdates, featureUpdate(metadata.EligibleLeaderReplicasVersionFeature, 1, upgradeTypeUpgrade))
	if resp := n.c.UpdateFeatures(context.Background(), req); resp.ErrorCode != 0 {
		t.Fatalf("turn ELR on: %+v %s", resp, deref(resp.ErrorMessage))
	}
	img := n.c.Image()
	if v := img.ClusterConfigs()["min.insync.replicas"]; v != "2" {
		t.Errorf("cluster-level min.insync.replicas %q, want the static 2", v)
	}
	if _, ok := img.BrokerConfigs(1)["min.insync.replicas"]; ok {
		t.Errorf("broker-level min.insync.replicas kept: %v", img.BrokerConfigs(1))
	}

	for _, tc := range []struct {
		res  kmsg.IncrementalAlterConfigsRequestResource
		want string
	}{
		{incResource(broker, "1", incSet("min.insync.replicas", "3")), "Broker-level min.insync.replicas cannot be altered while ELR is enabled."},
		{incResource(broker, "1", del("min.insync.replicas")), "Broker-level min.insync.replicas cannot be altered while ELR is enabled."},
		{incResource(broker, "", del("min.insync.replicas")), "Cluster-level min.insync.replicas cannot be removed while ELR is enabled."},
	} {
		r := n.incAlter(true, tc.res).Resources[0]
		if r.ErrorCode != kerr.InvalidConfig.Code || deref(r.ErrorMessage) != tc.want {
			t.Errorf("%+v: %v %q, want INVALID_CONFIG %q", tc.res, kerr.ErrorForCode(r.ErrorCode), deref(r.ErrorMessage), tc.want)
		}
	}
	if r := n.incAlter(false, incResource(broker, "", incSet("min.insync.replicas", "1")), incResource(topic, "t", incSet("min.insync.replicas", "1"))); r.Resources[0].ErrorCode != 0 || r.Resources[1].ErrorCode != 0 {
		t.Fatalf("cluster and topic min.insync.replicas with ELR on: %+v", r.Resources)
	}

	// The records of such a change clear the ELRs: the topic's, and
	// every topic's for the cluster default.
	one := "1"
	recs := []metadata.Record{
		&metadata.ConfigRecord{ResourceType: metadata.ConfigResourceTopic, ResourceName: "t", Name: "min.insync.replicas", Value: &one},
		&metadata.ConfigRecord{ResourceType: metadata.ConfigResourceTopic, ResourceName: "t", Name: "retention.ms", Value: &one},
		&metadata.ConfigRecord{ResourceType: metadata.ConfigResourceBroker, Name: "min.insync.replicas", Value: &one},
	}
	got := clearELRRecords(img, recs)
	if len(got) != 2 || got[0].(*metadata.ClearElrRecord).TopicName != "t" || got[1].(*metadata.ClearElrRecord).TopicName != "" {
		t.Fatalf("clear ELR records %+v", got)
	}
	if got := clearELRRecords(metadata.EmptyImage(), recs); got != nil {
		t.Fatalf("clear ELR records with ELR off: %+v", got)
	}
}
