package metadata

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Feature names besides metadata.version (Kafka's Feature enum). Gregor
// knows only the features whose behaviour it implements: a level is
// advertised only when the code it turns on exists.
const (
	// ShareVersionFeature turns share groups (KIP-932) on at level 1.
	ShareVersionFeature = "share.version"
	// GroupVersionFeature turns the KIP-848 consumer group protocol
	// (ConsumerGroupHeartbeat, ConsumerGroupDescribe) on at level 1.
	GroupVersionFeature = "group.version"
	// EligibleLeaderReplicasVersionFeature turns eligible leader replicas
	// (KIP-966) on at level 1: the controller tracks ELR and LastKnownELR
	// and elects from the ELR when the ISR is empty.
	EligibleLeaderReplicasVersionFeature = "eligible.leader.replicas.version"
	// TransactionVersionFeature is KIP-890's transaction.version: level 1
	// writes flexible __transaction_state records, level 2 turns on
	// transactions v2 (the epoch bump at every EndTxn, partitions added by
	// their leaders at Produce v12+ and TxnOffsetCommit v5+).
	TransactionVersionFeature = "transaction.version"
)

// FeatureSpec is one feature this build supports: the levels it can run
// at, and from which metadata.version on a new cluster gets each level
// (Kafka's FeatureVersion.bootstrapMetadataVersion).
type FeatureSpec struct {
	Name     string
	Min, Max int16
	// DefaultFrom[i] is the lowest metadata.version at which a new
	// cluster is formatted with level i (index 0 is level 0, always
	// MinMetadataVersion).
	DefaultFrom []int16
	// Depends[i] are the features level i needs at a level at least the
	// one given (Kafka's FeatureVersion.dependencies).
	Depends []map[string]int16
}

// supportedFeatures are the features other than metadata.version, sorted
// by name.
//
//   - group.version 1 is Kafka's GV_1: new clusters from 4.0-IV0 on.
//   - share.version 1 is Kafka's SV_1, production-ready in 4.2, where new
//     clusters get it from 4.2-IV0 on. Gregor's latest metadata.version is
//     4.0-IV3 and its share groups are 4.2's, so a new Gregor cluster gets
//     share.version=1 at its latest metadata.version (Kafka 4.2's default
//     for a new cluster), and 0 below it.
//   - transaction.version 1 and 2 are Kafka's TV_1 and TV_2: new clusters
//     get 2 from 4.0-IV2 on, 0 below it.
var supportedFeatures = []FeatureSpec{
	// Kafka's ELRV_1 needs metadata.version 4.0-IV1; Kafka 4.1 and 4.2 give
	// it to new clusters (from 4.1-IV0 on), and so does Gregor at its latest
	// metadata.version.
	{Name: EligibleLeaderReplicasVersionFeature, Min: 0, Max: 1, DefaultFrom: []int16{MinMetadataVersion, LatestMetadataVersion},
		Depends: []map[string]int16{nil, {MetadataVersionFeature: 23}}},
	{Name: GroupVersionFeature, Min: 0, Max: 1, DefaultFrom: []int16{MinMetadataVersion, 22}, Depends: []map[string]int16{nil, nil}},
	{Name: ShareVersionFeature, Min: 0, Max: 1, DefaultFrom: []int16{MinMetadataVersion, LatestMetadataVersion}, Depends: []map[string]int16{nil, nil}},
	{Name: TransactionVersionFeature, Min: 0, Max: 2, DefaultFrom: []int16{MinMetadataVersion, 24, 24}, Depends: []map[string]int16{nil, nil, nil}},
}

// SupportedFeatures returns the features this build supports, metadata.version
// first and the others by name: what a node registers and ApiVersions
// advertises.
func SupportedFeatures() []FeatureSpec {
	out := []FeatureSpec{{Name: MetadataVersionFeature, Min: MinMetadataVersion, Max: LatestMetadataVersion}}
	return append(out, slices.Clone(supportedFeatures)...)
}

// LookupFeature returns the spec of a supported feature.
func LookupFeature(name string) (FeatureSpec, bool) {
	for _, f := range SupportedFeatures() {
		if f.Name == name {
			return f, true
		}
	}
	return FeatureSpec{}, false
}

// DefaultLevel is the level a new cluster formatted at metadata.version mv
// gets (Kafka's Feature.defaultLevel).
func (f FeatureSpec) DefaultLevel(mv int16) int16 {
	if f.Name == MetadataVersionFeature {
		return mv
	}
	level := int16(0)
	for i, from := range f.DefaultFrom {
		if mv >= from {
			level = int16(i)
		}
	}
	return level
}

// DefaultFeatureLevels are the feature levels of a new cluster at
// metadata.version mv: mv itself and each other feature's default.
func DefaultFeatureLevels(mv int16) map[string]int16 {
	out := map[string]int16{MetadataVersionFeature: mv}
	for _, f := range supportedFeatures {
		out[f.Name] = f.DefaultLevel(mv)
	}
	return out
}

// FeatureLevelRecords are the FeatureLevelRecords that start a log with
// the given levels: metadata.version first (a log's first record must set
// it), then the others with a level above 0, by name.
func FeatureLevelRecords(levels map[string]int16) []Record {
	var out []Record
	if mv, ok := levels[MetadataVersionFeature]; ok {
		out = append(out, &FeatureLevelRecord{Name: MetadataVersionFeature, FeatureLevel: mv})
	}
	names := make([]string, 0, len(levels))
	for name, level := range levels {
		if name != MetadataVersionFeature && level > 0 {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		out = append(out, &FeatureLevelRecord{Name: name, FeatureLevel: levels[name]})
	}
	return out
}

// ValidateFeatureLevel checks level of feature f against the levels the
// cluster would have (Kafka's Feature.validateVersion): every dependency
// of the level must be met. The error is Kafka's message.
func ValidateFeatureLevel(f FeatureSpec, level int16, levels map[string]int16) error {
	if f.Name == MetadataVersionFeature || int(level) >= len(f.Depends) || level < 0 {
		return nil
	}
	deps := f.Depends[level]
	names := make([]string, 0, len(deps))
	for n := range deps {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if have, ok := levels[n]; !ok || have < deps[n] {
			return fmt.Errorf("%s could not be set to %d because it depends on %s level %d", f.Name, level, n, deps[n])
		}
	}
	return nil
}

// metadataVersions are the metadata.version levels Gregor supports, from
// MinMetadataVersion: Kafka's release names, and whether the level changed
// the metadata format (MetadataVersion.didMetadataChange), which makes a
// downgrade across it lossy.
var metadataVersions = []struct {
	name    string
	changed bool
}{
	{"3.3-IV3", true}, // 7
	{"3.4-IV0", true},
	{"3.5-IV0", false},
	{"3.5-IV1", false},
	{"3.5-IV2", true}, // 11
	{"3.6-IV0", false},
	{"3.6-IV1", true},
	{"3.6-IV2", true},
	{"3.7-IV0", true}, // 15
	{"3.7-IV1", false},
	{"3.7-IV2", true},
	{"3.7-IV3", false},
	{"3.7-IV4", false},
	{"3.8-IV0", false}, // 20
	{"3.9-IV0", false},
	{"4.0-IV0", false},
	{"4.0-IV1", true},
	{"4.0-IV2", false},
	{"4.0-IV3", false}, // 25
}

// MetadataVersionName is a metadata.version level's release name
// ("4.0-IV3"), or ok false for a level Gregor does not know.
func MetadataVersionName(level int16) (string, bool) {
	i := int(level) - int(MinMetadataVersion)
	if i < 0 || i >= len(metadataVersions) {
		return "", false
	}
	return metadataVersions[i].name, true
}

// ParseMetadataVersion turns a release version ("3.9", "3.9-IV0") into its
// metadata.version level; a bare release is its latest IV, as Kafka's
// MetadataVersion.fromVersionString takes it.
func ParseMetadataVersion(s string) (int16, bool) {
	level, found := int16(0), false
	for i, v := range metadataVersions {
		release, _, _ := strings.Cut(v.name, "-")
		if v.name == s || release == s {
			level, found = MinMetadataVersion+int16(i), true
		}
	}
	return level, found
}

// MetadataChangedBetween reports whether any metadata.version in (low,
// high] changed the metadata format, so that going from one to the other
// can lose metadata (Kafka's MetadataVersion.checkIfMetadataChanged).
func MetadataChangedBetween(a, b int16) bool {
	low, high := min(a, b), max(a, b)
	for v := high; v > low; v-- {
		i := int(v) - int(MinMetadataVersion)
		if i >= 0 && i < len(metadataVersions) && metadataVersions[i].changed {
			return true
		}
	}
	return false
}

// FeatureLevelString is a level as kafka-features prints it: the release
// name for metadata.version, the number for the others.
func FeatureLevelString(feature string, level int16) string {
	if feature == MetadataVersionFeature {
		if name, ok := MetadataVersionName(level); ok {
			return name
		}
		return "UNKNOWN " + strconv.Itoa(int(level))
	}
	return strconv.Itoa(int(level))
}

// SupportedBrokerFeatures are the supported ranges a node registers with
// (RegisterBrokerRecord, BrokerRegistrationRequest).
func SupportedBrokerFeatures() []BrokerFeature {
	var out []BrokerFeature
	for _, f := range SupportedFeatures() {
		out = append(out, BrokerFeature{Name: f.Name, MinSupportedVersion: f.Min, MaxSupportedVersion: f.Max})
	}
	return out
}

// ParseFeatureLevel parses kafka-features' and kafka-storage's
// feature=level argument.
func ParseFeatureLevel(s string) (string, int16, error) {
	name, levelString, ok := strings.Cut(s, "=")
	if !ok {
		return "", 0, fmt.Errorf("can't parse feature=level string %s: equals sign not found", s)
	}
	name, levelString = strings.TrimSpace(name), strings.TrimSpace(levelString)
	level, err := strconv.ParseInt(levelString, 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("can't parse feature=level string %s: unable to parse %s as a short", s, levelString)
	}
	return name, int16(level), nil
}
