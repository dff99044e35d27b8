package controller

import (
	"context"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/metadata"
)

// Upgrade types of an UpdateFeatures feature update (Kafka's
// FeatureUpdate.UpgradeType).
const (
	upgradeTypeUpgrade         int8 = 1
	upgradeTypeSafeDowngrade   int8 = 2
	upgradeTypeUnsafeDowngrade int8 = 3
)

// UpdateFeatures finalizes feature levels (Kafka's
// FeatureControlManager.updateFeatures): all the request's updates in one
// batch of FeatureLevelRecords, or none of them. The first update that
// fails, in request order, fails the request with INVALID_UPDATE_VERSION
// and Kafka's message; validate_only checks without writing. The answer
// comes after the records are committed and replayed.
//
// An update fails when its upgrade type is unknown, its level is below 0,
// this controller or a registered broker does not support the level,
// an upgrade lowers the level or a downgrade raises it, or the level's
// dependencies are not met by the levels the cluster would have. A
// metadata.version downgrade is refused when a version in between changed
// the metadata format (unsafe downgrades are not supported, as in Kafka 4).
// Version 0 requests say downgrade with AllowDowngrade (a safe downgrade).
//
// v0-1 answers name each feature; v2 answers only at the top level.
func (c *Controller) UpdateFeatures(ctx context.Context, req *kmsg.UpdateFeaturesRequest) *kmsg.UpdateFeaturesResponse {
	return write(c, ctx, req.ValidateOnly,
		func(img *metadata.Image) ([]metadata.Record, *kmsg.UpdateFeaturesResponse) {
			records, result := updateFeatures(img, c.cfg.NodeID, req)
			if result.err == nil {
				records = append(records, c.elrSafetyRecords(img, records)...)
			}
			return records, updateFeaturesResponse(req, result)
		},
		func(e *kerr.Error) *kmsg.UpdateFeaturesResponse {
			return updateFeaturesResponse(req, errDefault(e))
		})
}

// updateFeaturesResponse is the answer to req with result: on success v0-1
// name every feature, on failure the top level says which feature failed.
func updateFeaturesResponse(req *kmsg.UpdateFeaturesRequest, result apiError) *kmsg.UpdateFeaturesResponse {
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	if result.err != nil {
		resp.ErrorCode = result.err.Code
		msg := result.err.Description
		if result.message != nil {
			msg = *result.message
		}
		if result.err == kerr.InvalidUpdateVersion {
			msg = "The update failed for all features since the following feature had an error: " + msg
		}
		resp.ErrorMessage = &msg
		return resp
	}
	if req.Version <= 1 {
		for _, u := range req.FeatureUpdates {
			r := kmsg.NewUpdateFeaturesResponseResult()
			r.Feature = u.Feature
			resp.Results = append(resp.Results, r)
		}
	}
	return resp
}

// updateFeatures is the manager: the records for req against img, or the
// first update's error. nodeID is this controller's id, for its messages.
func updateFeatures(img *metadata.Image, nodeID int32, req *kmsg.UpdateFeaturesRequest) ([]metadata.Record, apiError) {
	// The levels the cluster would have with every update, against which
	// dependencies are checked (as Kafka: all updates, before any is
	// validated).
	proposed := map[string]int16{}
	for name, level := range img.Features {
		proposed[name] = level
	}
	// A feature named twice takes its last update, as Kafka's map of
	// updates does.
	last := map[string]kmsg.UpdateFeaturesRequestFeatureUpdate{}
	var order []string
	for _, u := range req.FeatureUpdates {
		if _, seen := last[u.Feature]; !seen {
			order = append(order, u.Feature)
		}
		last[u.Feature] = u
		proposed[u.Feature] = u.MaxVersionLevel
	}
	var records []metadata.Record
	for _, name := range order {
		u := last[name]
		upgradeType := u.UpgradeType
		if req.Version == 0 {
			upgradeType = upgradeTypeUpgrade
			if u.AllowDowngrade {
				upgradeType = upgradeTypeSafeDowngrade
			}
		}
		rec, result := updateFeature(img, nodeID, u.Feature, u.MaxVersionLevel, upgradeType, proposed)
		if result.err != nil {
			return nil, result
		}
		records = append(records, rec)
	}
	return records, apiError{}
}

// updateFeature checks one update (Kafka's FeatureControlManager.updateFeature)
// and returns its record.
func updateFeature(img *metadata.Image, nodeID int32, name string, level int16, upgradeType int8, proposed map[string]int16) (metadata.Record, apiError) {
	invalid := func(format string, args ...any) apiError {
		return errWith(kerr.InvalidUpdateVersion, "Invalid update version %d for feature %s. %s", level, name, fmt.Sprintf(format, args...))
	}
	if upgradeType < upgradeTypeUpgrade || upgradeType > upgradeTypeUnsafeDowngrade {
		return nil, invalid("The controller does not support the given upgrade type.")
	}
	current := img.Features[name]
	if level < 0 {
		return nil, invalid("A feature version cannot be less than 0.")
	}
	spec, known := metadata.LookupFeature(name)
	if reason := notSupported(level, fmt.Sprintf("Local controller %d", nodeID), spec, known); reason != "" {
		return nil, invalid("%s", reason)
	}
	for _, id := range img.SortedBrokerIDs() {
		b := img.Brokers[id]
		var bspec metadata.FeatureSpec
		registered := false
		for _, f := range b.SupportedFeatures {
			if f.Name == name {
				bspec, registered = metadata.FeatureSpec{Name: name, Min: f.MinSupportedVersion, Max: f.MaxSupportedVersion}, true
			}
		}
		if reason := notSupported(level, fmt.Sprintf("Broker %d", id), bspec, registered); reason != "" {
			return nil, invalid("%s", reason)
		}
	}
	switch {
	case level < current && upgradeType == upgradeTypeUpgrade:
		return nil, invalid("Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.")
	case level > current && upgradeType != upgradeTypeUpgrade:
		return nil, invalid("Can't downgrade to a newer version.")
	}
	if name == metadata.MetadataVersionFeature {
		return updateMetadataVersion(current, level, upgradeType == upgradeTypeUnsafeDowngrade)
	}
	if !known {
		return nil, invalid("Feature %s not found.", name)
	}
	if err := metadata.ValidateFeatureLevel(spec, level, proposed); err != nil {
		return nil, invalid("%s", err)
	}
	return &metadata.FeatureLevelRecord{Name: name, FeatureLevel: level}, apiError{}
}

// notSupported is Kafka's QuorumFeatures.reasonNotSupported: why the node
// named what cannot run a feature at level, or "" if it can. A node that
// does not know the feature supports only level 0.
func notSupported(level int16, what string, spec metadata.FeatureSpec, known bool) string {
	minLevel, maxLevel := int16(0), int16(0)
	if known {
		minLevel, maxLevel = spec.Min, spec.Max
	}
	if level >= minLevel && level <= maxLevel {
		return ""
	}
	if maxLevel == 0 {
		return what + " does not support this feature."
	}
	return what + " only supports versions " + versionRange(minLevel, maxLevel)
}

// versionRange is Kafka's VersionRange.toString.
func versionRange(minLevel, maxLevel int16) string {
	if minLevel == maxLevel {
		return fmt.Sprint(minLevel)
	}
	return fmt.Sprintf("%d-%d", minLevel, maxLevel)
}

// updateMetadataVersion is Kafka's extra checks of a metadata.version
// change: a downgrade only when no version in between changed the metadata
// format, and never an unsafe one.
func updateMetadataVersion(current, level int16, unsafe bool) (metadata.Record, apiError) {
	invalid := func(msg string) apiError {
		return errWith(kerr.InvalidUpdateVersion, "Invalid metadata.version %d. %s", level, msg)
	}
	if _, ok := metadata.MetadataVersionName(level); !ok {
		return nil, invalid("Unknown metadata.version.")
	}
	if level < current && metadata.MetadataChangedBetween(current, level) {
		if unsafe {
			return nil, invalid("Unsafe metadata downgrade is not supported in this version.")
		}
		return nil, invalid("Refusing to perform the requested downgrade because it might delete metadata information.")
	}
	return &metadata.FeatureLevelRecord{Name: metadata.MetadataVersionFeature, FeatureLevel: level}, apiError{}
}

// elrSafetyRecords is Kafka's maybeGenerateElrSafetyRecords: when records
// turn eligible leader replicas on (from off in img), every broker must
// agree on min.insync.replicas, so the cluster-level value is written if
// there is none (this controller's static value) and every broker-level
// one is removed.
func (c *Controller) elrSafetyRecords(img *metadata.Image, records []metadata.Record) []metadata.Record {
	if img.Features[metadata.EligibleLeaderReplicasVersionFeature] >= 1 || !turnsELROn(records) {
		return nil
	}
	var out []metadata.Record
	if _, ok := img.ClusterConfigs()[minInsyncReplicas]; !ok {
		v := strconv.Itoa(int(max(c.cfg.MinInsyncReplicas, 1)))
		out = append(out, &metadata.ConfigRecord{ResourceType: metadata.ConfigResourceBroker, Name: minInsyncReplicas, Value: &v})
	}
	for res, configs := range img.AllConfigs() {
		if _, ok := configs[minInsyncReplicas]; ok && res.Type == metadata.ConfigResourceBroker && res.Name != "" {
			out = append(out, &metadata.ConfigRecord{ResourceType: metadata.ConfigResourceBroker, ResourceName: res.Name, Name: minInsyncReplicas})
		}
	}
	return out
}

// turnsELROn reports whether records finalize eligible.leader.replicas.version
// at 1 or more.
func turnsELROn(records []metadata.Record) bool {
	for _, r := range records {
		if f, ok := r.(*metadata.FeatureLevelRecord); ok && f.Name == metadata.EligibleLeaderReplicasVersionFeature && f.FeatureLevel >= 1 {
			return true
		}
	}
	return false
}
