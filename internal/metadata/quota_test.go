package metadata

import (
	"log/slog"
	"maps"
	"testing"
)

func sameQuotas(a, b map[QuotaEntity]map[string]float64) bool {
	return maps.EqualFunc(a, b, func(x, y map[string]float64) bool { return maps.Equal(x, y) })
}

// TestClientQuotaReplay sets and removes quota keys across deltas: an
// entity appears with its first key and goes with its last, removing an
// absent key is no error, each delta says whether quotas changed, and
// images stay immutable.
func TestClientQuotaReplay(t *testing.T) {
	alice := userClient("alice", "app")
	img, d, err := replayAll(t, []Record{
		quotaRec(alice, "producer_byte_rate", 1024), quotaRec(alice, "consumer_byte_rate", 2048),
		quotaRec(userDefault, "request_percentage", 25.5),
		NewRemoveClientQuotaRecord(ipEntity("::1"), "connection_creation_rate"),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[QuotaEntity]map[string]float64{
		alice:       {"producer_byte_rate": 1024, "consumer_byte_rate": 2048},
		userDefault: {"request_percentage": 25.5},
	}
	if !sameQuotas(img.ClientQuotas, want) || !d.ClientQuotasChanged() {
		t.Fatalf("quotas %v (changed %t), want %v", img.ClientQuotas, d.ClientQuotasChanged(), want)
	}

	d = NewDelta(img)
	for i, r := range []Record{
		quotaRec(alice, "producer_byte_rate", 4096),
		NewRemoveClientQuotaRecord(userDefault, "request_percentage"),
		quotaRec(ipEntity("10.1.2.3"), "connection_creation_rate", 5),
	} {
		if err := d.Replay(int64(10+i), r); err != nil {
			t.Fatal(err)
		}
	}
	next := d.Apply()
	if !d.ClientQuotasChanged() {
		t.Fatal("second delta: no change reported")
	}
	if !sameQuotas(img.ClientQuotas, want) {
		t.Fatalf("base image changed: %v", img.ClientQuotas)
	}
	want = map[QuotaEntity]map[string]float64{
		alice:                {"producer_byte_rate": 4096, "consumer_byte_rate": 2048},
		ipEntity("10.1.2.3"): {"connection_creation_rate": 5},
	}
	if !sameQuotas(next.ClientQuotas, want) {
		t.Fatalf("next quotas %v, want %v", next.ClientQuotas, want)
	}
	if _, ok := next.ClientQuotas[userDefault]; ok {
		t.Fatal("an entity without quotas kept an entry")
	}

	// Setting a key to its value again, or removing an absent one, changes
	// nothing; other records neither.
	d = NewDelta(next)
	for i, r := range []Record{quotaRec(alice, "producer_byte_rate", 4096), NewRemoveClientQuotaRecord(alice, "request_percentage"), &NoOpRecord{}} {
		if err := d.Replay(int64(20+i), r); err != nil {
			t.Fatal(err)
		}
	}
	if d.ClientQuotasChanged() {
		t.Fatal("a delta that changed no value reports a change")
	}

	// Records the image cannot hold fail to replay, as Kafka's loader
	// counts bad records.
	for _, bad := range []*ClientQuotaRecord{
		{Entity: []ClientQuotaEntityData{{EntityType: "group", EntityName: strp("g")}}, Key: "k", Value: 1},
		{Entity: []ClientQuotaEntityData{{EntityType: "user"}, {EntityType: "user", EntityName: strp("a")}}, Key: "k", Value: 1},
		{Entity: []ClientQuotaEntityData{}, Key: "k", Value: 1},
	} {
		if err := NewDelta(next).Replay(30, bad); err == nil {
			t.Fatalf("replayed %+v", bad)
		}
	}

	// A snapshot rebuilds them.
	again := replayRecords(t, throughWire(t, next.Records()))
	if !sameQuotas(again.ClientQuotas, next.ClientQuotas) {
		t.Fatalf("snapshot quotas %v, want %v", again.ClientQuotas, next.ClientQuotas)
	}
}

type quotaPublisher struct {
	changed bool
	quotas  map[QuotaEntity]map[string]float64
}

func (p *quotaPublisher) Publish(d *Delta, img *Image) {
	p.changed, p.quotas = d.ClientQuotasChanged(), img.ClientQuotas
}

// TestClientQuotaSnapshotDiff: a broker loading a snapshot learns that its
// quotas changed, and a late publisher that there are some.
func TestClientQuotaSnapshotDiff(t *testing.T) {
	controller := NewLoader("c", slog.New(slog.DiscardHandler))
	behind := NewLoader("c", slog.New(slog.DiscardHandler))
	first := []Record{quotaRec(userDefault, "producer_byte_rate", 100), quotaRec(ipEntity("10.0.0.9"), "connection_creation_rate", 3)}
	end := commitAll(controller, 0, first)
	commitAll(behind, 0, first)
	commitAll(controller, end, []Record{NewRemoveClientQuotaRecord(ipEntity("10.0.0.9"), "connection_creation_rate"),
		quotaRec(userDefault, "producer_byte_rate", 200)})

	pub := &quotaPublisher{}
	behind.AddPublisher(pub)
	if !pub.changed {
		t.Fatal("a late publisher is not told of the quotas")
	}
	behind.HandleSnapshot(snapshotOf(controller.Image(), 3))
	if !pub.changed || !sameQuotas(pub.quotas, controller.Image().ClientQuotas) || len(pub.quotas) != 1 {
		t.Fatalf("snapshot: changed %t, quotas %v, want %v", pub.changed, pub.quotas, controller.Image().ClientQuotas)
	}

	// The same state again: no change.
	behind.HandleSnapshot(snapshotOf(controller.Image(), 3))
	if pub.changed {
		t.Fatal("a snapshot of the same quotas reports a change")
	}
}

func TestQuotaEntityData(t *testing.T) {
	for _, e := range []QuotaEntity{alice(), userDefault, userClient("", "x"), ipEntity("::1"),
		{ClientID: QuotaName{Present: true, Default: true}}, {IP: QuotaName{Present: true, Default: true}}} {
		back, err := QuotaEntityFromData(e.Data())
		if err != nil || back != e {
			t.Fatalf("%v: back as %v, %v", e, back, err)
		}
	}
	if got := userClient("alice", "app").String(); got != "user=alice, client-id=app" {
		t.Fatalf("String = %q", got)
	}
	if got := (QuotaEntity{User: QuotaName{Present: true, Default: true}}).String(); got != "user=<default>" {
		t.Fatalf("String = %q", got)
	}
	// Users, then client-ids, then ips; absent before default before names.
	order := []QuotaEntity{
		userDefault, {User: QuotaName{Present: true, Default: true}, ClientID: QuotaName{Present: true, Default: true}},
		alice(), userClient("alice", "app"), userClient("bob", ""),
		{ClientID: QuotaName{Present: true, Default: true}},
		{ClientID: QuotaName{Present: true, Name: "a"}},
		{IP: QuotaName{Present: true, Default: true}}, ipEntity("10.0.0.1"),
	}
	for i := 1; i < len(order); i++ {
		if CompareQuotaEntities(order[i-1], order[i]) >= 0 || CompareQuotaEntities(order[i], order[i-1]) <= 0 {
			t.Fatalf("%v does not sort before %v", order[i-1], order[i])
		}
	}
}

func alice() QuotaEntity { return QuotaEntity{User: QuotaName{Present: true, Name: "alice"}} }
