package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func mustLoad(t *testing.T, props map[string]string) (*Broker, []Warning) {
	t.Helper()
	b, w, err := Load(props)
	if err != nil {
		t.Fatalf("Load(%v): %v", props, err)
	}
	return b, w
}

func TestLoadZeroConfig(t *testing.T) {
	b, warnings := mustLoad(t, map[string]string{})
	if len(warnings) != 0 {
		t.Errorf("warnings = %v, want none", warnings)
	}
	if b.NodeID != 1 {
		t.Errorf("NodeID = %d, want 1", b.NodeID)
	}
	if !reflect.DeepEqual(b.ProcessRoles, []string{"broker", "controller"}) {
		t.Errorf("ProcessRoles = %v", b.ProcessRoles)
	}
	wantListeners := []Listener{{"PLAINTEXT", "127.0.0.1", 9092}, {"CONTROLLER", "127.0.0.1", 9093}}
	if !reflect.DeepEqual(b.Listeners, wantListeners) {
		t.Errorf("Listeners = %v", b.Listeners)
	}
	if !reflect.DeepEqual(b.AdvertisedListeners, wantListeners[:1]) {
		t.Errorf("AdvertisedListeners = %v, want the PLAINTEXT listener only", b.AdvertisedListeners)
	}
	if !reflect.DeepEqual(b.AdvertisedControllerListeners, wantListeners[1:]) {
		t.Errorf("AdvertisedControllerListeners = %v", b.AdvertisedControllerListeners)
	}
	wantMap := map[string]string{"PLAINTEXT": "PLAINTEXT", "SSL": "SSL", "SASL_PLAINTEXT": "SASL_PLAINTEXT", "SASL_SSL": "SASL_SSL", "CONTROLLER": "PLAINTEXT"}
	if !reflect.DeepEqual(b.ListenerSecurityProtocolMap, wantMap) {
		t.Errorf("ListenerSecurityProtocolMap = %v", b.ListenerSecurityProtocolMap)
	}
	if !reflect.DeepEqual(b.ControllerListenerNames, []string{"CONTROLLER"}) {
		t.Errorf("ControllerListenerNames = %v", b.ControllerListenerNames)
	}
	if !reflect.DeepEqual(b.ControllerQuorumVoters, []Voter{{1, "127.0.0.1", 9093}}) {
		t.Errorf("ControllerQuorumVoters = %v", b.ControllerQuorumVoters)
	}
	if b.InterBrokerListenerName != "PLAINTEXT" {
		t.Errorf("InterBrokerListenerName = %q", b.InterBrokerListenerName)
	}
	if !reflect.DeepEqual(b.LogDirs, []string{"./gregor-data"}) || b.MetadataLogDir != "./gregor-data" {
		t.Errorf("LogDirs = %v, MetadataLogDir = %q", b.LogDirs, b.MetadataLogDir)
	}
	if b.GregorHTTPListen != "127.0.0.1:9080" {
		t.Errorf("GregorHTTPListen = %q", b.GregorHTTPListen)
	}
	// Kafka 4.0 defaults.
	checks := []struct {
		name      string
		got, want any
	}{
		{"NumPartitions", b.NumPartitions, int32(1)},
		{"DefaultReplicationFactor", b.DefaultReplicationFactor, int16(1)},
		{"AutoCreateTopicsEnable", b.AutoCreateTopicsEnable, true},
		{"DeleteTopicEnable", b.DeleteTopicEnable, true},
		{"MessageMaxBytes", b.MessageMaxBytes, int32(1048588)},
		{"SocketRequestMaxBytes", b.SocketRequestMaxBytes, int32(104857600)},
		{"ConnectionsMaxIdleMs", b.ConnectionsMaxIdleMs, int64(600000)},
		{"QueuedMaxRequests", b.QueuedMaxRequests, 500},
		{"NumNetworkThreads", b.NumNetworkThreads, 3},
		{"NumIOThreads", b.NumIOThreads, 8},
		{"SocketSendBufferBytes", b.SocketSendBufferBytes, 102400},
		{"LogSegmentBytes", b.LogSegmentBytes, int32(1073741824)},
		{"LogRollMs", b.LogRollMs, int64(604800000)},
		{"LogRollJitterMs", b.LogRollJitterMs, int64(0)},
		{"LogRetentionMs", b.LogRetentionMs, int64(604800000)},
		{"LogRetentionBytes", b.LogRetentionBytes, int64(-1)},
		{"LogIndexSizeMaxBytes", b.LogIndexSizeMaxBytes, int32(10485760)},
		{"LogIndexIntervalBytes", b.LogIndexIntervalBytes, int32(4096)},
		{"LogFlushIntervalMessages", b.LogFlushIntervalMessages, int64(9223372036854775807)},
		{"LogFlushIntervalMs", b.LogFlushIntervalMs, int64(9223372036854775807)},
		{"LogFlushOffsetCheckpointIntervalMs", b.LogFlushOffsetCheckpointIntervalMs, int64(60000)},
		{"LogDeleteDelayMs", b.LogDeleteDelayMs, int64(60000)},
		{"CompressionType", b.CompressionType, "producer"},
		{"LogMessageTimestampType", b.LogMessageTimestampType, "CreateTime"},
		{"LogMessageTimestampAfterMaxMs", b.LogMessageTimestampAfterMaxMs, int64(3600000)},
		{"MinInsyncReplicas", b.MinInsyncReplicas, int32(1)},
		{"LogRetentionCheckIntervalMs", b.LogRetentionCheckIntervalMs, int64(300000)},
		{"NumRecoveryThreadsPerDataDir", b.NumRecoveryThreadsPerDataDir, 2},
		{"LogCleanerEnable", b.LogCleanerEnable, true},
		{"LogCleanerMinCleanableRatio", b.LogCleanerMinCleanableRatio, 0.5},
		{"OffsetsTopicNumPartitions", b.OffsetsTopicNumPartitions, int32(50)},
		{"OffsetsTopicReplicationFactor", b.OffsetsTopicReplicationFactor, int16(3)},
		{"TransactionStateLogNumPartitions", b.TransactionStateLogNumPartitions, int32(50)},
		{"TransactionStateLogMinISR", b.TransactionStateLogMinISR, int32(2)},
		{"GroupInitialRebalanceDelayMs", b.GroupInitialRebalanceDelayMs, int64(3000)},
		{"GroupMinSessionTimeoutMs", b.GroupMinSessionTimeoutMs, int64(6000)},
		{"GroupMaxSessionTimeoutMs", b.GroupMaxSessionTimeoutMs, int64(1800000)},
		{"ReplicaLagTimeMaxMs", b.ReplicaLagTimeMaxMs, int64(30000)},
		{"BrokerSessionTimeoutMs", b.BrokerSessionTimeoutMs, int64(9000)},
		{"FenceOnConnectionClose", b.FenceOnConnectionClose, true},
		{"ElectionOnLeaderExit", b.ElectionOnLeaderExit, true},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %v (%T), want %v (%T)", c.name, c.got, c.got, c.want, c.want)
		}
	}
	if !reflect.DeepEqual(b.LogCleanupPolicy, []string{"delete"}) {
		t.Errorf("LogCleanupPolicy = %v", b.LogCleanupPolicy)
	}
}

// kafkaCombinedProperties has the shape of the config/server.properties that
// ships with Apache Kafka 4.0 (combined broker+controller, dynamic-quorum
// bootstrap, controller listener advertised), written for this test.
const kafkaCombinedProperties = `
############################# Server Basics #############################

# This node is both a broker and a controller.
process.roles=broker,controller
node.id=1

# Where to find the controllers.
controller.quorum.bootstrap.servers=localhost:9093

############################# Socket Server Settings #############################

# Listen on every interface; CONTROLLER is the quorum's listener.
listeners=PLAINTEXT://:9092,CONTROLLER://:9093
inter.broker.listener.name=PLAINTEXT
advertised.listeners=PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL

num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600

############################# Log Basics #############################

log.dirs=/tmp/kraft-combined-logs
num.partitions=1
num.recovery.threads.per.data.dir=1

############################# Internal Topic Settings  #############################
offsets.topic.replication.factor=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1

############################# Log Flush Policy #############################
#log.flush.interval.messages=10000
#log.flush.interval.ms=1000

############################# Log Retention Policy #############################
log.retention.hours=168
#log.retention.bytes=1073741824
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
`

func TestLoadKafkaCombinedServerProperties(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(path, []byte(kafkaCombinedProperties), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	props, err := ParseProperties(f)
	if err != nil {
		t.Fatal(err)
	}
	b, warnings, err := Load(props)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	// The only warning is that the dynamic-quorum bootstrap is run as a
	// static single-voter quorum.
	if len(warnings) != 1 || !strings.Contains(string(warnings[0]), "controller.quorum.bootstrap.servers") {
		t.Errorf("warnings = %v", warnings)
	}
	if !reflect.DeepEqual(b.ControllerQuorumVoters, []Voter{{1, "localhost", 9093}}) {
		t.Errorf("ControllerQuorumVoters = %v", b.ControllerQuorumVoters)
	}
	if !reflect.DeepEqual(b.Listeners, []Listener{{"PLAINTEXT", "", 9092}, {"CONTROLLER", "", 9093}}) {
		t.Errorf("Listeners = %v", b.Listeners)
	}
	if !reflect.DeepEqual(b.AdvertisedListeners, []Listener{{"PLAINTEXT", "localhost", 9092}}) {
		t.Errorf("AdvertisedListeners = %v", b.AdvertisedListeners)
	}
	if !reflect.DeepEqual(b.AdvertisedControllerListeners, []Listener{{"CONTROLLER", "localhost", 9093}}) {
		t.Errorf("AdvertisedControllerListeners = %v", b.AdvertisedControllerListeners)
	}
	if !reflect.DeepEqual(b.LogDirs, []string{"/tmp/kraft-combined-logs"}) {
		t.Errorf("LogDirs = %v", b.LogDirs)
	}
	if b.OffsetsTopicReplicationFactor != 1 || b.TransactionStateLogMinISR != 1 || b.NumRecoveryThreadsPerDataDir != 1 {
		t.Errorf("internal topic settings not applied: %+v", b)
	}
	if b.LogRetentionMs != 168*3600000 {
		t.Errorf("LogRetentionMs = %d", b.LogRetentionMs)
	}
	if b.Props["log.dirs"] != "/tmp/kraft-combined-logs" {
		t.Errorf("Props not kept raw: %v", b.Props)
	}
}

func TestLoadStaticVotersThreeNodes(t *testing.T) {
	b, _ := mustLoad(t, map[string]string{
		"process.roles":            "broker,controller",
		"node.id":                  "2",
		"controller.quorum.voters": "1@h1:9093,2@h2:9093,3@h3:9093",
		"listeners":                "PLAINTEXT://h2:9092,CONTROLLER://h2:9093",
		"log.dirs":                 "/d1, /d2",
	})
	if len(b.ControllerQuorumVoters) != 3 || b.ControllerQuorumVoters[1] != (Voter{2, "h2", 9093}) {
		t.Errorf("voters = %v", b.ControllerQuorumVoters)
	}
	if !reflect.DeepEqual(b.LogDirs, []string{"/d1", "/d2"}) || b.MetadataLogDir != "/d1" {
		t.Errorf("LogDirs = %v, MetadataLogDir = %q", b.LogDirs, b.MetadataLogDir)
	}

	// A broker-only node of the same cluster.
	b, _ = mustLoad(t, map[string]string{
		"process.roles":            "broker",
		"node.id":                  "4",
		"controller.quorum.voters": "1@h1:9093,2@h2:9093,3@h3:9093",
		"listeners":                "PLAINTEXT://h4:9092",
	})
	if !reflect.DeepEqual(b.ListenerSecurityProtocolMap["CONTROLLER"], "PLAINTEXT") {
		t.Errorf("implicit CONTROLLER mapping missing: %v", b.ListenerSecurityProtocolMap)
	}
	if len(b.AdvertisedControllerListeners) != 0 {
		t.Errorf("broker-only node advertises controller listeners %v", b.AdvertisedControllerListeners)
	}
}

func TestLoadBrokerIDSynonym(t *testing.T) {
	b, _ := mustLoad(t, map[string]string{"broker.id": "1"})
	if b.NodeID != 1 {
		t.Errorf("NodeID = %d", b.NodeID)
	}
	if _, _, err := Load(map[string]string{"broker.id": "2", "node.id": "1"}); err == nil ||
		!strings.Contains(err.Error(), "node.id (1) and broker.id (2)") {
		t.Errorf("mismatched broker.id: err = %v", err)
	}
}

func TestLoadCrossChecks(t *testing.T) {
	cases := []struct {
		name  string
		props map[string]string
		want  string
	}{
		{"controller listener not in listeners",
			map[string]string{"listeners": "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093", "controller.listener.names": "CONTROLLER,OTHER",
				"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,OTHER:PLAINTEXT"},
			"controller.listener.names must only contain values appearing in the listeners"},
		{"no controller listener at all",
			map[string]string{"listeners": "PLAINTEXT://127.0.0.1:9092", "controller.quorum.voters": "1@127.0.0.1:9093"},
			"controller.listener.names must contain at least one value appearing in the listeners"},
		{"node id not a voter",
			map[string]string{"node.id": "5", "controller.quorum.voters": "1@127.0.0.1:9093"},
			"the node id 5 must be included in the set of voters"},
		{"broker-only node is a voter",
			map[string]string{"process.roles": "broker", "node.id": "1", "controller.quorum.voters": "1@127.0.0.1:9093", "listeners": "PLAINTEXT://127.0.0.1:9092"},
			"must not be included in the set of voters"},
		{"broker-only node listens on controller listener",
			map[string]string{"process.roles": "broker", "node.id": "2", "controller.quorum.voters": "1@127.0.0.1:9093"},
			"controller.listener.names must not contain a value appearing in the listeners"},
		{"broker-only without quorum",
			map[string]string{"process.roles": "broker", "node.id": "2", "listeners": "PLAINTEXT://127.0.0.1:9092"},
			"either controller.quorum.bootstrap.servers"},
		{"listener name missing from protocol map",
			map[string]string{"listeners": "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093,INTERNAL://127.0.0.1:9094"},
			"listener INTERNAL in listeners has no security protocol"},
		{"explicit map without controller",
			map[string]string{"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT"},
			"listener CONTROLLER in listeners has no security protocol"},
		{"bad process role",
			map[string]string{"process.roles": "broker,zookeeper"},
			`invalid value "broker,zookeeper" for configuration process.roles`},
		{"duplicate process role",
			map[string]string{"process.roles": "broker,broker,controller"},
			"role broker is listed twice"},
		{"empty process roles",
			map[string]string{"process.roles": ""},
			"configuration process.roles"},
		{"duplicate listener name",
			map[string]string{"listeners": "PLAINTEXT://127.0.0.1:9092,plaintext://127.0.0.1:9094,CONTROLLER://127.0.0.1:9093"},
			"listener name PLAINTEXT appears more than once"},
		{"duplicate listener port",
			map[string]string{"listeners": "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9092"},
			"share port 9092"},
		{"advertised listener not in listeners",
			map[string]string{"advertised.listeners": "EXTERNAL://example.com:9092", "listener.security.protocol.map": "EXTERNAL:SSL,PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"},
			"EXTERNAL is not in listeners"},
		{"advertised meta-address",
			map[string]string{"advertised.listeners": "PLAINTEXT://0.0.0.0:9092"},
			"0.0.0.0"},
		{"listening on meta-address without advertising",
			map[string]string{"listeners": "PLAINTEXT://0.0.0.0:9092,CONTROLLER://127.0.0.1:9093"},
			"0.0.0.0"},
		{"only controller listeners in combined mode",
			map[string]string{"listeners": "CONTROLLER://127.0.0.1:9093"},
			"at least one broker advertised listener"},
		{"inter broker listener unknown",
			map[string]string{"inter.broker.listener.name": "INTERNAL"},
			"INTERNAL defined in inter.broker.listener.name is not in listener.security.protocol.map"},
		{"inter broker listener and protocol both set",
			map[string]string{"inter.broker.listener.name": "PLAINTEXT", "security.inter.broker.protocol": "PLAINTEXT"},
			"only one of inter.broker.listener.name and security.inter.broker.protocol"},
		{"controller-only node with broker listener",
			map[string]string{"process.roles": "controller"},
			"must only contain KRaft controller listeners"},
		{"dynamic quorum of several controllers",
			map[string]string{"controller.quorum.bootstrap.servers": "h1:9093,h2:9093"},
			"controller.quorum.voters must be set"},
		{"retention zero",
			map[string]string{"log.retention.ms": "0"},
			"configuration log.retention.ms"},
		{"fetch wait above socket timeout",
			map[string]string{"replica.fetch.wait.max.ms": "40000", "replica.socket.timeout.ms": "30000"},
			"replica.socket.timeout.ms (30000) must be at least replica.fetch.wait.max.ms"},
		{"duplicate log dir",
			map[string]string{"log.dirs": "/a,/a"},
			"directory /a is listed twice"},
		{"bad voter",
			map[string]string{"controller.quorum.voters": "one@h:9093"},
			`invalid value "one@h:9093" for configuration controller.quorum.voters`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Load(tc.props)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load(%v) error = %v, want it to contain %q", tc.props, err, tc.want)
			}
		})
	}
}

func TestLoadInvalidValuesNameTheKey(t *testing.T) {
	cases := []struct{ key, value, want string }{
		{"node.id", "x", `invalid value "x" for configuration node.id: must be a 32-bit integer`},
		{"node.id", "-3", `invalid value "-3" for configuration node.id: must be an integer >= 0`},
		{"num.partitions", "0", `invalid value "0" for configuration num.partitions: must be an integer >= 1`},
		{"log.segment.bytes", "1024", `invalid value "1024" for configuration log.segment.bytes: must be an integer >= 1048576`},
		{"auto.create.topics.enable", "yes", `invalid value "yes" for configuration auto.create.topics.enable: must be true or false`},
		{"compression.type", "brotli", `invalid value "brotli" for configuration compression.type: must be one of: uncompressed, zstd, lz4, snappy, gzip, producer`},
		{"log.cleanup.policy", "delete,archive", `configuration log.cleanup.policy: every item must be one of: compact, delete`},
		{"log.cleaner.min.cleanable.ratio", "1.5", `configuration log.cleaner.min.cleanable.ratio: must be a number between 0.0 and 1.0`},
		{"offsets.topic.replication.factor", "40000", `configuration offsets.topic.replication.factor: must be a 16-bit integer`},
		{"log.retention.ms", "forever", `configuration log.retention.ms: must be a 64-bit integer`},
		{"listeners", "PLAINTEXT:9092", `configuration listeners: listener "PLAINTEXT:9092" is not of the form NAME://host:port`},
		{"ssl.keystore.password", "   ", ""}, // any password is fine
		{"listener.name.plaintext.max.connections", "-1", `listener.name.plaintext.max.connections: invalid value "-1" for configuration max.connections`},
		{"max.connections.per.ip.overrides", "10.0.0.1", `override "10.0.0.1" is not host:count`},
		{"max.connections.per.ip.overrides", "10.0.0.1:many", `count must be a non-negative integer`},
		{"max.connections.per.ip", "0", `max.connections.per.ip can be 0 only if max.connections.per.ip.overrides is set`},
	}
	for _, tc := range cases {
		_, _, err := Load(map[string]string{tc.key: tc.value})
		if tc.want == "" {
			if err != nil {
				t.Errorf("Load(%s=%q) = %v, want success", tc.key, tc.value, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Load(%s=%q) error = %v, want it to contain %q", tc.key, tc.value, err, tc.want)
		}
	}
}

func TestLoadUnknownKeyWarns(t *testing.T) {
	b, warnings := mustLoad(t, map[string]string{
		"zookeeper.connect":                       "localhost:2181",
		"message.timestamp.difference.max.ms":     "1000",
		"listener.name.plaintext.max.connections": "100",
		"num.partitions":                          "3",
	})
	if len(warnings) != 2 {
		t.Fatalf("warnings = %v, want two (zookeeper.connect, message.timestamp.difference.max.ms)", warnings)
	}
	for i, key := range []string{"message.timestamp.difference.max.ms", "zookeeper.connect"} {
		if !strings.Contains(string(warnings[i]), key) {
			t.Errorf("warning %d = %q, want it to name %s", i, warnings[i], key)
		}
	}
	if b.NumPartitions != 3 {
		t.Errorf("NumPartitions = %d", b.NumPartitions)
	}
}

func TestLoadLogTimePrecedence(t *testing.T) {
	cases := []struct {
		props     map[string]string
		retention int64
		roll      int64
	}{
		{map[string]string{"log.retention.hours": "1"}, 3600000, 604800000},
		{map[string]string{"log.retention.hours": "1", "log.retention.minutes": "2"}, 120000, 604800000},
		{map[string]string{"log.retention.hours": "1", "log.retention.minutes": "2", "log.retention.ms": "500"}, 500, 604800000},
		{map[string]string{"log.retention.ms": "-1"}, -1, 604800000},
		{map[string]string{"log.retention.hours": "-5"}, -1, 604800000},
		{map[string]string{"log.roll.hours": "2"}, 604800000, 7200000},
		{map[string]string{"log.roll.hours": "2", "log.roll.ms": "1000"}, 604800000, 1000},
	}
	for _, tc := range cases {
		b, _ := mustLoad(t, tc.props)
		if b.LogRetentionMs != tc.retention || b.LogRollMs != tc.roll {
			t.Errorf("Load(%v): LogRetentionMs = %d, LogRollMs = %d; want %d, %d", tc.props, b.LogRetentionMs, b.LogRollMs, tc.retention, tc.roll)
		}
	}
	b, _ := mustLoad(t, map[string]string{"log.flush.scheduler.interval.ms": "3000"})
	if b.LogFlushIntervalMs != 3000 {
		t.Errorf("LogFlushIntervalMs = %d, want the scheduler interval 3000", b.LogFlushIntervalMs)
	}
}

func TestBrokerDefsConsistent(t *testing.T) {
	for _, d := range BrokerDefs() {
		if d.Default != nil {
			if err := d.Check(*d.Default); err != nil {
				t.Errorf("default of %s is invalid: %v", d.Name, err)
			}
		}
		if d.Doc == "" {
			t.Errorf("%s has no doc", d.Name)
		}
	}
	for _, d := range TopicDefs() {
		if err := d.Check(*d.Default); err != nil {
			t.Errorf("default of topic config %s is invalid: %v", d.Name, err)
		}
		// A topic default equals the default its broker synonyms produce.
		got, _ := topicValue(d, Layers{})
		if got != *d.Default {
			t.Errorf("%s: default via broker synonyms = %s, topic default = %s", d.Name, got, *d.Default)
		}
		for _, s := range d.BrokerSynonyms[:min(1, len(d.BrokerSynonyms))] {
			if bd, _ := BrokerDef(s); bd.Dynamic != ClusterWide {
				t.Errorf("%s: first broker synonym %s should be dynamically updatable cluster-wide", d.Name, s)
			}
		}
	}
	if d, ok := BrokerDef("log.retention.hours"); !ok || d.Dynamic != ReadOnly {
		t.Errorf("log.retention.hours must be read-only (only the first synonym is dynamic)")
	}
	if d, ok := BrokerDef("listeners"); !ok || d.Dynamic != PerBroker {
		t.Errorf("listeners must be per-broker")
	}
	if d, ok := BrokerDef("ssl.keystore.password"); !ok || !d.Sensitive || d.Type.String() != "PASSWORD" {
		t.Errorf("ssl.keystore.password must be a sensitive PASSWORD")
	}
}

func TestImplicitControllerListener(t *testing.T) {
	b, _, err := Load(map[string]string{"listeners": "PLAINTEXT://127.0.0.1:29092"})
	if err != nil {
		t.Fatalf("overriding only listeners must keep a working single node: %v", err)
	}
	if len(b.Listeners) != 2 || b.Listeners[1].Name != "CONTROLLER" || b.Listeners[1].Port != 0 {
		t.Fatalf("listeners: %+v", b.Listeners)
	}
	if len(b.ControllerQuorumVoters) != 1 || b.ControllerQuorumVoters[0].ID != 1 {
		t.Fatalf("voters: %+v", b.ControllerQuorumVoters)
	}
	if len(b.AdvertisedListeners) != 1 || b.AdvertisedListeners[0].Port != 29092 {
		t.Fatalf("advertised: %+v", b.AdvertisedListeners)
	}
	// Anything said about the controller turns the convenience off.
	if _, _, err := Load(map[string]string{"listeners": "PLAINTEXT://127.0.0.1:29092", "controller.listener.names": "CONTROLLER"}); err == nil {
		t.Fatal("an explicit controller.listener.names without its listener must be refused, as Kafka does")
	}
}

func TestHTTPListenCanBeTurnedOff(t *testing.T) {
	b, _, err := Load(map[string]string{"gregor.http.listen": ""})
	if err != nil {
		t.Fatal(err)
	}
	if b.GregorHTTPListen != "" {
		t.Fatalf("gregor.http.listen= gives %q, want off", b.GregorHTTPListen)
	}
	b, _, err = Load(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if b.GregorHTTPListen != "127.0.0.1:9080" {
		t.Fatalf("default %q", b.GregorHTTPListen)
	}
	if _, _, err := Load(map[string]string{"gregor.http.listen": "nope"}); err == nil {
		t.Fatal("gregor.http.listen=nope accepted")
	}
}

func TestReplicaSelectorClass(t *testing.T) {
	b, _, err := Load(map[string]string{"replica.selector.class": RackAwareReplicaSelector})
	if err != nil || b.ReplicaSelectorClass != RackAwareReplicaSelector {
		t.Fatalf("rack-aware selector: %v %q", err, b.ReplicaSelectorClass)
	}
	if _, _, err := Load(map[string]string{"replica.selector.class": "com.example.MySelector"}); err == nil || !strings.Contains(err.Error(), "replica.selector.class") {
		t.Fatalf("an unknown selector class: %v", err)
	}
}
