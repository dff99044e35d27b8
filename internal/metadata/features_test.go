package metadata

import (
	"maps"
	"testing"
)

func TestMetadataVersions(t *testing.T) {
	for _, tc := range []struct {
		s     string
		level int16
		ok    bool
	}{
		{"3.3-IV3", 7, true}, {"3.3", 7, true}, {"3.7", 19, true}, {"3.9-IV0", 21, true}, {"4.0", 25, true}, {"4.0-IV1", 23, true},
		{"3.3-IV2", 0, false}, {"4.1", 0, false}, {"", 0, false},
	} {
		if level, ok := ParseMetadataVersion(tc.s); level != tc.level || ok != tc.ok {
			t.Errorf("ParseMetadataVersion(%q) = %d %v, want %d %v", tc.s, level, ok, tc.level, tc.ok)
		}
	}
	if name, ok := MetadataVersionName(LatestMetadataVersion); !ok || name != "4.0-IV3" {
		t.Errorf("latest: %q", name)
	}
	if s := FeatureLevelString(MetadataVersionFeature, 6); s != "UNKNOWN 6" {
		t.Errorf("level 6: %q", s)
	}
	// Kafka's checkIfMetadataChanged: 4.0-IV1 (23) changed the format,
	// 4.0-IV2 and IV3 did not; 3.5-IV0 and IV1 did not, 3.5-IV2 did.
	for _, tc := range []struct {
		a, b    int16
		changed bool
	}{{25, 23, false}, {25, 22, true}, {23, 25, false}, {22, 25, true}, {10, 9, false}, {11, 9, true}, {8, 8, false}, {21, 17, false}, {21, 16, true}} {
		if got := MetadataChangedBetween(tc.a, tc.b); got != tc.changed {
			t.Errorf("MetadataChangedBetween(%d, %d) = %v", tc.a, tc.b, got)
		}
	}
}

func TestDefaultFeatureLevels(t *testing.T) {
	for mv, want := range map[int16]map[string]int16{
		25: {MetadataVersionFeature: 25, GroupVersionFeature: 1, ShareVersionFeature: 1, EligibleLeaderReplicasVersionFeature: 1, TransactionVersionFeature: 2},
		24: {MetadataVersionFeature: 24, GroupVersionFeature: 1, ShareVersionFeature: 0, EligibleLeaderReplicasVersionFeature: 0, TransactionVersionFeature: 2},
		23: {MetadataVersionFeature: 23, GroupVersionFeature: 1, ShareVersionFeature: 0, EligibleLeaderReplicasVersionFeature: 0, TransactionVersionFeature: 0},
		22: {MetadataVersionFeature: 22, GroupVersionFeature: 1, ShareVersionFeature: 0, EligibleLeaderReplicasVersionFeature: 0, TransactionVersionFeature: 0},
		21: {MetadataVersionFeature: 21, GroupVersionFeature: 0, ShareVersionFeature: 0, EligibleLeaderReplicasVersionFeature: 0, TransactionVersionFeature: 0},
	} {
		if got := DefaultFeatureLevels(mv); !maps.Equal(got, want) {
			t.Errorf("at %d: %v, want %v", mv, got, want)
		}
	}
	// metadata.version first, then the levels above 0 by name.
	recs := FeatureLevelRecords(map[string]int16{ShareVersionFeature: 1, GroupVersionFeature: 0, MetadataVersionFeature: 25, "a.version": 2})
	var got []string
	for _, r := range recs {
		f := r.(*FeatureLevelRecord)
		got = append(got, f.Name)
	}
	if len(got) != 3 || got[0] != MetadataVersionFeature || got[1] != "a.version" || got[2] != ShareVersionFeature {
		t.Errorf("records %v", got)
	}
	if name, level, err := ParseFeatureLevel(" share.version = 1 "); err != nil || name != "share.version" || level != 1 {
		t.Errorf("parse: %q %d %v", name, level, err)
	}
	for _, bad := range []string{"share.version", "share.version=1.5", "x=40000"} {
		if _, _, err := ParseFeatureLevel(bad); err == nil {
			t.Errorf("parse %q: no error", bad)
		}
	}
}
