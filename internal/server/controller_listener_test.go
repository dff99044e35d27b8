package server

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"gregor/internal/config"
)

// TestControllerListenerAnswers: requests the fuzzer of the controller
// listener found panicking (a nil replica manager, or once a nil quorum on
// the one-voter node) are answered. A handler panic closes the connection, which the
// client sees as a failed request.
func TestControllerListenerAnswers(t *testing.T) {
	ts := startServer(t, t.TempDir(), nil)
	adm := ts.admin()
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, nil, "a"); err != nil {
		t.Fatal(err)
	}
	ctrl, err := kgo.NewClient(kgo.SeedBrokers(ts.srv.Addr("CONTROLLER").String()))
	if err != nil {
		t.Fatal(err)
	}
	defer ctrl.Close()
	seed := func(req kmsg.Request) kmsg.Response {
		t.Helper()
		resp, err := ctrl.SeedBrokers()[0].Request(ctxT(t), req)
		if err != nil {
			t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
		}
		return resp
	}

	describe := kmsg.NewPtrDescribeConfigsRequest()
	describe.Resources = []kmsg.DescribeConfigsRequestResource{
		{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "a", ConfigNames: []string{"retention.ms"}},
		{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "1", ConfigNames: []string{"log.dirs"}},
	}
	for _, rr := range seed(describe).(*kmsg.DescribeConfigsResponse).Resources {
		if rr.ErrorCode != 0 || len(rr.Configs) != 1 {
			t.Errorf("DescribeConfigs %v %s at the controller: error %d, %d configs", rr.ResourceType, rr.ResourceName, rr.ErrorCode, len(rr.Configs))
		}
	}

	snap := kmsg.NewPtrFetchSnapshotRequest()
	snap.Topics = []kmsg.FetchSnapshotRequestTopic{{Topic: "__cluster_metadata",
		Partitions: []kmsg.FetchSnapshotRequestTopicPartition{{Partition: 0}}}}
	// The zero-config node is a voter like any other: it serves its
	// snapshots, and has none yet.
	sr := seed(snap).(*kmsg.FetchSnapshotResponse)
	if sr.ErrorCode != 0 || len(sr.Topics) != 1 || len(sr.Topics[0].Partitions) != 1 ||
		sr.Topics[0].Partitions[0].ErrorCode != kerr.SnapshotNotFound.Code {
		t.Errorf("FetchSnapshot of a one-voter node: %+v, want SNAPSHOT_NOT_FOUND", sr)
	}
}

// TestControllerListenerPlaintextWarning: a PLAINTEXT controller listener
// beyond loopback is warned about at start; one on loopback is not.
func TestControllerListenerPlaintextWarning(t *testing.T) {
	for _, tc := range []struct {
		host string
		warn bool
	}{{"0.0.0.0", true}, {"127.0.0.1", false}} {
		cfg, _, err := config.Load(map[string]string{
			"listeners":                "PLAINTEXT://127.0.0.1:0,CONTROLLER://" + tc.host + ":0",
			"advertised.listeners":     "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
			"controller.quorum.voters": "1@127.0.0.1:0",
			"log.dirs":                 t.TempDir(),
			"gregor.http.listen":       "",
		})
		if err != nil {
			t.Fatal(err)
		}
		logs := &lockedBuffer{}
		srv, err := New(cfg, slog.New(slog.NewTextHandler(logs, nil)))
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := srv.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		cancel()
		warned := strings.Contains(logs.String(), `level=WARN msg="the controller listener is PLAINTEXT on a non-loopback address`)
		if warned != tc.warn {
			t.Errorf("controller listener on %s: warned %t, want %t; log:\n%s", tc.host, warned, tc.warn, logs.String())
		}
	}
}

// kafkaControllerAPIs are the API keys whose message definitions in Kafka
// list "controller" among their listeners (clients/src/main/resources/
// common/message/*Request.json): all a controller listener may serve.
var kafkaControllerAPIs = map[int16]bool{
	1: true, 7: true, 17: true, 18: true, 19: true, 20: true, 29: true, 30: true, 31: true,
	32: true, 33: true, 36: true, 37: true, 38: true, 39: true, 40: true, 41: true, 43: true,
	44: true, 45: true, 46: true, 49: true, 50: true, 51: true, 52: true, 53: true, 54: true,
	55: true, 56: true, 57: true, 58: true, 59: true, 60: true, 62: true, 63: true, 64: true,
	67: true, 70: true, 73: true, 80: true, 81: true, 82: true,
}

// TestControllerListenerServesOnlyControllerAPIs: the controller listener
// answers no API Kafka keeps to brokers (Produce, Metadata, groups, ...);
// a request for one closes the connection, as an unknown key does.
func TestControllerListenerServesOnlyControllerAPIs(t *testing.T) {
	ts := startServer(t, t.TempDir(), nil)
	ctrl, err := kgo.NewClient(kgo.SeedBrokers(ts.srv.Addr("CONTROLLER").String()))
	if err != nil {
		t.Fatal(err)
	}
	defer ctrl.Close()
	resp, err := ctrl.SeedBrokers()[0].Request(ctxT(t), kmsg.NewPtrApiVersionsRequest())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range resp.(*kmsg.ApiVersionsResponse).ApiKeys {
		if !kafkaControllerAPIs[k.ApiKey] {
			t.Errorf("the controller listener serves %s (key %d), a broker API", kmsg.NameForKey(k.ApiKey), k.ApiKey)
		}
	}
	if _, err := ctrl.SeedBrokers()[0].Request(ctxT(t), kmsg.NewPtrMetadataRequest()); err == nil {
		t.Error("the controller listener answered Metadata")
	}
}

// TestControllerListenerRefusesUserRegistration: on a secured cluster
// (SASL on the controller listener, StandardAuthorizer), a user who is
// not a node's principal cannot register a broker, even knowing the
// cluster id: BrokerRegistration needs CLUSTER_ACTION on the cluster. The
// node itself, a super user, registered.
func TestControllerListenerRefusesUserRegistration(t *testing.T) {
	ts := startServer(t, t.TempDir(), map[string]string{
		"listeners":                                        "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"listener.security.protocol.map":                   "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
		"authorizer.class.name":                            config.StandardAuthorizerClass,
		"super.users":                                      "User:node;User:ANONYMOUS",
		"sasl.mechanism.controller.protocol":               "PLAIN",
		"listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
		"listener.name.controller.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
			`username="node" password="node-secret" user_node="node-secret" user_mallory="mallory-secret";`,
	})
	mallory, err := kgo.NewClient(kgo.SeedBrokers(ts.srv.Addr("CONTROLLER").String()),
		kgo.SASL(plain.Auth{User: "mallory", Pass: "mallory-secret"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer mallory.Close()
	reg := kmsg.NewPtrBrokerRegistrationRequest()
	reg.BrokerID, reg.ClusterID, reg.IncarnationID = 7, ts.srv.clusterID, [16]byte{1}
	reg.LogDirs = [][16]byte{{2}}
	reg.Listeners = []kmsg.BrokerRegistrationRequestListener{{Name: "PLAINTEXT", Host: "attacker.example", Port: 9092}}
	resp, err := mallory.SeedBrokers()[0].Request(ctxT(t), reg)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.BrokerRegistrationResponse).ErrorCode; code != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("mallory's BrokerRegistration: error %d, want CLUSTER_AUTHORIZATION_FAILED", code)
	}
	if b := ts.srv.controller.Image().Brokers; b[7] != nil || b[1] == nil {
		t.Errorf("registered brokers: 7 %v, 1 %v; want only 1", b[7] != nil, b[1] != nil)
	}
}

// TestControllerListenerRegistrationChecks: without authentication, a
// registration on the controller listener must name the cluster id
// (INCONSISTENT_CLUSTER_ID) and may not take over a live broker's id with
// another incarnation (DUPLICATE_BROKER_REGISTRATION), as Kafka's
// ClusterControlManager refuses them.
func TestControllerListenerRegistrationChecks(t *testing.T) {
	ts := startServer(t, t.TempDir(), nil)
	ctrl, err := kgo.NewClient(kgo.SeedBrokers(ts.srv.Addr("CONTROLLER").String()))
	if err != nil {
		t.Fatal(err)
	}
	defer ctrl.Close()
	register := func(id int32, cluster string) int16 {
		t.Helper()
		reg := kmsg.NewPtrBrokerRegistrationRequest()
		reg.BrokerID, reg.ClusterID, reg.IncarnationID = id, cluster, [16]byte{9}
		reg.LogDirs = [][16]byte{{8}}
		reg.Listeners = []kmsg.BrokerRegistrationRequestListener{{Name: "PLAINTEXT", Host: "attacker.example", Port: 9092}}
		resp, err := ctrl.SeedBrokers()[0].Request(ctxT(t), reg)
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.BrokerRegistrationResponse).ErrorCode
	}
	if code := register(7, "not-the-cluster"); code != kerr.InconsistentClusterID.Code {
		t.Errorf("registration with another cluster id: error %d, want INCONSISTENT_CLUSTER_ID", code)
	}
	if code := register(1, ts.srv.clusterID); code != kerr.DuplicateBrokerRegistration.Code {
		t.Errorf("registration of live broker 1's id: error %d, want DUPLICATE_BROKER_REGISTRATION", code)
	}
	b := ts.srv.controller.Image().Brokers
	if b[7] != nil || b[1] == nil || b[1].Listeners[0].Host == "attacker.example" {
		t.Errorf("registrations changed the brokers: %+v", b)
	}
}
