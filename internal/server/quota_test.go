package server

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func quotaEntity(parts ...string) kadm.ClientQuotaEntity {
	var e kadm.ClientQuotaEntity
	for i := 0; i < len(parts); i += 2 {
		c := kadm.ClientQuotaEntityComponent{Type: parts[i]}
		if parts[i+1] != "<default>" {
			name := parts[i+1]
			c.Name = &name
		}
		e = append(e, c)
	}
	return e
}

func setQuotas(e kadm.ClientQuotaEntity, kv ...any) kadm.AlterClientQuotaEntry {
	entry := kadm.AlterClientQuotaEntry{Entity: e}
	for i := 0; i < len(kv); i += 2 {
		entry.Ops = append(entry.Ops, kadm.AlterClientQuotaOp{Key: kv[i].(string), Value: kv[i+1].(float64)})
	}
	return entry
}

// describedQuotas is a DescribeClientQuotas answer as one line:
// "{user=alice} producer_byte_rate=1024; ...", in the broker's order.
func describedQuotas(described kadm.DescribedClientQuotas) string {
	var out []string
	for _, d := range described {
		s := d.Entity.String()
		for _, v := range d.Values {
			s += fmt.Sprintf(" %s=%v", v.Key, v.Value)
		}
		out = append(out, s)
	}
	return strings.Join(out, "; ")
}

// TestClientQuotas sets, describes (with Kafka's filters), restarts with,
// and removes client quotas through an admin client, as kafka-configs
// --entity-type users/clients/ips does.
func TestClientQuotas(t *testing.T) {
	dir := t.TempDir()
	ts := startServer(t, dir, nil)
	ctx := ctxT(t)
	adm := ts.admin()

	versions, err := adm.ApiVersions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	versions.Each(func(v kadm.BrokerApiVersions) {
		for _, key := range []int16{48, 49} {
			if lo, hi, ok := v.KeyVersions(key); !ok || lo != 0 || hi != 1 {
				t.Errorf("ApiVersions: key %d = %d-%d, %t", key, lo, hi, ok)
			}
		}
	})

	alice, aliceApp := quotaEntity("user", "alice"), quotaEntity("user", "alice", "client-id", "app")
	anyUser, anyClient := quotaEntity("user", "<default>"), quotaEntity("client-id", "<default>")
	ip := quotaEntity("ip", "10.0.0.1")

	// validate_only checks without writing.
	checked, err := adm.ValidateAlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{setQuotas(alice, "producer_byte_rate", 1.0)})
	if err != nil || len(checked) != 1 || checked[0].Err != nil {
		t.Fatalf("validate only: %+v, %v", checked, err)
	}

	altered, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{
		setQuotas(alice, "producer_byte_rate", 1048576.0, "consumer_byte_rate", 2097152.0),
		setQuotas(aliceApp, "request_percentage", 25.5),
		setQuotas(anyUser, "controller_mutation_rate", 10.0),
		setQuotas(anyClient, "producer_byte_rate", 1024.0),
		setQuotas(ip, "connection_creation_rate", 100.0),
		setQuotas(quotaEntity("ip", "10.0.0.300"), "connection_creation_rate", 1.0),
		setQuotas(quotaEntity("user", "bob", "ip", "10.0.0.2"), "connection_creation_rate", 1.0),
		setQuotas(quotaEntity("user", "bob"), "producer_byte_rate", 1.5),
		setQuotas(quotaEntity("user", "bob"), "connection_creation_rate", 3.0),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(altered) != 8 {
		t.Fatalf("%d results: %+v", len(altered), altered)
	}
	for i, a := range altered {
		if i < 5 && a.Err != nil {
			t.Errorf("%s: %v %s", a.Entity, a.Err, a.ErrMessage)
		}
		if i == 7 {
			// The same entity twice: one result, a failure.
			if a.Err != kerr.InvalidRequest || !strings.Contains(a.ErrMessage, "duplicate entity") {
				t.Errorf("%s given twice: %v %s", a.Entity, a.Err, a.ErrMessage)
			}
		} else if i >= 5 && a.Err != kerr.InvalidRequest {
			t.Errorf("%s: %v %s, want INVALID_REQUEST", a.Entity, a.Err, a.ErrMessage)
		}
	}
	if !strings.Contains(altered[5].ErrMessage, "not a valid IP") || !strings.Contains(altered[6].ErrMessage, "IP entity should not be combined") {
		t.Errorf("messages: %q, %q", altered[5].ErrMessage, altered[6].ErrMessage)
	}

	all := "{user=<default>} controller_mutation_rate=10; " +
		"{user=alice} consumer_byte_rate=2.097152e+06 producer_byte_rate=1.048576e+06; " +
		"{user=alice, client-id=app} request_percentage=25.5; " +
		"{client-id=<default>} producer_byte_rate=1024; " +
		"{ip=10.0.0.1} connection_creation_rate=100"
	// The broker answers from its image, which follows the controller's.
	describe := func(adm *kadm.Client, strict bool, want string, filter ...kadm.DescribeClientQuotaComponent) {
		t.Helper()
		var got string
		defer func() {
			if t.Failed() {
				t.Logf("last answer: %s", got)
			}
		}()
		waitFor(t, "described quotas "+want, 10*time.Second, func() bool {
			described, err := adm.DescribeClientQuotas(ctx, strict, filter)
			if err != nil {
				t.Fatal(err)
			}
			got = describedQuotas(described)
			return got == want
		})
	}
	describe(adm, false, all)
	name := func(s string) *string { return &s }
	exact := func(typ, n string) kadm.DescribeClientQuotaComponent {
		return kadm.DescribeClientQuotaComponent{Type: typ, MatchName: name(n), MatchType: kmsg.QuotasMatchTypeExact}
	}
	byDefault := func(typ string) kadm.DescribeClientQuotaComponent {
		return kadm.DescribeClientQuotaComponent{Type: typ, MatchType: kmsg.QuotasMatchTypeDefault}
	}
	anyName := func(typ string) kadm.DescribeClientQuotaComponent {
		return kadm.DescribeClientQuotaComponent{Type: typ, MatchType: kmsg.QuotasMatchTypeAny}
	}
	for _, c := range []struct {
		strict bool
		filter []kadm.DescribeClientQuotaComponent
		want   string
	}{
		{true, nil, ""},
		{false, []kadm.DescribeClientQuotaComponent{exact("user", "alice")},
			"{user=alice} consumer_byte_rate=2.097152e+06 producer_byte_rate=1.048576e+06; {user=alice, client-id=app} request_percentage=25.5"},
		{true, []kadm.DescribeClientQuotaComponent{exact("user", "alice")},
			"{user=alice} consumer_byte_rate=2.097152e+06 producer_byte_rate=1.048576e+06"},
		{true, []kadm.DescribeClientQuotaComponent{exact("user", "alice"), exact("client-id", "app")},
			"{user=alice, client-id=app} request_percentage=25.5"},
		{false, []kadm.DescribeClientQuotaComponent{byDefault("user")}, "{user=<default>} controller_mutation_rate=10"},
		{true, []kadm.DescribeClientQuotaComponent{anyName("user")},
			"{user=<default>} controller_mutation_rate=10; {user=alice} consumer_byte_rate=2.097152e+06 producer_byte_rate=1.048576e+06"},
		{false, []kadm.DescribeClientQuotaComponent{anyName("client-id")},
			"{user=alice, client-id=app} request_percentage=25.5; {client-id=<default>} producer_byte_rate=1024"},
		{false, []kadm.DescribeClientQuotaComponent{byDefault("client-id")}, "{client-id=<default>} producer_byte_rate=1024"},
		{false, []kadm.DescribeClientQuotaComponent{anyName("ip")}, "{ip=10.0.0.1} connection_creation_rate=100"},
		{false, []kadm.DescribeClientQuotaComponent{exact("ip", "10.0.0.2")}, ""},
	} {
		described, err := adm.DescribeClientQuotas(ctx, c.strict, c.filter)
		if err != nil {
			t.Fatalf("filter %+v strict %t: %v", c.filter, c.strict, err)
		}
		if got := describedQuotas(described); got != c.want {
			t.Errorf("filter %+v strict %t:\n got %s\nwant %s", c.filter, c.strict, got, c.want)
		}
	}
	// Bad filters fail the request.
	for _, c := range []struct {
		filter []kadm.DescribeClientQuotaComponent
		want   *kerr.Error
	}{
		{[]kadm.DescribeClientQuotaComponent{anyName("ip"), exact("user", "alice")}, kerr.InvalidRequest},
		{[]kadm.DescribeClientQuotaComponent{anyName("user"), byDefault("user")}, kerr.InvalidRequest},
		{[]kadm.DescribeClientQuotaComponent{{Type: "user", MatchType: kmsg.QuotasMatchTypeExact}}, kerr.InvalidRequest},
		{[]kadm.DescribeClientQuotaComponent{{Type: "user", MatchName: name("a"), MatchType: kmsg.QuotasMatchTypeAny}}, kerr.InvalidRequest},
		{[]kadm.DescribeClientQuotaComponent{{Type: "user", MatchType: 7}}, kerr.InvalidRequest},
		{[]kadm.DescribeClientQuotaComponent{anyName("group")}, kerr.UnsupportedVersion},
	} {
		_, err := adm.DescribeClientQuotas(ctx, false, c.filter)
		if !errors.Is(err, c.want) {
			t.Errorf("filter %+v: %v, want %v", c.filter, err, c.want)
		}
	}

	// The metadata log replays them after a restart.
	ts.stop()
	ts = startServer(t, dir, nil)
	adm = ts.admin()
	describe(adm, false, all)

	removed, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{
		{Entity: alice, Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Remove: true}, {Key: "consumer_byte_rate", Remove: true}}},
		{Entity: ip, Ops: []kadm.AlterClientQuotaOp{{Key: "connection_creation_rate", Remove: true}}},
		{Entity: anyClient, Ops: []kadm.AlterClientQuotaOp{{Key: "request_percentage", Remove: true}}}, // absent: fine
		setQuotas(aliceApp, "request_percentage", 50.0),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range removed {
		if r.Err != nil {
			t.Fatalf("%s: %v %s", r.Entity, r.Err, r.ErrMessage)
		}
	}
	describe(adm, false, "{user=<default>} controller_mutation_rate=10; {user=alice, client-id=app} request_percentage=50; "+
		"{client-id=<default>} producer_byte_rate=1024")
}

// TestClientQuotasOnTheControllerListener: like Kafka's controllers, the
// controller listener alters client quotas (KIP-919) and leaves
// describing them to the brokers.
func TestClientQuotasOnTheControllerListener(t *testing.T) {
	ts := startServer(t, t.TempDir(), nil)
	ctx := ctxT(t)
	ctrl, err := kgo.NewClient(kgo.SeedBrokers(ts.srv.Addr("CONTROLLER").String()))
	if err != nil {
		t.Fatal(err)
	}
	defer ctrl.Close()
	seed := ctrl.SeedBrokers()[0]
	apiVersions := kmsg.NewPtrApiVersionsRequest()
	apiVersions.ClientSoftwareName, apiVersions.ClientSoftwareVersion = "gregor-test", "1"
	versions, err := apiVersions.RequestWith(ctx, seed)
	if err != nil {
		t.Fatal(err)
	}
	served := map[int16]bool{}
	for _, k := range versions.ApiKeys {
		served[k.ApiKey] = true
	}
	if !served[49] || served[48] {
		t.Fatalf("controller listener serves AlterClientQuotas %t, DescribeClientQuotas %t", served[49], served[48])
	}
	req := kmsg.NewPtrAlterClientQuotasRequest()
	entry := kmsg.NewAlterClientQuotasRequestEntry()
	entry.Entity = []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "user", Name: kmsg.StringPtr("carol")}}
	entry.Ops = []kmsg.AlterClientQuotasRequestEntryOp{{Key: "consumer_byte_rate", Value: 4096}}
	req.Entries = append(req.Entries, entry)
	resp, err := req.RequestWith(ctx, seed)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Entries) != 1 || resp.Entries[0].ErrorCode != 0 {
		t.Fatalf("alter at the controller: %+v", resp.Entries)
	}
	waitFor(t, "the broker describes carol's quota", 10*time.Second, func() bool {
		described, err := ts.admin().DescribeClientQuotas(ctx, true, []kadm.DescribeClientQuotaComponent{
			{Type: "user", MatchName: kmsg.StringPtr("carol"), MatchType: kmsg.QuotasMatchTypeExact}})
		if err != nil {
			t.Fatal(err)
		}
		return describedQuotas(described) == "{user=carol} consumer_byte_rate=4096"
	})
}

// TestAuthzClientQuotas: DescribeClientQuotas needs DESCRIBE_CONFIGS on the
// cluster, AlterClientQuotas ALTER_CONFIGS, as Kafka.
func TestAuthzClientQuotas(t *testing.T) {
	ts, fa := startAuthzServer(t)
	cl := ts.client()
	alter := kmsg.NewPtrAlterClientQuotasRequest()
	entry := kmsg.NewAlterClientQuotasRequestEntry()
	entry.Entity = []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "user", Name: kmsg.StringPtr("alice")}}
	entry.Ops = []kmsg.AlterClientQuotasRequestEntryOp{{Key: "producer_byte_rate", Value: 1024}}
	alter.Entries = append(alter.Entries, entry)

	fa.only(clusterGrant(kmsg.ACLOperationDescribe), clusterGrant(kmsg.ACLOperationAlter))
	codeOf(t, "DescribeClientQuotas", rawRequest[*kmsg.DescribeClientQuotasResponse](t, cl, kmsg.NewPtrDescribeClientQuotasRequest()).ErrorCode, kerr.ClusterAuthorizationFailed)
	resp := rawRequest[*kmsg.AlterClientQuotasResponse](t, cl, alter)
	codeOf(t, "AlterClientQuotas", resp.Entries[0].ErrorCode, kerr.ClusterAuthorizationFailed)
	if len(resp.Entries[0].Entity) != 1 || *resp.Entries[0].Entity[0].Name != "alice" {
		t.Errorf("unauthorized entry's entity: %+v", resp.Entries[0].Entity)
	}

	// Authorized at the broker, forwarded to the controller without the
	// client's principal, and served there.
	fa.only(clusterGrant(kmsg.ACLOperationDescribeConfigs), clusterGrant(kmsg.ACLOperationAlterConfigs))
	codeOf(t, "AlterClientQuotas with ALTER_CONFIGS", rawRequest[*kmsg.AlterClientQuotasResponse](t, cl, alter).Entries[0].ErrorCode, nil)
	waitFor(t, "alice's quota described", 10*time.Second, func() bool {
		d := rawRequest[*kmsg.DescribeClientQuotasResponse](t, cl, kmsg.NewPtrDescribeClientQuotasRequest())
		codeOf(t, "DescribeClientQuotas with DESCRIBE_CONFIGS", d.ErrorCode, nil)
		return len(d.Entries) == 1
	})

	// On the controller listener a client needs ALTER_CONFIGS itself, or
	// CLUSTER_ACTION (a broker forwarding).
	ctrl, err := kgo.NewClient(kgo.SeedBrokers(ts.srv.Addr("CONTROLLER").String()))
	if err != nil {
		t.Fatal(err)
	}
	defer ctrl.Close()
	atController := func() int16 {
		resp, err := ctrl.SeedBrokers()[0].Request(ctxT(t), alter)
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.AlterClientQuotasResponse).Entries[0].ErrorCode
	}
	fa.only()
	codeOf(t, "AlterClientQuotas at the controller", atController(), kerr.ClusterAuthorizationFailed)
	fa.only(clusterGrant(kmsg.ACLOperationClusterAction))
	codeOf(t, "AlterClientQuotas forwarded by a broker", atController(), nil)
}
