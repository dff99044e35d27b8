package metadata

import (
	"fmt"
	"maps"
	"reflect"
	"testing"

	"gregor/internal/pmap"
)

// historyBatches is a metadata log that uses every record kind the image
// keeps: features set and removed, brokers registered, re-registered,
// fenced and unfenced three ways, put in controlled shutdown and given log
// dirs, topics created, changed (leader, ISR, replicas, recovery state,
// directories, ELR), deleted and recreated under the same name, configs of
// every resource kind set, overwritten and deleted, producer id blocks, SCRAM
// credentials set, replaced and removed (a user's last one included), client
// quotas set, changed and removed (an entity's last one included).
func historyBatches() [][]Record {
	orders, payments, audit, orders2 := uuidOf(1), uuidOf(2), uuidOf(3), uuidOf(4)
	rack := strp("rack-b")
	b3 := broker(3, 30, true)
	b3.Rack = rack
	b3.LogDirs = [][16]byte{uuidOf(0x90)}
	b3.Features = []BrokerFeature{{Name: MetadataVersionFeature, MinSupportedVersion: 7, MaxSupportedVersion: 25}}
	b3.EndPoints = append(b3.EndPoints, BrokerEndpoint{Name: "SSL", Host: "b3.example", Port: 9443, SecurityProtocol: 1})
	leaderTo := func(id [16]byte, p, leader int32, isr ...int32) *PartitionChangeRecord {
		r := NewPartitionChangeRecord(id, p)
		r.Leader = leader
		r.ISR = isr
		return r
	}
	elr := NewPartitionChangeRecord(payments, 0)
	elr.RecordVersion = 2
	elr.EligibleLeaderReplicas = []int32{2}
	elr.LastKnownELR = []int32{}
	elr.LeaderRecoveryState = LeaderRecovering
	reassign := NewPartitionChangeRecord(payments, 1)
	reassign.Replicas = []int32{1, 2, 3}
	reassign.AddingReplicas = []int32{3}
	reassign.Directories = [][16]byte{uuidOf(0xa0), {}, uuidOf(0xb0)}
	v0 := partRec(audit, 1, 2)
	v0.RecordVersion = 0
	v0.Directories = nil
	cfg := func(typ int8, res, name string, value *string) *ConfigRecord {
		return &ConfigRecord{ResourceType: typ, ResourceName: res, Name: name, Value: value}
	}
	return [][]Record{
		{
			&FeatureLevelRecord{Name: MetadataVersionFeature, FeatureLevel: 21},
			&FeatureLevelRecord{Name: "kraft.version", FeatureLevel: 1},
			&FeatureLevelRecord{Name: "group.version", FeatureLevel: 1},
			broker(1, 10, true), broker(2, 20, true), b3, broker(4, 40, false),
		},
		{
			&UnfenceBrokerRecord{ID: 1, Epoch: 10},
			&BrokerRegistrationChangeRecord{RecordVersion: 2, BrokerID: 2, BrokerEpoch: 20, Fenced: BrokerUnfenced, LogDirs: [][16]byte{uuidOf(0x70)}},
			&TopicRecord{Name: "orders", TopicID: orders}, partRec(orders, 0, 1, 2), partRec(orders, 1, 2, 1),
			&TopicRecord{Name: "payments", TopicID: payments}, partRec(payments, 0, 2, 1), partRec(payments, 1, 1, 2),
			&TopicRecord{Name: "audit", TopicID: audit}, partRec(audit, 0, 1), v0,
			cfg(ConfigResourceTopic, "orders", "retention.ms", strp("1000")),
			cfg(ConfigResourceTopic, "payments", "cleanup.policy", strp("compact")),
			cfg(ConfigResourceTopic, "payments", "min.insync.replicas", strp("2")),
			cfg(ConfigResourceBroker, "", "log.retention.ms", strp("5")),
			cfg(ConfigResourceBroker, "", "num.io.threads", strp("4")),
			cfg(ConfigResourceBroker, "2", "log.cleaner.threads", strp("2")),
			&ProducerIdsRecord{BrokerID: 1, BrokerEpoch: 10, NextProducerID: 1000},
			scramRec("alice", 1, 4096), scramRec("alice", 2, 8192), scramRec("bob", 2, 4096),
			aclRec(3, "orders"), aclRec(1, "payments"), aclRec(2, "audit"),
			quotaRec(userClient("alice", "app"), "producer_byte_rate", 1024), quotaRec(userDefault, "consumer_byte_rate", 2048),
			quotaRec(userDefault, "request_percentage", 50), quotaRec(ipEntity("10.0.0.1"), "connection_creation_rate", 10),
		},
		{
			leaderTo(orders, 0, 2, 2), leaderTo(orders, 0, 1, 1, 2), elr, reassign,
			&FenceBrokerRecord{ID: 4, Epoch: 40},
			&BrokerRegistrationChangeRecord{RecordVersion: 1, BrokerID: 1, BrokerEpoch: 10, InControlledShutdown: 1},
			&RemoveTopicRecord{TopicID: orders},
			&TopicRecord{Name: "orders", TopicID: orders2}, partRec(orders2, 0, 2),
			cfg(ConfigResourceTopic, "orders", "segment.bytes", strp("1048576")),
			cfg(ConfigResourceTopic, "payments", "min.insync.replicas", nil),
			cfg(ConfigResourceBroker, "", "num.io.threads", strp("8")),
			cfg(ConfigResourceBroker, "2", "log.cleaner.threads", nil),
			&FeatureLevelRecord{Name: "group.version", FeatureLevel: 0},
			&FeatureLevelRecord{Name: MetadataVersionFeature, FeatureLevel: 25},
			&ProducerIdsRecord{BrokerID: 2, BrokerEpoch: 20, NextProducerID: 2000},
			&NoOpRecord{},
			&RemoveUserScramCredentialRecord{Name: "alice", Mechanism: 1}, scramRec("bob", 2, 16384),
			scramRec("carol", 1, 4096), &RemoveUserScramCredentialRecord{Name: "carol", Mechanism: 1},
			&RemoveAccessControlEntryRecord{ID: uuidOf(0xa1)}, aclRec(4, "new"), aclRec(5, "gone"),
			&RemoveAccessControlEntryRecord{ID: uuidOf(0xa5)},
			quotaRec(userClient("alice", "app"), "producer_byte_rate", 4096), NewRemoveClientQuotaRecord(userDefault, "request_percentage"),
			NewRemoveClientQuotaRecord(ipEntity("10.0.0.1"), "connection_creation_rate"),
			NewRemoveClientQuotaRecord(ipEntity("10.0.0.2"), "connection_creation_rate"), // absent: no error
		},
		{
			broker(2, 50, true), // a new incarnation of broker 2
			&RemoveTopicRecord{TopicID: audit},
		},
	}
}

// scramRec is a credential whose bytes say whose it is.
func scramRec(user string, mechanism int8, iterations int32) *UserScramCredentialRecord {
	return &UserScramCredentialRecord{Name: user, Mechanism: mechanism, Salt: []byte("salt-" + user),
		StoredKey: []byte("stored-" + user), ServerKey: []byte("server-" + user), Iterations: iterations}
}

// aclRec creates ACL uuidOf(0xa0+n): READ on a topic for User:alice.
func aclRec(n byte, topic string) *AccessControlEntryRecord {
	return &AccessControlEntryRecord{ID: uuidOf(0xa0 + n), ResourceType: 2, ResourceName: topic, PatternType: 3,
		Principal: "User:alice", Host: "*", Operation: 3, PermissionType: 3}
}

var userDefault = QuotaEntity{User: QuotaName{Present: true, Default: true}}

func userClient(user, client string) QuotaEntity {
	return QuotaEntity{User: QuotaName{Present: true, Name: user}, ClientID: QuotaName{Present: true, Name: client}}
}

func ipEntity(ip string) QuotaEntity { return QuotaEntity{IP: QuotaName{Present: true, Name: ip}} }

func quotaRec(e QuotaEntity, key string, value float64) *ClientQuotaRecord {
	return NewClientQuotaRecord(e, key, value)
}

// replayRecords builds an image from empty with one batch.
func replayRecords(t *testing.T, recs []Record) *Image {
	t.Helper()
	d := NewDelta(EmptyImage())
	if err := d.ReplayBatch(Batch{BaseOffset: 0, LastOffset: int64(len(recs)) - 1, Records: recs}); err != nil {
		t.Fatalf("replay: %v", err)
	}
	return d.Apply()
}

// throughWire encodes and decodes each record, as the log and a snapshot
// file do.
func throughWire(t *testing.T, recs []Record) []Record {
	t.Helper()
	out := make([]Record, len(recs))
	for i, r := range recs {
		got, err := Decode(Encode(r))
		if err != nil {
			t.Fatalf("decode %T: %v", r, err)
		}
		out[i] = got
	}
	return out
}

// sameState compares two images apart from Offset and Epoch, which come
// from the snapshot id rather than its records.
func sameState(t *testing.T, what string, got, want *Image) {
	t.Helper()
	g, w := *got, *want
	g.Offset, g.Epoch, w.Offset, w.Epoch = 0, 0, 0, 0
	// The topic indexes and the configs are trees whose shape depends on
	// the order of their updates: compare what they hold.
	g.Topics, w.Topics = nil, nil
	g.configs, w.configs = pmap.Map[ConfigResource, map[string]string, resourceOrder]{}, pmap.Map[ConfigResource, map[string]string, resourceOrder]{}
	if !reflect.DeepEqual(&g, &w) || !reflect.DeepEqual(maps.Collect(got.Topics.All()), maps.Collect(want.Topics.All())) ||
		!reflect.DeepEqual(topicsByID(got.Topics), topicsByID(want.Topics)) ||
		!reflect.DeepEqual(maps.Collect(got.AllConfigs()), maps.Collect(want.AllConfigs())) {
		t.Fatalf("%s: images differ\n got %s\nwant %s", what, describe(&g), describe(&w))
	}
}

func topicsByID(ti *TopicsImage) map[[16]byte]*Topic {
	return maps.Collect(ti.byID.All())
}

func describe(img *Image) string {
	var s string
	for _, r := range img.Records() {
		s += "\n  " + stringOf(r)
	}
	return s
}

func TestImageRecordsRoundTrip(t *testing.T) {
	batches := historyBatches()
	for n := 1; n <= len(batches); n++ {
		img, _, err := replayAll(t, batches[:n]...)
		if err != nil {
			t.Fatalf("history of %d batches: %v", n, err)
		}
		recs := img.Records()
		rebuilt := replayRecords(t, recs)
		sameState(t, "in memory", rebuilt, img)
		if again := rebuilt.Records(); !reflect.DeepEqual(again, recs) {
			t.Fatalf("after %d batches: Records of the rebuilt image differ", n)
		}
	}
}

// TestImageRecordsRoundTripThroughWire builds the image from decoded records
// (as a broker following the log does) and requires that its snapshot
// records, encoded and decoded again, rebuild it exactly, nil lists and all.
func TestImageRecordsRoundTripThroughWire(t *testing.T) {
	var wire [][]Record
	for _, b := range historyBatches() {
		wire = append(wire, throughWire(t, b))
	}
	for n := 1; n <= len(wire); n++ {
		img, _, err := replayAll(t, wire[:n]...)
		if err != nil {
			t.Fatal(err)
		}
		sameState(t, fmt.Sprintf("through the wire after %d batches", n), replayRecords(t, throughWire(t, img.Records())), img)
	}
}

func TestImageRecordsContent(t *testing.T) {
	if recs := EmptyImage().Records(); len(recs) != 0 {
		t.Fatalf("empty image gives %d records", len(recs))
	}
	img, _, err := replayAll(t, historyBatches()...)
	if err != nil {
		t.Fatal(err)
	}
	recs := img.Records()
	if f, ok := recs[0].(*FeatureLevelRecord); !ok || f.Name != MetadataVersionFeature || f.FeatureLevel != 25 {
		t.Fatalf("first record = %#v, want metadata.version 25", recs[0])
	}
	// The image after the history, in Kafka's part order, each part sorted.
	var kinds []string
	for _, r := range recs {
		kinds = append(kinds, stringOf(r))
	}
	want := []string{
		"feature metadata.version=25", "feature kraft.version=1",
		"broker 1 epoch 10 fenced=false shutdown=true", "broker 2 epoch 50 fenced=true shutdown=false",
		"broker 3 epoch 30 fenced=true shutdown=false", "broker 4 epoch 40 fenced=true shutdown=false",
		"topic orders", "partition orders-0 v1 leader 2 epoch 0/0",
		"topic payments", "partition payments-0 v2 leader 2 epoch 0/1", "partition payments-1 v1 leader 1 epoch 0/1",
		"config 2/orders segment.bytes=1048576", "config 2/payments cleanup.policy=compact",
		"config 4/ log.retention.ms=5", "config 4/ num.io.threads=8",
		"quota user=<default> consumer_byte_rate=2048", "quota user=alice, client-id=app producer_byte_rate=4096",
		"producer ids next 2000",
		"acl a2 audit", "acl a3 orders", "acl a4 new",
		"scram alice/2 8192", "scram bob/2 16384",
	}
	if !reflect.DeepEqual(kinds, want) {
		t.Fatalf("records:\n got %q\nwant %q", kinds, want)
	}
	for _, r := range recs {
		if p, ok := r.(*ProducerIdsRecord); ok && (p.BrokerID != -1 || p.BrokerEpoch != -1) {
			t.Fatalf("producer ids record names a broker: %+v", p)
		}
	}
}

// stringOf is a compact one-line view of the records an image writes.
func stringOf(r Record) string {
	names := map[[16]byte]string{uuidOf(1): "orders-old", uuidOf(2): "payments", uuidOf(3): "audit", uuidOf(4): "orders"}
	switch r := r.(type) {
	case *FeatureLevelRecord:
		return fmt.Sprintf("feature %s=%d", r.Name, r.FeatureLevel)
	case *RegisterBrokerRecord:
		return fmt.Sprintf("broker %d epoch %d fenced=%t shutdown=%t", r.BrokerID, r.BrokerEpoch, r.Fenced, r.InControlledShutdown)
	case *TopicRecord:
		return "topic " + r.Name
	case *PartitionRecord:
		return fmt.Sprintf("partition %s-%d v%d leader %d epoch %d/%d", names[r.TopicID], r.PartitionID, r.Version(), r.Leader, r.LeaderEpoch, r.PartitionEpoch)
	case *ConfigRecord:
		return fmt.Sprintf("config %d/%s %s=%s", r.ResourceType, r.ResourceName, r.Name, *r.Value)
	case *ProducerIdsRecord:
		return fmt.Sprintf("producer ids next %d", r.NextProducerID)
	case *AccessControlEntryRecord:
		return fmt.Sprintf("acl %x %s", r.ID[0], r.ResourceName)
	case *UserScramCredentialRecord:
		return fmt.Sprintf("scram %s/%d %d", r.Name, r.Mechanism, r.Iterations)
	case *ClientQuotaRecord:
		e, err := QuotaEntityFromData(r.Entity)
		if err != nil {
			return err.Error()
		}
		return fmt.Sprintf("quota %s %s=%v", e, r.Key, r.Value)
	}
	return fmt.Sprintf("%T", r)
}
