package controller

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/metadata"
)

// quotaPart is one entity part: a name, or nil for the type's default.
func quotaPart(typ string, name *string) kmsg.AlterClientQuotasRequestEntryEntity {
	p := kmsg.NewAlterClientQuotasRequestEntryEntity()
	p.Type, p.Name = typ, name
	return p
}

func named(s string) *string { return &s }

func setOp(key string, value float64) kmsg.AlterClientQuotasRequestEntryOp {
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Value = key, value
	return op
}

func removeOp(key string) kmsg.AlterClientQuotasRequestEntryOp {
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Remove = key, true
	return op
}

func quotaEntry(parts []kmsg.AlterClientQuotasRequestEntryEntity, ops ...kmsg.AlterClientQuotasRequestEntryOp) kmsg.AlterClientQuotasRequestEntry {
	e := kmsg.NewAlterClientQuotasRequestEntry()
	e.Entity, e.Ops = parts, ops
	return e
}

func quotaRequest(entries ...kmsg.AlterClientQuotasRequestEntry) *kmsg.AlterClientQuotasRequest {
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.Entries = entries
	return req
}

func parts(p ...kmsg.AlterClientQuotasRequestEntryEntity) []kmsg.AlterClientQuotasRequestEntryEntity {
	return p
}

func applyQuotaRecords(t *testing.T, img *metadata.Image, recs []metadata.Record) *metadata.Image {
	t.Helper()
	if len(recs) == 0 {
		return img
	}
	d := metadata.NewDelta(img)
	if err := d.ReplayBatch(metadata.Batch{BaseOffset: img.Offset + 1, LastOffset: img.Offset + int64(len(recs)), Records: recs}); err != nil {
		t.Fatal(err)
	}
	return d.Apply()
}

// TestAlterClientQuotasValidation: each entity is checked as Kafka's
// ClientQuotaControlManager checks it; a failing entity writes nothing,
// the others are applied.
func TestAlterClientQuotasValidation(t *testing.T) {
	user := func(n string) kmsg.AlterClientQuotasRequestEntryEntity { return quotaPart("user", named(n)) }
	client := func(n string) kmsg.AlterClientQuotasRequestEntryEntity { return quotaPart("client-id", named(n)) }
	ip := func(n string) kmsg.AlterClientQuotasRequestEntryEntity { return quotaPart("ip", named(n)) }
	defaultUser := quotaPart("user", nil)
	invalid := kerr.InvalidRequest.Code

	cases := []struct {
		name  string
		entry kmsg.AlterClientQuotasRequestEntry
		code  int16
		msg   string // a part of the message
		// records the entry writes on an image where user alice has
		// producer_byte_rate 1000.
		records int
	}{
		{"user rate", quotaEntry(parts(user("bob")), setOp("producer_byte_rate", 1048576)), 0, "", 1},
		{"default user, every user key", quotaEntry(parts(defaultUser), setOp("producer_byte_rate", 1), setOp("consumer_byte_rate", 2),
			setOp("request_percentage", 12.5), setOp("controller_mutation_rate", 0.5)), 0, "", 4},
		{"user and client-id", quotaEntry(parts(client("app"), user("bob")), setOp("consumer_byte_rate", 10)), 0, "", 1},
		{"default client-id", quotaEntry(parts(quotaPart("client-id", nil)), setOp("request_percentage", 200)), 0, "", 1},
		{"ipv4", quotaEntry(parts(ip("10.0.0.1")), setOp("connection_creation_rate", 100)), 0, "", 1},
		{"ipv6", quotaEntry(parts(ip("::1")), setOp("connection_creation_rate", 100)), 0, "", 1},
		{"default ip", quotaEntry(parts(quotaPart("ip", nil)), setOp("connection_creation_rate", 1)), 0, "", 1},
		{"same value again", quotaEntry(parts(user("alice")), setOp("producer_byte_rate", 1000)), 0, "", 0},
		{"remove", quotaEntry(parts(user("alice")), removeOp("producer_byte_rate")), 0, "", 1},
		{"remove absent key", quotaEntry(parts(user("bob")), removeOp("producer_byte_rate")), 0, "", 0},
		{"remove unknown key", quotaEntry(parts(user("bob")), removeOp("no_such_quota")), 0, "", 0},
		{"no ops", quotaEntry(parts(user("bob"))), 0, "", 0},
		{"integral double", quotaEntry(parts(user("bob")), setOp("producer_byte_rate", 1e15)), 0, "", 1},

		{"empty entity", quotaEntry(parts(), setOp("producer_byte_rate", 1)), invalid, "Invalid empty client quota entity", 0},
		{"unknown entity type", quotaEntry(parts(quotaPart("group", named("g"))), setOp("producer_byte_rate", 1)), invalid, "Unhandled client quota entity type: group", 0},
		{"type twice", quotaEntry(parts(user("a"), user("b")), setOp("producer_byte_rate", 1)), invalid, "duplicate entity entry user", 0},
		{"empty name", quotaEntry(parts(user("")), setOp("producer_byte_rate", 1)), invalid, "Empty user not supported", 0},
		{"ip with user", quotaEntry(parts(ip("10.0.0.1"), user("a")), setOp("connection_creation_rate", 1)), invalid, "IP entity should not be combined", 0},
		{"ip with client-id", quotaEntry(parts(quotaPart("ip", nil), client("c")), removeOp("x")), invalid, "IP entity should not be combined", 0},
		{"bad ip", quotaEntry(parts(ip("not-an-ip")), setOp("connection_creation_rate", 1)), invalid, "not-an-ip is not a valid IP address", 0},
		{"bad ip, remove only", quotaEntry(parts(ip("300.1.1.1")), removeOp("connection_creation_rate")), invalid, "not a valid IP", 0},
		{"ip key on a user", quotaEntry(parts(user("bob")), setOp("connection_creation_rate", 1)), invalid, "Invalid configuration key connection_creation_rate", 0},
		{"user key on an ip", quotaEntry(parts(ip("10.0.0.1")), setOp("producer_byte_rate", 1)), invalid, "Invalid configuration key producer_byte_rate", 0},
		{"unknown key", quotaEntry(parts(user("bob")), setOp("producer_rate", 1)), invalid, "Invalid configuration key producer_rate", 0},
		{"zero", quotaEntry(parts(user("bob")), setOp("request_percentage", 0)), invalid, "Quota request_percentage must be greater than 0", 0},
		{"negative", quotaEntry(parts(user("bob")), setOp("consumer_byte_rate", -5)), invalid, "must be greater than 0", 0},
		{"NaN", quotaEntry(parts(user("bob")), setOp("controller_mutation_rate", math.NaN())), invalid, "must be greater than 0", 0},
		{"fraction of a LONG", quotaEntry(parts(user("bob")), setOp("producer_byte_rate", 1.5)), invalid, "producer_byte_rate cannot be a fractional value.", 0},
		{"fraction of an INT", quotaEntry(parts(ip("10.0.0.1")), setOp("connection_creation_rate", 2.25)), invalid, "cannot be a fractional value", 0},
		{"too large for a LONG", quotaEntry(parts(user("bob")), setOp("consumer_byte_rate", 1e19)), invalid, "too large for a LONG", 0},
		{"too large for an INT", quotaEntry(parts(ip("10.0.0.1")), setOp("connection_creation_rate", 1<<31)), invalid, "too large for an INT", 0},
		{"key twice", quotaEntry(parts(user("bob")), setOp("producer_byte_rate", 1), removeOp("producer_byte_rate")), invalid, "Duplicate quota key producer_byte_rate", 0},
		{"a bad key undoes the good ones", quotaEntry(parts(user("alice")), removeOp("producer_byte_rate"), setOp("consumer_byte_rate", 5),
			setOp("request_percentage", -1)), invalid, "request_percentage", 0},
	}

	alice := metadata.QuotaEntity{User: metadata.QuotaName{Present: true, Name: "alice"}}
	img := applyQuotaRecords(t, metadata.EmptyImage(), []metadata.Record{metadata.NewClientQuotaRecord(alice, "producer_byte_rate", 1000)})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			recs, resp := alterClientQuotas(img, quotaRequest(c.entry))
			if len(resp.Entries) != 1 {
				t.Fatalf("%d results", len(resp.Entries))
			}
			r := resp.Entries[0]
			msg := ""
			if r.ErrorMessage != nil {
				msg = *r.ErrorMessage
			}
			if r.ErrorCode != c.code || (c.code != 0) != (r.ErrorMessage != nil) || !strings.Contains(msg, c.msg) {
				t.Fatalf("code %d message %q, want %d with %q", r.ErrorCode, msg, c.code, c.msg)
			}
			if len(recs) != c.records {
				t.Fatalf("%d records, want %d: %v", len(recs), c.records, recs)
			}
			if c.code == 0 && len(r.Entity) != len(c.entry.Entity) {
				t.Fatalf("result entity %+v", r.Entity)
			}
			applyQuotaRecords(t, img, recs) // the records replay
		})
	}
}

// TestAlterClientQuotasRequest: results per entity in request order, the
// entity as user, client-id, ip; an entity given twice fails wherever it
// comes, the rest of the request is applied.
func TestAlterClientQuotasRequest(t *testing.T) {
	bobApp := parts(quotaPart("client-id", named("app")), quotaPart("user", named("bob")))
	req := quotaRequest(
		quotaEntry(bobApp, setOp("producer_byte_rate", 100)),
		quotaEntry(parts(quotaPart("user", nil)), setOp("consumer_byte_rate", 200)),
		quotaEntry(parts(quotaPart("nope", named("x"))), setOp("consumer_byte_rate", 1)),
		quotaEntry(parts(quotaPart("user", named("bob")), quotaPart("client-id", named("app"))), setOp("consumer_byte_rate", 300)),
		quotaEntry(parts(quotaPart("ip", named("192.168.0.1"))), setOp("connection_creation_rate", 7)),
	)
	recs, resp := alterClientQuotas(metadata.EmptyImage(), req)
	type result struct {
		entity string
		code   int16
	}
	var got []result
	for _, r := range resp.Entries {
		var e []string
		for _, p := range r.Entity {
			name := "<default>"
			if p.Name != nil {
				name = *p.Name
			}
			e = append(e, p.Type+"="+name)
		}
		got = append(got, result{strings.Join(e, ","), r.ErrorCode})
	}
	want := []result{
		{"user=bob,client-id=app", kerr.InvalidRequest.Code},
		{"user=<default>", 0},
		{"nope=x", kerr.InvalidRequest.Code},
		{"ip=192.168.0.1", 0},
	}
	if len(got) != len(want) {
		t.Fatalf("results %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("results %v, want %v", got, want)
		}
	}
	img := applyQuotaRecords(t, metadata.EmptyImage(), recs)
	if len(img.ClientQuotas) != 2 {
		t.Fatalf("quotas %v", img.ClientQuotas)
	}
	if v := img.ClientQuotas[metadata.QuotaEntity{IP: metadata.QuotaName{Present: true, Name: "192.168.0.1"}}]["connection_creation_rate"]; v != 7 {
		t.Fatalf("ip quota %v", v)
	}
}

// TestAlterClientQuotasCommits runs requests through a controller: quotas
// reach the image only by replay, validate_only changes nothing, and they
// survive a restart.
func TestAlterClientQuotasCommits(t *testing.T) {
	dir := metadataDir(t)
	n := startNode(t, dir, testConfig())
	alter := func(n *node, req *kmsg.AlterClientQuotasRequest) {
		t.Helper()
		for _, r := range n.c.AlterClientQuotas(context.Background(), req).Entries {
			if r.ErrorCode != 0 {
				t.Fatalf("entity %+v: error %d", r.Entity, r.ErrorCode)
			}
		}
	}
	alice := metadata.QuotaEntity{User: metadata.QuotaName{Present: true, Name: "alice"}}
	check := quotaRequest(quotaEntry(parts(quotaPart("user", named("alice"))), setOp("producer_byte_rate", 1024)))
	check.ValidateOnly = true
	alter(n, check)
	if len(n.c.Image().ClientQuotas) != 0 {
		t.Fatal("validate_only wrote quotas")
	}
	alter(n, quotaRequest(quotaEntry(parts(quotaPart("user", named("alice"))), setOp("producer_byte_rate", 1024), setOp("request_percentage", 50))))
	if got := n.c.Image().ClientQuotas[alice]; got["producer_byte_rate"] != 1024 || got["request_percentage"] != 50 {
		t.Fatalf("alice's quotas %v", got)
	}
	n.stop()

	n = startNode(t, dir, testConfig())
	if got := n.c.Image().ClientQuotas[alice]; len(got) != 2 || got["producer_byte_rate"] != 1024 {
		t.Fatalf("after a restart alice's quotas %v", got)
	}
	alter(n, quotaRequest(quotaEntry(parts(quotaPart("user", named("alice"))), removeOp("producer_byte_rate"), removeOp("request_percentage"))))
	if _, ok := n.c.Image().ClientQuotas[alice]; ok {
		t.Fatal("alice's quotas survived their removal")
	}
}
