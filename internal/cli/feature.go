package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/metadata"
)

// Upgrade types of UpdateFeatures (Kafka's FeatureUpdate.UpgradeType).
const (
	featureUpgrade         int8 = 1
	featureSafeDowngrade   int8 = 2
	featureUnsafeDowngrade int8 = 3
)

// NewFeatureCommand returns `feature describe|upgrade|downgrade|disable|
// version-mapping`: kafka-features.sh. describe reads the cluster's
// supported and finalized features from ApiVersions; the others change
// them with UpdateFeatures (which the active controller checks) or, for
// version-mapping, print the levels a release version stands for.
func NewFeatureCommand() *cobra.Command {
	conn := &connFlags{}
	cmd := &cobra.Command{
		Use:   "feature",
		Short: "Describe and update the cluster's feature levels (like kafka-features)",
		Long: "Describe, upgrade, downgrade and disable feature levels (metadata.version, group.version,\n" +
			"share.version). A level applies to the whole cluster once the controller commits it;\n" +
			"share.version=0 turns share groups off, group.version=0 the KIP-848 consumer protocol.",
	}
	conn.register(cmd, cmd.PersistentFlags())
	cmd.AddCommand(newFeatureDescribe(conn),
		newFeatureUpdate(conn, "upgrade", "Upgrade one or more features"),
		newFeatureUpdate(conn, "downgrade", "Downgrade one or more features"),
		newFeatureUpdate(conn, "disable", "Disable one or more features (downgrade to level 0)"),
		newFeatureVersionMapping())
	return cmd
}

func newFeatureDescribe(conn *connFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "describe",
		Short: "Print every feature's supported range and finalized level",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return conn.withClient(cmd, func(ctx context.Context, cl *kgo.Client) error {
				return describeFeatures(ctx, cmd, cl)
			})
		},
	}
}

// describeFeatures prints ApiVersions' features as kafka-features describe
// does.
func describeFeatures(ctx context.Context, cmd *cobra.Command, cl *kgo.Client) error {
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "gregor-cli", "1.0"
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("describe features: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return fmt.Errorf("describe features: %w", err)
	}
	finalized := map[string]int16{}
	for _, f := range resp.FinalizedFeatures {
		finalized[f.Name] = f.MaxVersionLevel
	}
	epoch := "-"
	if resp.FinalizedFeaturesEpoch >= 0 {
		epoch = fmt.Sprint(resp.FinalizedFeaturesEpoch)
	}
	supported := slices.Clone(resp.SupportedFeatures)
	slices.SortFunc(supported, func(a, b kmsg.ApiVersionsResponseSupportedFeature) int { return strings.Compare(a.Name, b.Name) })
	for _, f := range supported {
		fmt.Fprintf(cmd.OutOrStdout(), "Feature: %s\tSupportedMinVersion: %s\tSupportedMaxVersion: %s\tFinalizedVersionLevel: %s\tEpoch: %s\n",
			f.Name, metadata.FeatureLevelString(f.Name, f.MinVersion), metadata.FeatureLevelString(f.Name, f.MaxVersion),
			metadata.FeatureLevelString(f.Name, finalized[f.Name]), epoch)
	}
	return nil
}

// newFeatureUpdate is upgrade, downgrade or disable (op), with
// kafka-features' flags.
func newFeatureUpdate(conn *connFlags, op, short string) *cobra.Command {
	var (
		features       []string
		releaseVersion string
		unsafe, dryRun bool
	)
	cmd := &cobra.Command{
		Use:   op,
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			upgradeType := featureUpgrade
			if op != "upgrade" {
				upgradeType = featureSafeDowngrade
				if unsafe {
					upgradeType = featureUnsafeDowngrade
				}
			}
			levels, order, err := featureUpdates(op, features, releaseVersion, upgradeType)
			if err != nil {
				return err
			}
			return conn.withClient(cmd, func(ctx context.Context, cl *kgo.Client) error {
				return updateFeatures(ctx, cmd, cl, conn.timeout, op, levels, order, upgradeType, dryRun)
			})
		},
	}
	fs := cmd.Flags()
	if op == "disable" {
		fs.StringArrayVar(&features, "feature", nil, "a feature to disable, `NAME` (repeatable)")
	} else {
		fs.StringArrayVar(&features, "feature", nil, "a feature "+op+", `NAME=LEVEL` (repeatable), e.g. share.version=1")
		fs.StringVar(&releaseVersion, "release-version", "",
			"the release `VERSION` to "+op+" every feature to, e.g. 3.9-IV0 (see version-mapping)")
	}
	if op != "upgrade" {
		fs.BoolVar(&unsafe, "unsafe", false, op+" even if it may irreversibly destroy metadata")
	}
	fs.BoolVar(&dryRun, "dry-run", false, "validate the "+op+", but do not perform it")
	return cmd
}

// featureUpdates are the levels an upgrade, downgrade or disable asks for,
// and the feature names in the order to print them (by name).
func featureUpdates(op string, features []string, releaseVersion string, upgradeType int8) (map[string]int16, []string, error) {
	levels := map[string]int16{}
	if releaseVersion != "" {
		if len(features) > 0 {
			return nil, nil, errors.New("can not specify --release-version with --feature")
		}
		mv, ok := metadata.ParseMetadataVersion(releaseVersion)
		if !ok {
			return nil, nil, fmt.Errorf("unknown metadata.version %s; supported metadata.version are %s to %s", releaseVersion,
				metadata.FeatureLevelString(metadata.MetadataVersionFeature, metadata.MinMetadataVersion),
				metadata.FeatureLevelString(metadata.MetadataVersionFeature, metadata.LatestMetadataVersion))
		}
		for name, level := range metadata.DefaultFeatureLevels(mv) {
			// As kafka-features: an upgrade does not ask for level 0.
			if upgradeType != featureUpgrade || level > 0 {
				levels[name] = level
			}
		}
	}
	for _, f := range features {
		name, level := f, int16(0)
		if op != "disable" {
			var err error
			if name, level, err = metadata.ParseFeatureLevel(f); err != nil {
				return nil, nil, err
			}
		}
		if _, dup := levels[name]; dup {
			return nil, nil, fmt.Errorf("feature %s was specified more than once", name)
		}
		levels[name] = level
	}
	if len(levels) == 0 {
		return nil, nil, fmt.Errorf("you must specify at least one feature to %s", op)
	}
	order := make([]string, 0, len(levels))
	for name := range levels {
		order = append(order, name)
	}
	slices.Sort(order)
	return levels, order, nil
}

// updateFeatures sends one UpdateFeatures request and prints a line per
// feature, as kafka-features does; any failure makes the command fail.
func updateFeatures(ctx context.Context, cmd *cobra.Command, cl *kgo.Client, timeout time.Duration, op string, levels map[string]int16, order []string, upgradeType int8, dryRun bool) error {
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.ValidateOnly = dryRun
	req.TimeoutMillis = int32(min(timeout.Milliseconds(), 1<<31-1))
	for _, name := range order {
		u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		u.Feature, u.MaxVersionLevel, u.UpgradeType = name, levels[name], upgradeType
		u.AllowDowngrade = upgradeType != featureUpgrade // what a v0 broker reads
		req.FeatureUpdates = append(req.FeatureUpdates, u)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("%s features: %w", op, err)
	}
	// A v2 answer has only the top-level outcome, which is every
	// feature's; a v0-1 answer may name each.
	failures := map[string]string{}
	if resp.ErrorCode != 0 {
		for _, name := range order {
			failures[name] = errorText(resp.ErrorCode, resp.ErrorMessage)
		}
	}
	for _, r := range resp.Results {
		if r.ErrorCode != 0 {
			failures[r.Feature] = errorText(r.ErrorCode, r.ErrorMessage)
		}
	}
	out := cmd.OutOrStdout()
	for _, name := range order {
		level := levels[name]
		if msg, failed := failures[name]; failed {
			helper := "Could not "
			if dryRun {
				helper = "Can not "
			}
			what := fmt.Sprintf("%s %s to %d", op, name, level)
			if op == "disable" {
				what = "disable " + name
			}
			fmt.Fprintf(out, "%s%s. %s\n", helper, what, msg)
			continue
		}
		verb := " was "
		if dryRun {
			verb = " can be "
		}
		what := fmt.Sprintf("%sd to %d.", op, level)
		if op == "disable" {
			what = "disabled."
		}
		fmt.Fprintf(out, "%s%s%s\n", name, verb, what)
	}
	if len(failures) > 0 {
		return fmt.Errorf("%d out of %d operation(s) failed", len(failures), len(order))
	}
	return nil
}

// errorText is a Kafka error's message, or its code's name when it has
// none.
func errorText(code int16, msg *string) string {
	if msg != nil && *msg != "" {
		return *msg
	}
	if err := kerr.ErrorForCode(code); err != nil {
		return err.Error()
	}
	return fmt.Sprintf("error code %d", code)
}

func newFeatureVersionMapping() *cobra.Command {
	var releaseVersion string
	cmd := &cobra.Command{
		Use:   "version-mapping",
		Short: "Print the feature levels a release version stands for (what storage format and upgrade --release-version set)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			mv := metadata.LatestMetadataVersion
			if releaseVersion != "" {
				var ok bool
				if mv, ok = metadata.ParseMetadataVersion(releaseVersion); !ok {
					return fmt.Errorf("unknown release version '%s'; supported versions are %s to %s", releaseVersion,
						metadata.FeatureLevelString(metadata.MetadataVersionFeature, metadata.MinMetadataVersion),
						metadata.FeatureLevelString(metadata.MetadataVersionFeature, metadata.LatestMetadataVersion))
				}
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "metadata.version=%d (%s)\n", mv, metadata.FeatureLevelString(metadata.MetadataVersionFeature, mv))
			for _, f := range metadata.SupportedFeatures()[1:] {
				fmt.Fprintf(out, "%s=%d\n", f.Name, f.DefaultLevel(mv))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&releaseVersion, "release-version", "",
		"the release `VERSION`, e.g. 3.9-IV0 or 3.9 (default the latest, "+metadata.FeatureLevelString(metadata.MetadataVersionFeature, metadata.LatestMetadataVersion)+")")
	return cmd
}
