package metadata

import (
	"log/slog"
	"maps"
	"testing"

	"gregor/internal/auth/acl"
)

// TestACLReplay creates and removes ACLs across deltas: the image holds
// them by id, each delta reports what it changed, images stay immutable.
func TestACLReplay(t *testing.T) {
	img, d, err := replayAll(t, []Record{aclRec(1, "orders"), aclRec(2, "payments"), aclRec(3, "audit")})
	if err != nil {
		t.Fatal(err)
	}
	if len(img.ACLs) != 3 || img.ACLs[uuidOf(0xa1)].ResourceName != "orders" {
		t.Fatalf("ACLs %v", img.ACLs)
	}
	removed, added := d.ACLChanges()
	if len(removed) != 0 || len(added) != 3 {
		t.Fatalf("first delta: removed %v added %v", removed, added)
	}

	d = NewDelta(img)
	for i, r := range []Record{
		&RemoveAccessControlEntryRecord{ID: uuidOf(0xa1)},
		aclRec(4, "new"), aclRec(5, "brief"), &RemoveAccessControlEntryRecord{ID: uuidOf(0xa5)},
	} {
		if err := d.Replay(int64(10+i), r); err != nil {
			t.Fatal(err)
		}
	}
	removed, added = d.ACLChanges()
	if len(removed) != 1 || removed[uuidOf(0xa1)].ResourceName != "orders" || len(added) != 1 || added[uuidOf(0xa4)].ResourceName != "new" {
		t.Fatalf("second delta: removed %v added %v", removed, added)
	}
	next := d.Apply()
	if len(img.ACLs) != 3 || len(next.ACLs) != 3 {
		t.Fatalf("base %d ACLs, next %d", len(img.ACLs), len(next.ACLs))
	}
	if _, ok := next.ACLs[uuidOf(0xa1)]; ok {
		t.Fatal("removed ACL still in the image")
	}

	// Removing an ACL that does not exist fails, as in Kafka.
	d = NewDelta(next)
	if err := d.Replay(20, &RemoveAccessControlEntryRecord{ID: uuidOf(0xa1)}); err == nil {
		t.Fatal("removing a missing ACL succeeded")
	}

	// A snapshot rebuilds them.
	again := replayRecords(t, next.Records())
	if !maps.Equal(again.ACLs, next.ACLs) {
		t.Fatalf("snapshot ACLs %v, want %v", again.ACLs, next.ACLs)
	}
}

type aclPublisher struct{ removed, added map[[16]byte]acl.Binding }

func (p *aclPublisher) Publish(d *Delta, _ *Image) { p.removed, p.added = d.ACLChanges() }

// TestACLSnapshotDiff: a broker loading a snapshot learns which ACLs went
// and came, so its authorizer changes by exactly those.
func TestACLSnapshotDiff(t *testing.T) {
	controller := NewLoader("c", slog.New(slog.DiscardHandler))
	behind := NewLoader("c", slog.New(slog.DiscardHandler))
	first := []Record{aclRec(1, "orders"), aclRec(2, "payments")}
	end := commitAll(controller, 0, first)
	commitAll(behind, 0, first)
	commitAll(controller, end, []Record{&RemoveAccessControlEntryRecord{ID: uuidOf(0xa1)}, aclRec(3, "audit")})

	pub := &aclPublisher{}
	behind.AddPublisher(pub)
	behind.HandleSnapshot(snapshotOf(controller.Image(), 3))
	if len(pub.removed) != 1 || pub.removed[uuidOf(0xa1)].ResourceName != "orders" ||
		len(pub.added) != 1 || pub.added[uuidOf(0xa3)].ResourceName != "audit" {
		t.Fatalf("snapshot diff: removed %v added %v", pub.removed, pub.added)
	}
	if !maps.Equal(behind.Image().ACLs, controller.Image().ACLs) {
		t.Fatal("ACLs differ after the snapshot")
	}
}
