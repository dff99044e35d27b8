//go:build e2e

package test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// aclUsers are the PLAIN users of an aclBroker's SASL listener.
var aclUsers = []string{"alice", "bob", "carol", "dave", "mallory", "root"}

func aclPassword(user string) string { return user + "-acl-pw" }

// aclBroker is a gregor process with the StandardAuthorizer: PLAINTEXT for
// the admin and the node's own traffic (User:ANONYMOUS, a super user, as
// Kafka's documentation sets up a PLAINTEXT inter-broker listener), and
// SASL_PLAINTEXT with the PLAIN users of aclUsers, of whom root is a super
// user too.
type aclBroker struct {
	*broker
	sasl string // the SASL_PLAINTEXT listener's address
}

func startACLBroker(t *testing.T, allowIfNoACL bool) *aclBroker {
	t.Helper()
	b := &broker{t: t, dataDir: t.TempDir(), port: freePort(t)}
	ab := &aclBroker{broker: b, sasl: fmt.Sprintf("127.0.0.1:%d", freePort(t))}
	ctrl := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	var jaas strings.Builder
	jaas.WriteString("org.apache.kafka.common.security.plain.PlainLoginModule required")
	for _, u := range aclUsers {
		fmt.Fprintf(&jaas, " user_%s=%q", u, aclPassword(u))
	}
	jaas.WriteString(";")
	b.args = []string{
		fmt.Sprintf("listeners=PLAINTEXT://%s,SASL_PLAINTEXT://%s,CONTROLLER://%s", b.addr(), ab.sasl, ctrl),
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"controller.quorum.voters=1@" + ctrl,
		"inter.broker.listener.name=PLAINTEXT",
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users=User:ANONYMOUS;User:root",
		fmt.Sprintf("allow.everyone.if.no.acl.found=%t", allowIfNoACL),
		"group.initial.rebalance.delay.ms=0",
		"offsets.topic.num.partitions=3",
		"listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config=" + jaas.String(),
	}
	b.start()
	t.Cleanup(b.stop)
	return ab
}

// acl runs `gregor acl add` with args through the admin listener, as an
// operator runs kafka-acls.
func (ab *aclBroker) acl(t *testing.T, args ...string) {
	t.Helper()
	out, err := run(t, 30*time.Second, "", gregorBin, append([]string{"acl", "add", "--bootstrap-server", ab.addr()}, args...)...)
	if err != nil {
		t.Fatalf("gregor acl add %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// kcat runs kcat as user on the SASL listener.
func (ab *aclBroker) kcat(t *testing.T, user, stdin string, args ...string) (string, error) {
	t.Helper()
	return kcatWith(t, ab.sasl, []string{"security.protocol=sasl_plaintext", "sasl.mechanisms=PLAIN",
		"sasl.username=" + user, "sasl.password=" + aclPassword(user)}, stdin, args...)
}

// kcatACLCase is one row of the librdkafka ACL matrix: user does action
// on topic (and group); want is "" for success, else what kcat prints.
type kcatACLCase struct {
	name   string
	user   string
	action string // produce, consume (-G group), describe (-L -t topic) or create (produce to a new topic)
	topic  string
	group  string
	want   string
}

// What librdkafka 2.x prints for Kafka's authorization errors: the
// broker's error (TOPIC_AUTHORIZATION_FAILED) as its description, or
// (FindCoordinator) by name.
const (
	kcatTopicDenied = "Broker: Topic authorization failed"
	kcatGroupDenied = "GROUP_AUTHORIZATION_FAILED"
)

func (c kcatACLCase) run(t *testing.T, ab *aclBroker) {
	t.Helper()
	var out string
	var err error
	before := topicEnd(t, ab, c.topic)
	switch c.action {
	case "produce", "create":
		out, err = ab.kcat(t, c.user, "k:"+c.name+"\n", "-P", "-t", c.topic, "-K:")
	case "consume":
		out, err = ab.kcat(t, c.user, "", "-G", c.group, "-X", "auto.offset.reset=earliest", "-c", "1", "-f", "record %s\n", c.topic)
	case "describe":
		out, err = ab.kcat(t, c.user, "", "-L", "-J", "-m", "10", "-t", c.topic)
		if err == nil {
			err = kcatTopicError(out, c.topic)
		}
	default:
		t.Fatalf("unknown action %q", c.action)
	}
	switch {
	case c.want == "" && err != nil:
		t.Fatalf("%s by %s on %s: %v\n%s", c.action, c.user, c.topic, err, out)
	case c.want == "" && c.action == "consume" && !strings.Contains(out, "record "):
		t.Fatalf("%s consumed nothing from %s in %s:\n%s", c.user, c.topic, c.group, out)
	case c.want != "" && err == nil:
		t.Fatalf("%s by %s on %s was allowed, want %q:\n%s", c.action, c.user, c.topic, c.want, out)
	case c.want != "" && !strings.Contains(out+err.Error(), c.want):
		t.Fatalf("%s by %s on %s: %v, want %q:\n%s", c.action, c.user, c.topic, err, c.want, out)
	}
	if c.action == "produce" || c.action == "create" {
		// The record is in the log exactly when the produce was allowed
		// (a topic created by it holds just that record).
		want := before
		switch {
		case c.want == "" && before < 0:
			want = 1
		case c.want == "":
			want++
		}
		if after := topicEnd(t, ab, c.topic); after != want {
			t.Fatalf("after %s's produce, %s ends at %d, want %d", c.user, c.topic, after, want)
		}
	}
}

// topicEnd is the end offset of partition 0 of topic, -1 if there is no
// such topic. It asks with a new client, whose metadata is fresh.
func topicEnd(t *testing.T, ab *aclBroker, topic string) int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(ab.addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctxT(t, 10*time.Second), topic)
	if err != nil {
		t.Fatalf("end offsets of %s: %v", topic, err)
	}
	o, ok := ends.Lookup(topic, 0)
	switch {
	case !ok || errors.Is(o.Err, kerr.UnknownTopicOrPartition):
		return -1
	case o.Err != nil:
		t.Fatalf("end offset of %s: %v", topic, o.Err)
	}
	return o.Offset
}

// kcatTopicList is the topics of kcat -L -J's output.
type kcatTopicList struct {
	Topics []struct {
		Topic string `json:"topic"`
		Error string `json:"error"`
	} `json:"topics"`
}

func parseKcatTopicList(out string) (kcatTopicList, error) {
	var md kcatTopicList
	// The JSON is the last line; librdkafka may log before it.
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &md); err != nil {
		return md, fmt.Errorf("kcat -L -J: %w", err)
	}
	return md, nil
}

// kcatTopicError is the error kcat -L -J reports for topic, nil if none.
func kcatTopicError(out, topic string) error {
	md, err := parseKcatTopicList(out)
	if err != nil {
		return err
	}
	for _, tp := range md.Topics {
		if tp.Topic == topic && tp.Error != "" {
			return fmt.Errorf("topic %s: %s", topic, tp.Error)
		}
	}
	return nil
}

// kcatListed is the user's view of every topic (kcat -L), without the
// internal ones.
func kcatListed(t *testing.T, ab *aclBroker, user string) []string {
	t.Helper()
	out, err := ab.kcat(t, user, "", "-L", "-J", "-m", "10")
	if err != nil {
		t.Fatalf("kcat -L as %s: %v\n%s", user, err, out)
	}
	md, err := parseKcatTopicList(out)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tp := range md.Topics {
		if !strings.HasPrefix(tp.Topic, "__") {
			names = append(names, tp.Topic)
		}
	}
	slices.Sort(names)
	return names
}

// seedTopics creates each topic with one record, as the super user.
func seedTopics(t *testing.T, ab *aclBroker, topics ...string) {
	t.Helper()
	cl := newKgo(t, ab.broker)
	for _, topic := range topics {
		createTopic(t, cl, topic, 1, nil)
		if err := cl.ProduceSync(ctxT(t, 20*time.Second), &kgo.Record{Topic: topic, Value: []byte("seed")}).FirstErr(); err != nil {
			t.Fatalf("seed %s: %v", topic, err)
		}
	}
}

// TestKcatACLs is a librdkafka ACL matrix: kcat users on a SASL listener
// of a broker with the StandardAuthorizer produce, consume in a group,
// describe topics and create them (by producing, with auto-creation), each
// with the ACLs that allow it (literal, prefixed, the wildcard resource
// and principal, a super user) or without (none, the wrong operation, a
// DENY), and get Kafka's error as librdkafka prints it. ACLs are made with
// `gregor acl add`. Then allow.everyone.if.no.acl.found both ways: a
// resource no ACL applies to is refused with false, open with true, and a
// resource some ACL applies to is refused to the others either way.
func TestKcatACLs(t *testing.T) {
	needKcat(t)
	t.Parallel()
	t.Run("matrix", func(t *testing.T) {
		ab := startACLBroker(t, false)
		seedTopics(t, ab, "orders", "secret", "public", "app-logs", "free")
		ab.acl(t, "--allow-principal", "User:alice", "--producer", "--topic", "orders")
		ab.acl(t, "--allow-principal", "User:bob", "--consumer", "--topic", "orders", "--group", "billing")
		ab.acl(t, "--allow-principal", "User:carol", "--producer", "--topic", "app-", "--resource-pattern-type", "prefixed")
		ab.acl(t, "--allow-principal", "User:carol", "--consumer", "--topic", "app-", "--group", "app-", "--resource-pattern-type", "prefixed")
		ab.acl(t, "--allow-principal", "User:dave", "--operation", "Write", "--operation", "Describe", "--topic", "*")
		ab.acl(t, "--deny-principal", "User:dave", "--operation", "Write", "--topic", "secret")
		ab.acl(t, "--allow-principal", "User:*", "--consumer", "--topic", "public", "--group", "public-readers")

		for _, c := range []kcatACLCase{
			{"produce/literal", "alice", "produce", "orders", "", ""},
			{"produce/no-ACL", "mallory", "produce", "orders", "", kcatTopicDenied},
			{"produce/READ-is-not-WRITE", "bob", "produce", "orders", "", kcatTopicDenied},
			{"produce/prefixed", "carol", "produce", "app-logs", "", ""},
			{"produce/prefix-does-not-match", "carol", "produce", "orders", "", kcatTopicDenied},
			{"produce/wildcard-topic", "dave", "produce", "app-logs", "", ""},
			{"produce/DENY-beats-wildcard-ALLOW", "dave", "produce", "secret", "", kcatTopicDenied},
			{"produce/super-user", "root", "produce", "secret", "", ""},
			{"produce/no-ACL-on-the-topic", "mallory", "produce", "free", "", kcatTopicDenied},

			{"consume/literal", "bob", "consume", "orders", "billing", ""},
			{"consume/group-without-ACL", "bob", "consume", "orders", "audit", kcatGroupDenied},
			{"consume/topic-without-READ", "bob", "consume", "secret", "billing", kcatTopicDenied},
			{"consume/producer-ACLs-only", "alice", "consume", "orders", "billing", kcatGroupDenied},
			{"consume/prefixed", "carol", "consume", "app-logs", "app-etl", ""},
			{"consume/prefixed-group-other-topic", "carol", "consume", "orders", "app-etl", kcatTopicDenied},
			{"consume/wildcard-principal", "mallory", "consume", "public", "public-readers", ""},
			{"consume/super-user", "root", "consume", "secret", "root-readers", ""},
			{"consume/no-ACL", "mallory", "consume", "orders", "billing", kcatGroupDenied},

			{"describe/literal", "bob", "describe", "orders", "", ""},
			{"describe/no-ACL", "mallory", "describe", "secret", "", kcatTopicDenied},
			// dave's DENY is of WRITE: his DESCRIBE on every topic holds.
			{"describe/DENY-is-per-operation", "dave", "describe", "secret", "", ""},
			{"describe/super-user", "root", "describe", "secret", "", ""},

			{"create/prefixed-CREATE", "carol", "create", "app-new", "", ""},
			{"create/literal-CREATE-is-for-its-name", "alice", "create", "orders-new", "", kcatTopicDenied},
			{"create/super-user", "root", "create", "root-new", "", ""},
		} {
			t.Run(c.name, func(t *testing.T) { c.run(t, ab) })
		}

		// Metadata lists what each user may describe.
		for user, want := range map[string][]string{
			"bob":     {"orders", "public"},
			"carol":   {"app-logs", "app-new", "public"},
			"mallory": {"public"},
			"root":    {"app-logs", "app-new", "free", "orders", "public", "root-new", "secret"},
		} {
			if got := kcatListed(t, ab, user); !slices.Equal(got, want) {
				t.Errorf("kcat -L as %s lists %v, want %v", user, got, want)
			}
		}
	})

	t.Run("allow.everyone.if.no.acl.found=true", func(t *testing.T) {
		ab := startACLBroker(t, true)
		seedTopics(t, ab, "orders", "free")
		ab.acl(t, "--allow-principal", "User:alice", "--producer", "--topic", "orders")
		for _, c := range []kcatACLCase{
			{"produce/no-ACL-on-the-topic", "mallory", "produce", "free", "", ""},
			{"produce/an-ACL-for-another-user", "mallory", "produce", "orders", "", kcatTopicDenied},
			{"produce/literal", "alice", "produce", "orders", "", ""},
			{"consume/no-ACL-on-topic-or-group", "mallory", "consume", "free", "anyone", ""},
			{"describe/an-ACL-for-another-user", "mallory", "describe", "orders", "", kcatTopicDenied},
			{"create/no-ACL-on-the-name", "mallory", "create", "fresh", "", ""},
		} {
			t.Run(c.name, func(t *testing.T) { c.run(t, ab) })
		}
		if got, want := kcatListed(t, ab, "mallory"), []string{"free", "fresh"}; !slices.Equal(got, want) {
			t.Errorf("kcat -L as mallory lists %v, want %v", got, want)
		}
	})
}

// TestConfluentLeastPrivilege: librdkafka (confluent-kafka) in the roles
// of Kafka's ACL documentation, each user with only its role's ACLs, made
// with `gregor acl add` as with kafka-acls' shortcuts: an idempotent
// producer (--producer: no IDEMPOTENT_WRITE, KIP-679), a transactional
// read-process-write loop (--consumer for its input and group, --producer
// --transactional-id for its output) that commits its offsets in each
// transaction, and a consumer group member (--consumer) reading the
// output read_committed.
func TestConfluentLeastPrivilege(t *testing.T) {
	needPythonModule(t, "confluent_kafka")
	t.Parallel()
	ab := startACLBroker(t, false)
	cl := newKgo(t, ab.broker)
	const in, out, etl, txnID, readers, n = "py-in", "py-out", "py-etl", "py-etl-1", "py-readers", 50
	createTopic(t, cl, in, 2, nil)
	createTopic(t, cl, out, 2, nil)
	ab.acl(t, "--allow-principal", "User:alice", "--producer", "--topic", in)
	ab.acl(t, "--allow-principal", "User:carol", "--consumer", "--topic", in, "--group", etl)
	ab.acl(t, "--allow-principal", "User:carol", "--producer", "--topic", out, "--transactional-id", txnID)
	ab.acl(t, "--allow-principal", "User:bob", "--consumer", "--topic", out, "--group", readers)

	script, err := os.ReadFile("acl_confluent.py")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := json.Marshal(map[string]any{
		"bootstrap": ab.sasl, "n": n,
		"security": map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN"},
		"producer": []string{"alice", aclPassword("alice")}, "transactional": []string{"carol", aclPassword("carol")},
		"consumer": []string{"bob", aclPassword("bob")},
		"input":    in, "output": out, "etl_group": etl, "txn_id": txnID, "reader_group": readers,
	})
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Version      string   `json:"version"`
		Error        string   `json:"error"`
		Produced     int      `json:"produced"`
		Copied       int      `json:"copied"`
		Transactions int      `json:"transactions"`
		Read         []string `json:"read"`
	}
	pyRun(t, string(script), &res, string(spec))
	t.Logf("confluent-kafka %s: %d records copied in %d transactions", res.Version, res.Copied, res.Transactions)
	if res.Error != "" {
		t.Fatalf("%s\nbroker log:\n%s", res.Error, ab.log())
	}
	if res.Produced != n || res.Copied != n {
		t.Errorf("produced %d, copied %d, want %d", res.Produced, res.Copied, n)
	}
	var want []string
	for i := range n {
		want = append(want, fmt.Sprintf("v%03d", i))
	}
	slices.Sort(res.Read)
	if !slices.Equal(res.Read, want) {
		t.Errorf("the reader read %d records (%s), want each of %d once", len(res.Read), firstDiff(res.Read, want), n)
	}

	// The group offsets: the loop's at the input's end, committed in its
	// transactions; the reader's past what it read.
	adm := kadm.NewClient(cl)
	ctx := ctxT(t, 30*time.Second)
	ends, err := adm.ListEndOffsets(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	etlOffsets, err := adm.FetchOffsets(ctx, etl)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(e kadm.ListedOffset) {
		if o, ok := etlOffsets.Lookup(e.Topic, e.Partition); !ok || o.At != e.Offset {
			t.Errorf("%s's offset of %s/%d: %v, want %d", etl, e.Topic, e.Partition, o.At, e.Offset)
		}
	})
	readerOffsets, err := adm.FetchOffsets(ctx, readers)
	if err != nil {
		t.Fatal(err)
	}
	var committed int64
	readerOffsets.Each(func(o kadm.OffsetResponse) { committed += o.At })
	if committed < n {
		t.Errorf("%s committed offsets adding up to %d, want at least %d", readers, committed, n)
	}
}
