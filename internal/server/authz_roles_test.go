package server

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// The ACLs of kafka-acls' role shortcuts (Kafka's AclCommand), as
// Kafka's documentation lists them for each role.

// producerACLs is `kafka-acls --add --producer --topic topic
// [--transactional-id txnID]`: WRITE, DESCRIBE and CREATE on the topic;
// WRITE and DESCRIBE on the transactional id. Without --idempotent, so no
// IDEMPOTENT_WRITE on the cluster: since Kafka 3.0 (KIP-679) WRITE on a
// topic is enough for an idempotent producer.
func producerACLs(principal, topic, txnID string) []*kadm.ACLBuilder {
	acls := []*kadm.ACLBuilder{kadm.NewACLs().Topics(topic).Allow(principal).AllowHosts().
		Operations(kadm.OpWrite, kadm.OpDescribe, kadm.OpCreate).ResourcePatternType(kadm.ACLPatternLiteral)}
	if txnID != "" {
		acls = append(acls, kadm.NewACLs().TransactionalIDs(txnID).Allow(principal).AllowHosts().
			Operations(kadm.OpWrite, kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral))
	}
	return acls
}

// consumerACLs is `kafka-acls --add --consumer --topic topic --group
// group`: READ and DESCRIBE on the topic, READ on the group.
func consumerACLs(principal, topic, group string) []*kadm.ACLBuilder {
	return []*kadm.ACLBuilder{
		kadm.NewACLs().Topics(topic).Allow(principal).AllowHosts().
			Operations(kadm.OpRead, kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Groups(group).Allow(principal).AllowHosts().
			Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral),
	}
}

// Least privilege, end to end with franz-go: each role works under a
// principal holding only the ACLs Kafka's documentation lists for it, and
// nothing else (allow.everyone.if.no.acl.found is false). An idempotent
// producer (--producer) writes; a consumer group member (--consumer)
// consumes, commits, and a later member resumes from the commit; a
// transactional read-process-write session (--producer with
// --transactional-id for its output, --consumer for its input and group)
// copies the input once, committing the group's offsets in each
// transaction (SendOffsetsToTransaction). A transactional id or group
// outside its ACLs is refused with Kafka's error.
func TestLeastPrivilegeRoles(t *testing.T) {
	props := map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"inter.broker.listener.name":     "PLAINTEXT",
		"authorizer.class.name":          "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":                    "User:ANONYMOUS",
		"listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
			`user_ida="ida-secret" user_cora="cora-secret" user_tess="tess-secret";`,
	}
	for k, v := range groupProps {
		props[k] = v
	}
	ts := startServer(t, t.TempDir(), props)
	adm := ts.admin()
	ctx := ctxT(t)
	const (
		events, copied = "lp-events", "lp-copied"
		readers, etl   = "lp-readers", "lp-etl"
		txnID          = "lp-etl-1"
	)
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, events); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, copied); err != nil {
		t.Fatal(err)
	}
	var acls []*kadm.ACLBuilder
	acls = append(acls, producerACLs("User:ida", events, "")...)
	acls = append(acls, consumerACLs("User:cora", events, readers)...)
	acls = append(acls, producerACLs("User:tess", copied, txnID)...)
	acls = append(acls, consumerACLs("User:tess", events, etl)...)
	for _, b := range acls {
		createACLs(t, adm, b)
	}
	as := func(user string, opts ...kgo.Opt) []kgo.Opt {
		return append([]kgo.Opt{kgo.SeedBrokers(ts.srv.Addr("SASL_PLAINTEXT").String()),
			kgo.SASL(plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism())}, opts...)
	}
	client := func(user string, opts ...kgo.Opt) *kgo.Client {
		return ts.client(as(user, opts...)...)
	}

	// The idempotent producer (franz-go's default).
	ida := client("ida", kgo.RequiredAcks(kgo.AllISRAcks()))
	produce := func(from, n int) {
		t.Helper()
		var recs []*kgo.Record
		for i := from; i < from+n; i++ {
			recs = append(recs, &kgo.Record{Topic: events, Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("e%03d", i))})
		}
		if err := ida.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("ida produces to %s: %v", events, err)
		}
	}
	produce(0, 100)

	// The consumer group member, then a later one resuming from the
	// group's commit.
	consume := func(want int) []string {
		t.Helper()
		cl := client("cora", groupOpts(readers, kgo.ConsumeTopics(events), kgo.DisableAutoCommit())...)
		defer cl.Close()
		var got []string
		for len(got) < want {
			fs := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("cora consumed %d of %d: %v", len(got), want, err)
			}
			fs.EachError(func(topic string, p int32, err error) { t.Fatalf("cora: %s/%d: %v", topic, p, err) })
			fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("cora commits in %s: %v", readers, err)
		}
		return got
	}
	if got := consume(100); len(got) != 100 {
		t.Fatalf("cora consumed %d records, want 100", len(got))
	}
	offs, err := kadm.NewClient(client("cora")).FetchOffsets(ctx, readers)
	if err != nil {
		t.Fatalf("cora fetches the offsets of %s: %v", readers, err)
	}
	if total := sumOffsets(offs); total != 100 {
		t.Fatalf("%s committed %d records' offsets, want 100", readers, total)
	}
	produce(100, 20)
	got := consume(20)
	for _, v := range got {
		if v < "e100" {
			t.Fatalf("the later member read %s, committed before it joined", v)
		}
	}

	// The transactional read-process-write session.
	s, err := kgo.NewGroupTransactSession(as("tess", groupOpts(etl,
		kgo.TransactionalID(txnID),
		kgo.ConsumeTopics(events),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
	)...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for n := 0; n < 120; {
		fs := s.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("tess copied %d of 120: %v", n, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("tess: %s/%d: %v", topic, p, err) })
		var recs []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) { recs = append(recs, r) })
		if len(recs) == 0 {
			continue
		}
		if err := s.Begin(); err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			s.Produce(ctx, &kgo.Record{Topic: copied, Key: r.Key, Value: r.Value}, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Errorf("tess produces to %s: %v", copied, err)
				}
			})
		}
		committed, err := s.End(ctx, kgo.TryCommit)
		if err != nil {
			t.Fatalf("tess ends a transaction: %v", err)
		}
		if committed {
			n += len(recs)
		}
	}
	tessAdm := kadm.NewClient(client("tess"))
	waitFor(t, "the offsets of "+etl+" at the input's end", 20*time.Second, func() bool {
		offs, err := tessAdm.FetchOffsets(ctx, etl)
		return err == nil && sumOffsets(offs) == 120
	})
	out := consumeIsolated(t, ts, copied, kgo.ReadCommitted(), 120)
	seen := map[string]bool{}
	for _, v := range out {
		if seen[v] {
			t.Fatalf("%s copied twice", v)
		}
		seen[v] = true
	}
	if len(seen) != 120 {
		t.Fatalf("%d distinct records copied, want 120", len(seen))
	}

	// Outside the ACLs: another transactional id, another group.
	// (franz-go asks for the producer id as the transaction begins.)
	other := client("tess", kgo.TransactionalID("lp-etl-2"), kgo.RequestRetries(2))
	err = other.BeginTransaction()
	if err == nil {
		err = other.ProduceSync(ctx, &kgo.Record{Topic: copied, Value: []byte("x")}).FirstErr()
	}
	if !errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
		t.Errorf("tess as transactional id lp-etl-2: %v, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", err)
	}
	stranger := client("cora", groupOpts("lp-other", kgo.ConsumeTopics(events))...)
	for {
		fs := stranger.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("cora in group lp-other: no error: %v", err)
		}
		if err := fs.Err(); err != nil {
			if !errors.Is(err, kerr.GroupAuthorizationFailed) {
				t.Errorf("cora in group lp-other: %v, want GROUP_AUTHORIZATION_FAILED", err)
			}
			break
		}
		if fs.NumRecords() > 0 {
			t.Fatal("cora consumed in group lp-other")
		}
	}
}

// sumOffsets adds up the committed offsets of a group.
func sumOffsets(offs kadm.OffsetResponses) int64 {
	var total int64
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Err == nil {
			total += o.At
		}
	})
	return total
}
