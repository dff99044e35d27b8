package server

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// With authorizer.class.name set, ACLs created through the admin API
// decide what SASL users may do: a least-privilege producer and consumer
// (kafka-acls --producer / --consumer) work, a user without ACLs is
// refused with Kafka's errors, and Metadata shows each user only its
// topics.
func TestStandardAuthorizerEndToEnd(t *testing.T) {
	ts := startServer(t, t.TempDir(), map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"inter.broker.listener.name":     "PLAINTEXT",
		"authorizer.class.name":          "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":                    "User:ANONYMOUS",
		"listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
			`user_alice="alice-secret" user_carol="carol-secret" user_mallory="mallory-secret";`,
	})
	adm := ts.admin()
	ctx := ctxT(t)
	for _, topic := range []string{"orders", "secrets"} {
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	acls := []*kadm.ACLBuilder{
		// kafka-acls --producer --topic orders --allow-principal User:alice (idempotent)
		kadm.NewACLs().Topics("orders").Allow("User:alice").AllowHosts().Operations(kadm.OpWrite, kadm.OpDescribe, kadm.OpCreate),
		kadm.NewACLs().Clusters().Allow("User:alice").AllowHosts().Operations(kadm.OpIdempotentWrite),
		// kafka-acls --consumer --topic orders --group billing --allow-principal User:carol
		kadm.NewACLs().Topics("orders").Groups("billing").Allow("User:carol").AllowHosts().Operations(kadm.OpRead, kadm.OpDescribe),
	}
	for _, b := range acls {
		res, err := adm.CreateACLs(ctx, b.ResourcePatternType(kadm.ACLPatternLiteral))
		for _, r := range res {
			if err == nil {
				err = r.Err
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	as := func(user string, opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(ts.srv.Addr("SASL_PLAINTEXT").String()),
			kgo.SASL(plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism()), kgo.RequestRetries(2)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}

	alice := as("alice")
	if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("o1")}).FirstErr(); err != nil {
		t.Fatalf("alice produces to orders: %v", err)
	}
	if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "secrets", Value: []byte("s1")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice produces to secrets: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	md, err := kadm.NewClient(alice).Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if names := md.Topics.Names(); len(names) != 1 || names[0] != "orders" {
		t.Fatalf("alice sees topics %v, want [orders]", names)
	}

	carol := as("carol", kgo.ConsumeTopics("orders"), kgo.ConsumerGroup("billing"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := 0
	for got == 0 {
		fs := carol.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("carol consumed nothing: %v", err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("carol: %v", err) })
		got += fs.NumRecords()
	}
	if err := carol.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("carol commits in billing: %v", err)
	}

	mallory := as("mallory")
	if err := mallory.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("m")}).FirstErr(); err == nil {
		t.Fatal("mallory, with no ACLs, produced")
	}
	if _, err := kadm.NewClient(mallory).CreateTopic(ctx, 1, 1, nil, "mallorys"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("mallory creates a topic: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if _, err := kadm.NewClient(mallory).DeleteTopic(ctx, "orders"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("mallory deletes orders: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	res, err := kadm.NewClient(mallory).DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow().Deny().AllowHosts().DenyHosts().
		ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny))
	for _, r := range res {
		if err == nil {
			err = r.Err
		}
	}
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("mallory describes ACLs: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
}
