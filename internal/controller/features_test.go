package controller

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/metadata"
)

// featureImage is a cluster at the default feature levels of a new
// cluster, with brokers registered with the given supported features
// (nil: this build's).
func featureImage(t *testing.T, brokers map[int32][]metadata.BrokerFeature) *metadata.Image {
	t.Helper()
	recs := metadata.FeatureLevelRecords(metadata.DefaultFeatureLevels(metadata.LatestMetadataVersion))
	for id, features := range brokers {
		if features == nil {
			features = metadata.SupportedBrokerFeatures()
		}
		recs = append(recs, &metadata.RegisterBrokerRecord{RecordVersion: metadata.RegisterBrokerRecordVersion, BrokerID: id,
			IncarnationID: [16]byte{15: byte(id)}, EndPoints: []metadata.BrokerEndpoint{}, Features: features})
	}
	return applyACLRecords(t, metadata.EmptyImage(), recs)
}

func featureUpdate(name string, level int16, upgradeType int8) kmsg.UpdateFeaturesRequestFeatureUpdate {
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = name, level, upgradeType
	return u
}

// recordsString is the FeatureLevelRecords as name=level, in order.
func recordsString(recs []metadata.Record) string {
	var parts []string
	for _, r := range recs {
		f := r.(*metadata.FeatureLevelRecord)
		parts = append(parts, fmt.Sprintf("%s=%d", f.Name, f.FeatureLevel))
	}
	return strings.Join(parts, " ")
}

// TestUpdateFeatures checks UpdateFeatures' validation against Kafka's
// FeatureControlManager: the records of an update that can be made, and
// INVALID_UPDATE_VERSION with Kafka's message for the first that cannot.
func TestUpdateFeatures(t *testing.T) {
	const (
		up     = upgradeTypeUpgrade
		safe   = upgradeTypeSafeDowngrade
		unsafe = upgradeTypeUnsafeDowngrade
	)
	oldBroker := []metadata.BrokerFeature{{Name: metadata.MetadataVersionFeature, MinSupportedVersion: 7, MaxSupportedVersion: 25}}
	for _, tc := range []struct {
		name     string
		disabled string // a feature at level 0 before the update
		brokers  map[int32][]metadata.BrokerFeature
		updates  []kmsg.UpdateFeaturesRequestFeatureUpdate
		records  string // on success
		err      string // else the message, after Kafka's "Invalid update version N for feature F. "
	}{
		{name: "disable share groups", updates: []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("share.version", 0, safe)},
			records: "share.version=0"},
		{name: "unsafe downgrade of a feature", updates: []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("group.version", 0, unsafe)},
			records: "group.version=0"},
		{name: "same level", updates: []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("share.version", 1, up)},
			records: "share.version=1"},
		{name: "several, the last of a name wins", updates: []kmsg.UpdateFeaturesRequestFeatureUpdate{
			featureUpdate("share.version", 1, safe), featureUpdate("group.version", 0, safe), featureUpdate("share.version", 0, safe)},
			records: "share.version=0 group.version=0"},
		{name: "downgrade with upgrade type", updates: []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("share.version", 0, up)},
			err: "Invalid update version 0 for feature share.version. Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade."},
		{name: "same level with downgrade type", updates: []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("metadata.version", 25, safe), featureUpdate("share.version", 1, safe)},
			records: "metadata.version=25 share.version=1"},
		{name: "upgrade with downgrade type", disabled: "share.version", updates: []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("share.version", 1, safe)},
			err: "Invalid update version 1 for feature share.version. Can't downgrade to a newer version."},
		{name: "enable share groups", disabled: "share.version", updates: []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("share.version", 1, up)},
			records: "share.version=1"},
		{name: "unknown upgrade type", updates: []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("share.version", 1, 4)},
			err: "Invalid update version 1 for feature share.version. The controller does not support the given upgrade type."},
		{name: "negative level", updates: []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("share.version", -1, safe)},
			err: "Invalid update version -1 for feature share.version. A feature version cannot be less than 0."},
		{name: "above this controller's range", updates: []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("share.version", 2, up)},
			err: "Invalid update version 2 for feature share.version. Local controller 1 only supports versions 0-1"},
		{name: "a feature Gregor does not implement", updates: []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("transaction.version", 2, up)},
			err: "Invalid update version 2 for feature transaction.version. Local controller 1 does not support this feature."},
		{name: "unknown feature at level 0", updates: []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("kraft.version", 0, safe)},
			err: "Invalid update version 0 for feature kraft.version. Feature kraft.version not found."},
		{name: "a broker that does not know the feature", brokers: map[int32][]metadata.BrokerFeature{1: nil, 2: oldBroker},
			updates: []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("group.version", 1, up)},
			err:     "Invalid update version 1 for feature group.version. Broker 2 does not support this feature."},
		{name: "a broker that does not know the feature, level 0", brokers: map[int32][]metadata.BrokerFeature{2: oldBroker},
			updates: []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("group.version", 0, safe)},
			records: "group.version=0"},
		{name: "a broker with a narrower range", brokers: map[int32][]metadata.BrokerFeature{3: {{Name: "metadata.version", MinSupportedVersion: 7, MaxSupportedVersion: 21}}},
			updates: []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("metadata.version", 24, safe)},
			err:     "Invalid update version 24 for feature metadata.version. Broker 3 only supports versions 7-21"},
		{name: "metadata.version safe downgrade", updates: []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("metadata.version", 23, safe)},
			records: "metadata.version=23"},
		{name: "metadata.version downgrade across a format change", updates: []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("metadata.version", 22, safe)},
			err: "Invalid metadata.version 22. Refusing to perform the requested downgrade because it might delete metadata information."},
		{name: "metadata.version unsafe downgrade", updates: []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("metadata.version", 21, unsafe)},
			err: "Invalid metadata.version 21. Unsafe metadata downgrade is not supported in this version."},
		{name: "metadata.version below the lowest", updates: []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("metadata.version", 6, safe)},
			err: "Invalid update version 6 for feature metadata.version. Local controller 1 only supports versions 7-25"},
		{name: "the first failure fails all", updates: []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("share.version", 0, safe), featureUpdate("group.version", 5, up)},
			err: "Invalid update version 5 for feature group.version. Local controller 1 only supports versions 0-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			brokers := tc.brokers
			if brokers == nil {
				brokers = map[int32][]metadata.BrokerFeature{1: nil}
			}
			img := featureImage(t, brokers)
			if tc.disabled != "" {
				img = applyACLRecords(t, img, []metadata.Record{&metadata.FeatureLevelRecord{Name: tc.disabled}})
			}
			req := kmsg.NewPtrUpdateFeaturesRequest()
			req.Version, req.FeatureUpdates = 1, tc.updates
			recs, result := updateFeatures(img, 1, req)
			if tc.err == "" {
				if result.err != nil {
					t.Fatalf("error %v: %s", result.err, *result.message)
				}
				if got := recordsString(recs); got != tc.records {
					t.Fatalf("records %q, want %q", got, tc.records)
				}
				return
			}
			if result.err != kerr.InvalidUpdateVersion || result.message == nil || *result.message != tc.err || recs != nil {
				msg := ""
				if result.message != nil {
					msg = *result.message
				}
				t.Fatalf("got %v %q records %v, want INVALID_UPDATE_VERSION %q", result.err, msg, recs, tc.err)
			}
		})
	}
}

// TestUpdateFeaturesResponse: a v0-1 success names each feature, a v2
// success only the top level; a failure is at the top level, prefixed as
// Kafka's QuorumController prefixes it; v0's AllowDowngrade is a safe
// downgrade.
func TestUpdateFeaturesResponse(t *testing.T) {
	img := featureImage(t, map[int32][]metadata.BrokerFeature{1: nil})
	for _, v := range []int16{0, 1, 2} {
		req := kmsg.NewPtrUpdateFeaturesRequest()
		req.Version = v
		u := featureUpdate("share.version", 0, safe(v))
		u.AllowDowngrade = true
		req.FeatureUpdates = append(req.FeatureUpdates, u, featureUpdate("group.version", 1, upgradeTypeUpgrade))
		recs, result := updateFeatures(img, 1, req)
		resp := updateFeaturesResponse(req, result)
		if resp.ErrorCode != 0 || recordsString(recs) != "share.version=0 group.version=1" {
			t.Fatalf("v%d: %+v, records %s", v, resp, recordsString(recs))
		}
		if want := map[int16]int{0: 2, 1: 2, 2: 0}[v]; len(resp.Results) != want || (want > 0 && (resp.Results[0].Feature != "share.version" || resp.Results[1].ErrorCode != 0)) {
			t.Fatalf("v%d results %+v", v, resp.Results)
		}
	}
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.Version = 1
	req.FeatureUpdates = append(req.FeatureUpdates, featureUpdate("share.version", 0, upgradeTypeUpgrade))
	_, result := updateFeatures(img, 1, req)
	resp := updateFeaturesResponse(req, result)
	want := "The update failed for all features since the following feature had an error: Invalid update version 0 for feature share.version. " +
		"Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade."
	if resp.ErrorCode != kerr.InvalidUpdateVersion.Code || resp.ErrorMessage == nil || *resp.ErrorMessage != want || len(resp.Results) != 0 {
		t.Fatalf("failure: %+v", resp)
	}
}

// safe is the UpgradeType field of a safe downgrade at version v: v0
// has none (its AllowDowngrade says it).
func safe(v int16) int8 {
	if v == 0 {
		return 0
	}
	return upgradeTypeSafeDowngrade
}
