package server

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// opsString names the operations of an authorized operations bit field in
// code order, "omitted" for Kafka's not-computed value.
func opsString(bits int32) string {
	if bits == math.MinInt32 {
		return "omitted"
	}
	return opsNames(kadm.DecodeACLOperations(bits))
}

func opsNames(ops []kadm.ACLOperation) string {
	var names []string
	for _, op := range ops {
		names = append(names, op.String())
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}

func wantOps(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s: authorized operations %s, want %s", what, got, want)
	}
}

// pinned is a client's versions with some APIs held back, to reach fields
// of older versions (Metadata v8-10's cluster operations).
func pinned(maxes map[int16]int16) *kversion.Versions {
	v := kversion.Stable()
	for key, max := range maxes {
		v.SetMaxKeyVersion(key, max)
	}
	return v
}

// The authorized operations (KIP-430) are what the StandardAuthorizer
// allows the asking principal, of the operations Kafka supports on the
// resource type, with ACLs literal, prefixed, implied (READ gives
// DESCRIBE, ALTER_CONFIGS gives DESCRIBE_CONFIGS) and denied: in Metadata
// (topics; the cluster at v8-10), DescribeGroups, ConsumerGroupDescribe,
// DescribeTopicPartitions and DescribeCluster. Resources the principal may
// not describe, and answers with an error, keep the omitted value.
func TestAuthorizedOperations(t *testing.T) {
	props := map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"inter.broker.listener.name":     "PLAINTEXT",
		"authorizer.class.name":          "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":                    "User:ANONYMOUS",
		"auto.create.topics.enable":      "false",
		"listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
			`user_dora="dora-secret" user_eve="eve-secret";`,
	}
	for k, v := range groupProps {
		props[k] = v
	}
	ts := startServer(t, t.TempDir(), props)
	adm := ts.admin()
	ctx := ctxT(t)
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, "ops-a", "ops-b", "ops-c"); err != nil {
		t.Fatal(err)
	}
	lit, pre := kadm.ACLPatternLiteral, kadm.ACLPatternPrefixed
	for _, b := range []*kadm.ACLBuilder{
		kadm.NewACLs().Topics("ops-a", "ghost").Allow("User:dora").AllowHosts().Operations(kadm.OpRead).ResourcePatternType(lit),
		kadm.NewACLs().Topics("ops-").Allow("User:dora").AllowHosts().Operations(kadm.OpAlterConfigs).ResourcePatternType(pre),
		kadm.NewACLs().Topics("ops-b").Allow("User:dora").AllowHosts().Operations(kadm.OpWrite).ResourcePatternType(lit),
		kadm.NewACLs().Topics("ops-b").Deny("User:dora").DenyHosts().Operations(kadm.OpDescribeConfigs).ResourcePatternType(lit),
		kadm.NewACLs().Groups("g-classic").Allow("User:dora").AllowHosts().Operations(kadm.OpRead, kadm.OpDelete).ResourcePatternType(lit),
		kadm.NewACLs().Groups("g-848").Allow("User:dora").AllowHosts().Operations(kadm.OpRead).ResourcePatternType(lit),
		kadm.NewACLs().Groups("g-unknown").Allow("User:dora").AllowHosts().Operations(kadm.OpDescribe).ResourcePatternType(lit),
		kadm.NewACLs().Groups("g-").Allow("User:dora").AllowHosts().Operations(kadm.OpDescribeConfigs).ResourcePatternType(pre),
		kadm.NewACLs().Clusters().Allow("User:dora").AllowHosts().Operations(kadm.OpDescribe, kadm.OpIdempotentWrite).ResourcePatternType(lit),
		// Another user's ACLs on the same resources tell dora nothing.
		kadm.NewACLs().Topics("ops-a").Groups("g-classic").Allow("User:eve").AllowHosts().Operations(kadm.OpAll).ResourcePatternType(lit),
	} {
		createACLs(t, adm, b)
	}

	// A classic group with committed offsets, and a KIP-848 group with a
	// member, both made by the super user.
	offsets := kadm.Offsets{}
	offsets.AddOffset("ops-a", 0, 0, -1)
	if _, err := adm.CommitOffsets(ctx, "g-classic", offsets); err != nil {
		t.Fatal(err)
	}
	member := ts.client(kgo.ConsumerGroup("g-848"), kgo.ConsumeTopics("ops-a"), kgo.ServerSideBalancer())
	raw := ts.client()
	waitFor(t, "g-848 stable", 20*time.Second, func() bool {
		poll, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		member.PollRecords(poll, 1)
		g := describe848(t, raw, "g-848")
		return g.ErrorCode == 0 && g.State == "Stable"
	})

	as := func(user string, opts ...kgo.Opt) *kgo.Client {
		return ts.client(append([]kgo.Opt{kgo.SeedBrokers(ts.srv.Addr("SASL_PLAINTEXT").String()),
			kgo.SASL(plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism()), kgo.RequestRetries(2)}, opts...)...)
	}
	dora, eve := as("dora"), as("eve")
	doraAdm := kadm.NewClient(dora)

	const (
		opsA  = "ALTER_CONFIGS,DESCRIBE,DESCRIBE_CONFIGS,READ"
		opsB  = "ALTER_CONFIGS,DESCRIBE,WRITE"
		ghost = "DESCRIBE,READ"
	)
	t.Run("Metadata", func(t *testing.T) {
		md, err := doraAdm.Metadata(kadm.WithAuthorizedOps(ctx))
		if err != nil {
			t.Fatal(err)
		}
		if names := md.Topics.Names(); !slices.Equal(names, []string{"ops-a", "ops-b"}) {
			t.Fatalf("dora lists %v, want ops-a and ops-b", names)
		}
		wantOps(t, "ops-a", opsNames(md.Topics["ops-a"].AuthorizedOperations), opsA)
		wantOps(t, "ops-b", opsNames(md.Topics["ops-b"].AuthorizedOperations), opsB)

		req := kmsg.NewPtrMetadataRequest()
		for _, name := range []string{"ops-a", "ops-c", "ghost"} {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(name)
			req.Topics = append(req.Topics, rt)
		}
		req.IncludeTopicAuthorizedOperations = true
		resp, err := req.RequestWith(ctx, dora)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]struct {
			code int16
			ops  string
		}{
			"ops-a": {0, opsA},
			// ALTER_CONFIGS by prefix, but no DESCRIBE: hidden.
			"ops-c": {kerr.TopicAuthorizationFailed.Code, "omitted"},
			"ghost": {kerr.UnknownTopicOrPartition.Code, ghost},
		}
		for _, rt := range resp.Topics {
			w := want[*rt.Topic]
			if rt.ErrorCode != w.code {
				t.Errorf("%s: %v, want %v", *rt.Topic, kerr.ErrorForCode(rt.ErrorCode), kerr.ErrorForCode(w.code))
			}
			wantOps(t, *rt.Topic, opsString(rt.AuthorizedOperations), w.ops)
		}
		req.IncludeTopicAuthorizedOperations = false
		if resp, err = req.RequestWith(ctx, dora); err != nil {
			t.Fatal(err)
		}
		wantOps(t, "ops-a not asked for", opsString(resp.Topics[0].AuthorizedOperations), "omitted")

		// The cluster's operations are in Metadata v8-10 only.
		v10 := func(cl *kgo.Client, include bool) int32 {
			t.Helper()
			req := kmsg.NewPtrMetadataRequest()
			req.Topics = []kmsg.MetadataRequestTopic{}
			req.IncludeClusterAuthorizedOperations = include
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Version != 10 {
				t.Fatalf("Metadata v%d, want v10", resp.Version)
			}
			return resp.AuthorizedOperations
		}
		pin := kgo.MaxVersions(pinned(map[int16]int16{3: 10}))
		wantOps(t, "cluster for dora", opsString(v10(as("dora", pin), true)), "DESCRIBE,IDEMPOTENT_WRITE")
		wantOps(t, "cluster for eve, without DESCRIBE", opsString(v10(as("eve", pin), true)), "")
		wantOps(t, "cluster not asked for", opsString(v10(as("dora", pin), false)), "omitted")
	})

	t.Run("other principal", func(t *testing.T) {
		md, err := kadm.NewClient(eve).Metadata(kadm.WithAuthorizedOps(ctx), "ops-a")
		if err != nil {
			t.Fatal(err)
		}
		wantOps(t, "ops-a for eve", opsNames(md.Topics["ops-a"].AuthorizedOperations),
			"ALTER,ALTER_CONFIGS,CREATE,DELETE,DESCRIBE,DESCRIBE_CONFIGS,READ,WRITE")
	})

	t.Run("DescribeGroups", func(t *testing.T) {
		groups, err := doraAdm.DescribeGroups(ctx, "g-classic")
		if err != nil {
			t.Fatal(err)
		}
		g := groups["g-classic"]
		if g.Err != nil {
			t.Fatalf("g-classic: %v", g.Err)
		}
		wantOps(t, "g-classic", opsNames(g.AuthorizedOperations), "DELETE,DESCRIBE,DESCRIBE_CONFIGS,READ")

		// A group dora may not describe has no operations. An unknown group
		// dora may describe is Dead without error before v6, so has them;
		// from v6 it is GROUP_ID_NOT_FOUND, without.
		for _, c := range []struct {
			version int16
			group   string
			code    *kerr.Error
			ops     string
		}{
			{6, "g-none", kerr.GroupAuthorizationFailed, "omitted"},
			{5, "g-unknown", nil, "DESCRIBE,DESCRIBE_CONFIGS"},
			{6, "g-unknown", kerr.GroupIDNotFound, "omitted"},
		} {
			cl := as("dora", kgo.MaxVersions(pinned(map[int16]int16{15: c.version})))
			req := kmsg.NewPtrDescribeGroupsRequest()
			req.Groups = []string{c.group}
			req.IncludeAuthorizedOperations = true
			resp := rawRequest[*kmsg.DescribeGroupsResponse](t, cl, req)
			rg := resp.Groups[0]
			if resp.Version != c.version {
				t.Errorf("DescribeGroups v%d, want v%d", resp.Version, c.version)
			}
			codeOf(t, c.group, rg.ErrorCode, c.code)
			wantOps(t, c.group, opsString(rg.AuthorizedOperations), c.ops)
		}
	})

	t.Run("ConsumerGroupDescribe", func(t *testing.T) {
		groups, err := doraAdm.DescribeConsumerGroups(ctx, "g-848")
		if err != nil {
			t.Fatal(err)
		}
		g := groups["g-848"]
		if g.Err != nil {
			t.Fatalf("g-848: %v", g.Err)
		}
		wantOps(t, "g-848", opsNames(g.AuthorizedOperations), "DESCRIBE,DESCRIBE_CONFIGS,READ")
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{"g-848", "g-none"}
		req.IncludeAuthorizedOperations = true
		resp := rawRequest[*kmsg.ConsumerGroupDescribeResponse](t, dora, req)
		want := map[string]string{"g-848": "DESCRIBE,DESCRIBE_CONFIGS,READ", "g-none": "omitted"}
		for _, rg := range resp.Groups {
			wantOps(t, rg.Group, opsString(rg.AuthorizedOperations), want[rg.Group])
		}
		req.IncludeAuthorizedOperations = false
		resp = rawRequest[*kmsg.ConsumerGroupDescribeResponse](t, dora, req)
		for _, rg := range resp.Groups {
			wantOps(t, rg.Group+" not asked for", opsString(rg.AuthorizedOperations), "omitted")
		}
	})

	t.Run("DescribeTopicPartitions", func(t *testing.T) {
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		for _, name := range []string{"ops-a", "ops-b", "ops-c", "ghost"} {
			rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
			rt.Topic = name
			req.Topics = append(req.Topics, rt)
		}
		resp := rawRequest[*kmsg.DescribeTopicPartitionsResponse](t, dora, req)
		want := map[string]string{"ops-a": opsA, "ops-b": opsB, "ops-c": "omitted", "ghost": ghost}
		if len(resp.Topics) != len(want) {
			t.Fatalf("%d topics answered, want %d", len(resp.Topics), len(want))
		}
		for _, rt := range resp.Topics {
			wantOps(t, *rt.Topic, opsString(rt.AuthorizedOperations), want[*rt.Topic])
		}
	})

	t.Run("DescribeCluster", func(t *testing.T) {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.IncludeClusterAuthorizedOperations = true
		resp, err := req.RequestWith(ctx, dora)
		if err != nil {
			t.Fatal(err)
		}
		wantOps(t, "cluster for dora", opsString(resp.ClusterAuthorizedOperations), "DESCRIBE,IDEMPOTENT_WRITE")
	})
}

// Without an authorizer every operation Kafka supports on a resource type
// is reported, as Kafka does.
func TestAuthorizedOperationsWithoutAuthorizer(t *testing.T) {
	ts := startServer(t, t.TempDir(), groupProps)
	adm := ts.admin()
	ctx := ctxT(t)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	offsets := kadm.Offsets{}
	offsets.AddOffset("t", 0, 0, -1)
	if _, err := adm.CommitOffsets(ctx, "g", offsets); err != nil {
		t.Fatal(err)
	}
	const (
		topicOps   = "ALTER,ALTER_CONFIGS,CREATE,DELETE,DESCRIBE,DESCRIBE_CONFIGS,READ,WRITE"
		groupOps   = "ALTER_CONFIGS,DELETE,DESCRIBE,DESCRIBE_CONFIGS,READ"
		clusterOps = "ALTER,ALTER_CONFIGS,CLUSTER_ACTION,CREATE,DESCRIBE,DESCRIBE_CONFIGS,IDEMPOTENT_WRITE"
	)
	md, err := adm.Metadata(kadm.WithAuthorizedOps(ctx), "t")
	if err != nil {
		t.Fatal(err)
	}
	wantOps(t, "topic", opsNames(md.Topics["t"].AuthorizedOperations), topicOps)
	groups, err := adm.DescribeGroups(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	wantOps(t, "group", opsNames(groups["g"].AuthorizedOperations), groupOps)

	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{}
	req.IncludeClusterAuthorizedOperations = true
	resp, err := req.RequestWith(ctx, ts.client(kgo.MaxVersions(pinned(map[int16]int16{3: 10}))))
	if err != nil {
		t.Fatal(err)
	}
	wantOps(t, "cluster in Metadata v10", opsString(resp.AuthorizedOperations), clusterOps)
	dreq := kmsg.NewPtrDescribeClusterRequest()
	dreq.IncludeClusterAuthorizedOperations = true
	dresp, err := dreq.RequestWith(ctx, ts.client())
	if err != nil {
		t.Fatal(err)
	}
	wantOps(t, "cluster in DescribeCluster", opsString(dresp.ClusterAuthorizedOperations), clusterOps)
	treq := kmsg.NewPtrDescribeTopicPartitionsRequest()
	tt := kmsg.NewDescribeTopicPartitionsRequestTopic()
	tt.Topic = "t"
	treq.Topics = append(treq.Topics, tt)
	tresp, err := treq.RequestWith(ctx, ts.client())
	if err != nil {
		t.Fatal(err)
	}
	wantOps(t, "topic in DescribeTopicPartitions", opsString(tresp.Topics[0].AuthorizedOperations), topicOps)
}

// createACLs creates the ACLs of b and fails the test on any error.
func createACLs(t *testing.T, adm *kadm.Client, b *kadm.ACLBuilder) {
	t.Helper()
	res, err := adm.CreateACLs(ctxT(t), b)
	for _, r := range res {
		if err == nil {
			err = r.Err
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}
