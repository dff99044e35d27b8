package group

import (
	"testing"
)

func TestParseMigrationPolicy(t *testing.T) {
	for in, want := range map[string]MigrationPolicy{
		"bidirectional": MigrationBidirectional, "UPGRADE": MigrationUpgrade, " Downgrade ": MigrationDowngrade,
		"disabled": MigrationDisabled, "sideways": MigrationDisabled, "": MigrationDisabled,
	} {
		if got := ParseMigrationPolicy(in); got != want {
			t.Errorf("ParseMigrationPolicy(%q) = %v, want %v", in, got, want)
		}
	}
	if !MigrationBidirectional.upgrades() || !MigrationBidirectional.downgrades() || MigrationUpgrade.downgrades() ||
		MigrationDowngrade.upgrades() || MigrationDisabled.upgrades() || MigrationDisabled.downgrades() {
		t.Error("policy directions")
	}
}

// The classic member metadata is the member metadata value's tagged field
// 0, in Kafka's layout; other tags are skipped.
func TestClassicMemberMetadataTag(t *testing.T) {
	cm := &classicMember{sessionTimeoutMs: 45000, protocols: []protocol{{"range", []byte{0, 3, 1}}, {"roundrobin", []byte{}}}}
	var e enc
	e.classicMemberTag(cm)
	// Expected bytes: 1 tagged field, tag 0, size, then the struct:
	// session timeout, compact array of (compact name, compact bytes, no
	// tags), no tags.
	body := []byte{0, 0, 0xaf, 0xc8, 3, 6, 'r', 'a', 'n', 'g', 'e', 4, 0, 3, 1, 0, 11, 'r', 'o', 'u', 'n', 'd', 'r', 'o', 'b', 'i', 'n', 1, 0, 0}
	want := append([]byte{1, 0, byte(len(body))}, body...)
	if string(e.b) != string(want) {
		t.Fatalf("encoded % x\nwant    % x", e.b, want)
	}
	// An unknown tag before it is skipped.
	in := append([]byte{2, 5, 2, 0xaa, 0xbb, 0, byte(len(body))}, body...)
	d := dec{b: in}
	got := readMemberTags(&d)
	if d.err != nil || got == nil || got.sessionTimeoutMs != 45000 || len(got.protocols) != 2 ||
		got.protocols[0].name != "range" || string(got.protocols[0].metadata) != "\x00\x03\x01" || got.protocols[1].name != "roundrobin" {
		t.Fatalf("decoded %+v, err %v", got, d.err)
	}
	d = dec{b: []byte{0}}
	if readMemberTags(&d) != nil || d.err != nil {
		t.Fatal("no tags: not a classic member")
	}
}
