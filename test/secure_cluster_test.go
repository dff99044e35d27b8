//go:build e2e

package test

import (
	"context"
	"crypto/tls"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"gregor/internal/auth"
	"gregor/internal/auth/authtest"
)

// The secure cluster: every listener SASL_SSL, as a Kafka cluster locked
// down end to end. Controllers listen on CONTROLLER with PLAIN (SCRAM cannot
// authenticate to the controllers, which keep the SCRAM credentials), its
// users in the same JAAS entry as the credentials the nodes dial it with.
// Brokers listen on BROKER with SCRAM-SHA-512, the inter-broker listener
// and the clients' alike; the SCRAM users are bootstrapped by `storage
// format --add-scram`. One CA signs the one certificate every node presents
// (CN=localhost, SAN 127.0.0.1); nodes and clients trust the CA.

// Credentials of the secure cluster. Each password is distinct so a log
// line showing one says whose it is.
const (
	secureControllerUser = "controller"
	secureControllerPass = "controller-secret"
	secureBrokerUser     = "broker"
	secureBrokerPass     = "broker-secret"
	secureClientUser     = "alice"
	secureClientPass     = "alice-secret"
)

// securePasswords are every password the secure tests give a node or a
// client; none may appear in a log.
var securePasswords = []string{secureControllerPass, secureBrokerPass, secureClientPass, authtest.Password}

// clusterSecurity is the TLS material and settings of a secure cluster.
type clusterSecurity struct {
	pki *authtest.PKI
	// clientTLS trusts the CA, for the tests' clients.
	clientTLS *tls.Config
	// clientOpts connect a test's franz-go client: clientTLS, and
	// SCRAM-SHA-512 as the client user.
	clientOpts []kgo.Opt
}

func newClusterSecurity(t *testing.T) *clusterSecurity {
	t.Helper()
	pki := authtest.NewPKI(t, t.TempDir())
	tlsCfg, err := auth.ClientTLS(pki.Settings(t, nil, authtest.PEM), "")
	if err != nil {
		t.Fatal(err)
	}
	return &clusterSecurity{pki: pki, clientTLS: tlsCfg, clientOpts: []kgo.Opt{
		kgo.DialTLSConfig(tlsCfg),
		kgo.SASL(scramClient(secureClientPass)),
	}}
}

// scramClient is the client user's SCRAM-SHA-512 with password pass.
func scramClient(pass string) sasl.Mechanism {
	return scram.Auth{User: secureClientUser, Pass: pass}.AsSha512Mechanism()
}

// props are the security settings of every node, controller or broker:
// each reads those of the listeners it serves and those of the listener it
// dials (a broker dials CONTROLLER and BROKER, a controller CONTROLLER).
func (s *clusterSecurity) props() []string {
	return []string{
		"listener.security.protocol.map=CONTROLLER:SASL_SSL,BROKER:SASL_SSL",
		"inter.broker.listener.name=BROKER",
		"ssl.keystore.type=PEM",
		"ssl.keystore.location=" + s.pki.Server.KeystorePEM,
		"ssl.key.password=" + authtest.Password,
		"ssl.truststore.type=PEM",
		"ssl.truststore.location=" + s.pki.CA.Cert,
		"sasl.mechanism.controller.protocol=PLAIN",
		"listener.name.controller.sasl.enabled.mechanisms=PLAIN",
		"listener.name.controller.plain.sasl.jaas.config=" + plainJAAS(secureControllerUser, secureControllerPass),
		"sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512",
		"listener.name.broker.sasl.enabled.mechanisms=SCRAM-SHA-512",
		"listener.name.broker.scram-sha-512.sasl.jaas.config=" + scramJAAS(secureBrokerUser, secureBrokerPass),
	}
}

// plainJAAS is the controller listener's PLAIN entry: the credentials a
// node dials with, and the one user the controllers accept.
func plainJAAS(user, pass string) string {
	return fmt.Sprintf(`org.apache.kafka.common.security.plain.PlainLoginModule required username=%q password=%q user_%s=%q;`,
		user, pass, secureControllerUser, secureControllerPass)
}

// scramJAAS is the broker listener's SCRAM entry: the credentials a broker
// dials other brokers with (the users it accepts are in the metadata).
func scramJAAS(user, pass string) string {
	return fmt.Sprintf(`org.apache.kafka.common.security.scram.ScramLoginModule required username=%q password=%q;`, user, pass)
}

// formatArgs bootstrap the SCRAM users: the brokers' and the clients'.
func (s *clusterSecurity) formatArgs() []string {
	return []string{
		"--add-scram", fmt.Sprintf("SCRAM-SHA-512=[name=%s,password=%s]", secureBrokerUser, secureBrokerPass),
		"--add-scram", fmt.Sprintf("SCRAM-SHA-512=[name=%s,password=%s]", secureClientUser, secureClientPass),
	}
}

// startSecureCluster is startCluster with every listener SASL_SSL. Once
// the cluster has stopped, the test fails if a node logged a password.
func startSecureCluster(t *testing.T, nc, nb int, extra ...string) *cluster {
	t.Helper()
	return startClusterSpec(t, clusterSpec{controllers: nc, brokers: nb, secure: true, extra: extra})
}

// checkNoPasswordLogged fails the test if a node's log shows one of
// securePasswords or more.
func (c *cluster) checkNoPasswordLogged(more ...string) {
	c.t.Helper()
	for _, n := range append(slices.Clone(c.controllers), c.brokers...) {
		checkNoPasswordLogged(c.t, n, more...)
	}
}

func checkNoPasswordLogged(t *testing.T, n *node, more ...string) {
	t.Helper()
	for _, pass := range append(slices.Clone(securePasswords), more...) {
		if k := n.logCount(pass); k > 0 {
			t.Errorf("node %d logged a password (%q) %d times", n.id, pass, k)
		}
	}
}

// The kill -9 and failover tests of cluster_test.go and replication_test.go
// on the secure cluster: replication, raft and the brokers' controller RPCs
// run over TLS with SASL, and behave as on PLAINTEXT.

func TestSecureClusterControllerFailover(t *testing.T) {
	clusterControllerFailover(t, startSecureCluster(t, 3, 3))
}

func TestSecureClusterBrokerFencing(t *testing.T) {
	clusterBrokerFencing(t, startSecureCluster(t, 3, 3))
}

func TestSecureClusterReplicationBasic(t *testing.T) {
	clusterReplicationBasic(t, startSecureCluster(t, 3, 3))
}

func TestSecureClusterCombinedNodes(t *testing.T) {
	clusterCombinedNodes(t, startCombined(t, true))
}

// TestSecureReplicationLeaderKills kills 3 leaders (GREGOR_LEADER_KILLS
// overrides), then the active controller, under an idempotent acks=all load.
func TestSecureReplicationLeaderKills(t *testing.T) {
	replicationLeaderKills(t, startSecureCluster(t, 3, 3, "broker.session.timeout.ms=1500"), leaderKills(3))
}

// TestSecureClusterWrongPassword: a broker that dials its peers with a
// wrong password cannot join, and the cluster carries on without it. With a
// wrong controller password it is never registered, so never unfenced;
// with a wrong inter-broker (SCRAM) password it registers, but the leaders
// refuse its fetches, so a replica reassigned to it never enters the ISR.
// Clients without TLS, or with a wrong password, are refused too. No node
// logs a password, right or wrong.
func TestSecureClusterWrongPassword(t *testing.T) {
	const wrongControllerPass, wrongBrokerPass, wrongClientPass = "wrong-controller-secret", "wrong-broker-secret", "wrong-alice-secret"
	c := startSecureCluster(t, 1, 3)
	adm := kadm.NewClient(c.client())
	ctx := ctxT(t, 2*time.Minute)
	if _, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, "w"); err != nil {
		t.Fatal(err)
	}
	// metadata asks a fresh client: kadm answers from franz-go's cache.
	metadata := func(topics ...string) (kadm.Metadata, error) {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.bootstrap()...)}, c.clientSecurity()...)...)
		if err != nil {
			return kadm.Metadata{}, err
		}
		defer cl.Close()
		return kadm.NewClient(cl).Metadata(ctx, topics...)
	}
	partition := func() (kadm.PartitionDetail, error) {
		md, err := metadata("w")
		if err != nil {
			return kadm.PartitionDetail{}, err
		}
		pd, ok := md.Topics["w"].Partitions[0]
		if !ok || pd.Err != nil {
			return pd, fmt.Errorf("partition 0 not in the metadata (%v)", pd.Err)
		}
		return pd, nil
	}
	c.eventually("every replica in sync", 30*time.Second, func() error {
		pd, err := partition()
		if err == nil && len(pd.ISR) != 3 {
			err = fmt.Errorf("isr %v", pd.ISR)
		}
		return err
	})

	// Clients: TLS without SASL, SASL without TLS and a wrong password are
	// refused.
	for _, bad := range []struct {
		name string
		opts []kgo.Opt
	}{
		{"TLS without SASL", []kgo.Opt{kgo.DialTLSConfig(c.sec.clientTLS)}},
		{"SCRAM without TLS", []kgo.Opt{kgo.SASL(scramClient(secureClientPass))}},
		{"a wrong password", []kgo.Opt{kgo.DialTLSConfig(c.sec.clientTLS), kgo.SASL(scramClient(wrongClientPass))}},
	} {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.brokers[0].addr()), kgo.RequestRetries(0), kgo.DialTimeout(3 * time.Second)}, bad.opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = cl.Ping(pctx)
		cancel()
		cl.Close()
		if err == nil {
			t.Errorf("a client with %s connected", bad.name)
		}
	}

	// extraBroker launches one more broker with an override of its
	// security settings; the test stops it.
	extraBroker := func(id int32, override string) *node {
		n := &node{t: t, id: id, roles: "broker", dataDir: t.TempDir(), port: freePort(t)}
		c.configure(n)
		n.props = append(n.props, override)
		c.format(n)
		t.Cleanup(func() {
			n.stop()
			checkNoPasswordLogged(t, n, wrongControllerPass, wrongBrokerPass, wrongClientPass)
		})
		n.launch()
		return n
	}
	badController := extraBroker(104, "listener.name.controller.plain.sasl.jaas.config="+plainJAAS(secureControllerUser, wrongControllerPass))
	badInterBroker := extraBroker(105, "listener.name.broker.scram-sha-512.sasl.jaas.config="+scramJAAS(secureBrokerUser, wrongBrokerPass))

	// 105 registers; 104 never does.
	c.waitBrokers(4)
	brokerIDs := func() []int32 {
		t.Helper()
		md, err := metadata()
		if err != nil {
			t.Fatal(err)
		}
		ids := md.Brokers.NodeIDs()
		slices.Sort(ids)
		return ids
	}
	if ids := brokerIDs(); !slices.Equal(ids, []int32{101, 102, 103, 105}) {
		t.Fatalf("brokers %v, want 101, 102, 103 and 105", ids)
	}
	c.eventually("broker 104 refused by the controller", 30*time.Second, func() error {
		if badController.logCount("SASL_AUTHENTICATION_FAILED") == 0 {
			return fmt.Errorf("no authentication failure in its log")
		}
		return nil
	})

	// A replica added on 105 cannot fetch.
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("w", 0, []int32{101, 102, 103, 105})
	resps, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	resps.Each(func(r kadm.AlterPartitionAssignmentsResponse) {
		if r.Err != nil {
			t.Fatalf("AlterPartitionAssignments %s-%d: %v %s", r.Topic, r.Partition, r.Err, r.ErrMessage)
		}
	})
	c.eventually("broker 105's fetches refused", 30*time.Second, func() error {
		if badInterBroker.logCount("SASL_AUTHENTICATION_FAILED") == 0 {
			return fmt.Errorf("no authentication failure in its log")
		}
		return nil
	})

	// The others carry on meanwhile: acks=all writes, reads, admin.
	cl := c.client(kgo.DefaultProduceTopic("w"), kgo.RequiredAcks(kgo.AllISRAcks()))
	produceSome(t, cl, "w", 100)
	c.consumeCount("w", 100)
	c.createTopic("still-fine", 1)

	// Still neither joined.
	if ids := brokerIDs(); slices.Contains(ids, 104) {
		t.Errorf("broker 104, with a wrong controller password, was unfenced: brokers %v", ids)
	}
	pd, err := partition()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(pd.Replicas, 105) || slices.Contains(pd.ISR, 105) {
		t.Errorf("partition w-0: replicas %v, isr %v; want 105 a replica, out of the ISR", pd.Replicas, pd.ISR)
	}
	listSet := kadm.TopicsSet{}
	listSet.Add("w", 0)
	ongoing, err := adm.ListPartitionReassignments(ctx, listSet)
	if err != nil {
		t.Fatal(err)
	}
	if s := ongoing.Sorted(); len(s) != 1 || !slices.Equal(s[0].AddingReplicas, []int32{105}) {
		t.Errorf("reassignments in progress: %+v, want w-0 adding 105", s)
	}
	t.Logf("partition w-0: replicas %v isr %v", pd.Replicas, pd.ISR)
}
