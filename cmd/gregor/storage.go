package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"gregor/internal/auth/sasl"
	"gregor/internal/config"
	"gregor/internal/log"
	"gregor/internal/metadata"
	"gregor/internal/raft"
	"gregor/internal/server"
)

// newStorageCommand is kafka-storage.sh: format a node's directories with
// the cluster id every node of the cluster shares.
func newStorageCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "storage",
		Short: "Format storage directories (as kafka-storage.sh)",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "random-uuid",
		Short: "Print a new random cluster id",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), server.RandomUUID())
			return nil
		},
	})
	var (
		clusterID, configFile string
		overrides, addScram   []string
		features              []string
		releaseVersion        string
		ignoreFormatted       bool
		standalone            bool
	)
	format := &cobra.Command{
		Use:   "format --cluster-id ID --config FILE",
		Short: "Write meta.properties into log.dirs and metadata.log.dir, and the bootstrap metadata",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			props, err := loadProperties(configFile, overrides)
			if err != nil {
				return err
			}
			cfg, warnings, err := config.Load(props)
			if err != nil {
				return err
			}
			for _, w := range warnings {
				fmt.Fprintln(cmd.ErrOrStderr(), "warning:", w)
			}
			if standalone {
				if err := checkStandalone(cfg); err != nil {
					return err
				}
			}
			bootstrap, err := bootstrapRecords(releaseVersion, features, addScram)
			if err != nil {
				return err
			}
			if err := server.ValidateClusterID(clusterID); err != nil {
				return err
			}
			if err := writeBootstrap(cfg.MetadataLogDir, bootstrap); err != nil {
				return err
			}
			dirs := slices.Clone(cfg.LogDirs)
			if !slices.Contains(dirs, cfg.MetadataLogDir) {
				dirs = append(dirs, cfg.MetadataLogDir)
			}
			formatted, err := server.Format(dirs, cfg.NodeID, clusterID, ignoreFormatted)
			for _, d := range formatted {
				fmt.Fprintf(cmd.OutOrStdout(), "Formatting %s with cluster.id %s and node.id %d\n", d, clusterID, cfg.NodeID)
			}
			if err == nil && standalone {
				v := cfg.ControllerQuorumVoters[0]
				fmt.Fprintf(cmd.OutOrStdout(), "Node %d at %s is the only voter of the metadata quorum\n", v.ID, v.Addr())
			}
			return err
		},
	}
	// A back-quoted word in a usage string is pflag's name for the value.
	format.Flags().StringVarP(&clusterID, "cluster-id", "t", "", "the cluster `ID` (from gregor storage random-uuid), the same on every node")
	format.Flags().StringVarP(&configFile, "config", "c", "", "the node's server.properties")
	format.Flags().StringArrayVar(&overrides, "override", nil, "a config override key=value (repeatable)")
	format.Flags().BoolVarP(&ignoreFormatted, "ignore-formatted", "g", false, "skip directories already formatted with the same ids")
	format.Flags().StringArrayVarP(&addScram, "add-scram", "S", nil,
		"a SCRAM credential for the new cluster (repeatable), e.g. 'SCRAM-SHA-256=[name=alice,password=alice-secret]' or\n"+
			"'SCRAM-SHA-512=[name=alice,iterations=8192,salt=\"N3E=\",saltedpassword=\"YCE=\"]'")
	format.Flags().BoolVarP(&standalone, "standalone", "s", false,
		"format a controller as the only voter of its metadata quorum (Kafka 4.0's single-node quorum); the config must name no other voter")
	format.Flags().StringVarP(&releaseVersion, "release-version", "r", "",
		"the release `VERSION` whose feature levels the cluster starts with, e.g. 3.9-IV0 (default "+latestRelease()+"; see gregor feature version-mapping)")
	format.Flags().StringArrayVarP(&features, "feature", "f", nil,
		"a feature level for the new cluster, `NAME=LEVEL` (repeatable), e.g. share.version=0")
	format.MarkFlagRequired("cluster-id")
	cmd.AddCommand(format)
	return cmd
}

// checkStandalone is `storage format --standalone`: in Kafka 4.0 it starts
// a dynamic (KIP-853) quorum with this controller as its only voter.
// Gregor's quorum is static, always the voters its configuration resolves
// (controller.quorum.voters, or for a controller given neither voters nor
// more than its own bootstrap server, itself alone), so --standalone holds
// only where that set is exactly this node, and fails naming the setting
// that makes it otherwise.
func checkStandalone(cfg *config.Broker) error {
	if !cfg.HasRole("controller") {
		return fmt.Errorf("--standalone formats a controller as the only voter of its quorum, but process.roles=%s has no controller role",
			strings.Join(cfg.ProcessRoles, ","))
	}
	voters := cfg.ControllerQuorumVoters
	if len(voters) == 1 && voters[0].ID == cfg.NodeID {
		return nil
	}
	names := make([]string, len(voters))
	for i, v := range voters {
		names[i] = v.String()
	}
	return fmt.Errorf("--standalone makes node %d the only voter, but controller.quorum.voters=%s; Gregor's quorum is static: "+
		"format each node without --standalone, with the same controller.quorum.voters", cfg.NodeID, strings.Join(names, ","))
}

// latestRelease is the release name of the latest metadata.version.
func latestRelease() string {
	name, _ := metadata.MetadataVersionName(metadata.LatestMetadataVersion)
	return name
}

// bootstrapRecords is the metadata a new cluster starts with, as
// kafka-storage's Formatter builds it: the feature levels (metadata.version
// from --release-version or --feature metadata.version=N, else the latest;
// every other feature from --feature, else its default at that
// metadata.version), then a UserScramCredentialRecord per --add-scram.
func bootstrapRecords(releaseVersion string, features, addScram []string) ([]metadata.Record, error) {
	levels, err := formatFeatureLevels(releaseVersion, features)
	if err != nil {
		return nil, err
	}
	records := metadata.FeatureLevelRecords(levels)
	for _, arg := range addScram {
		spec, err := sasl.ParseScramSpec(arg)
		if err != nil {
			return nil, fmt.Errorf("--add-scram: %w", err)
		}
		cred, err := spec.Credential()
		if err != nil {
			return nil, fmt.Errorf("--add-scram: %w", err)
		}
		records = append(records, metadata.NewUserScramCredentialRecord(spec.User, spec.Mechanism.Type, cred))
	}
	return records, nil
}

// writeBootstrap writes bootstrap.checkpoint into metadata.log.dir unless
// that is formatted already (then the cluster has started, or will, from
// the file it has). It goes before meta.properties, so this command never
// leaves a formatted metadata.log.dir without it (one formatted by an
// older Gregor has none; the controller then starts from its defaults).
func writeBootstrap(metadataLogDir string, records []metadata.Record) error {
	_, err := log.ReadMetaProperties(metadataLogDir)
	if err == nil {
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read meta.properties in %s: %w", metadataLogDir, err)
	}
	if err := os.MkdirAll(metadataLogDir, 0o755); err != nil {
		return fmt.Errorf("create metadata log dir: %w", err)
	}
	return raft.WriteBootstrapCheckpoint(metadataLogDir, records)
}

// formatFeatureLevels is Kafka's Formatter.calculateEffectiveFeatureLevels:
// the levels a new cluster starts with, checked as Kafka checks them.
func formatFeatureLevels(releaseVersion string, features []string) (map[string]int16, error) {
	given := map[string]int16{}
	for _, f := range features {
		name, level, err := metadata.ParseFeatureLevel(f)
		if err != nil {
			return nil, fmt.Errorf("--feature: %w", err)
		}
		given[name] = level
	}
	mv := metadata.LatestMetadataVersion
	if level, ok := given[metadata.MetadataVersionFeature]; ok {
		if releaseVersion != "" {
			return nil, fmt.Errorf("use --release-version instead of --feature %s=X to avoid ambiguity", metadata.MetadataVersionFeature)
		}
		if _, known := metadata.MetadataVersionName(level); !known {
			return nil, fmt.Errorf("unknown metadata.version %d; supported: %d (%s) to %d (%s)", level,
				metadata.MinMetadataVersion, metadata.FeatureLevelString(metadata.MetadataVersionFeature, metadata.MinMetadataVersion),
				metadata.LatestMetadataVersion, latestRelease())
		}
		mv = level
	} else if releaseVersion != "" {
		level, ok := metadata.ParseMetadataVersion(releaseVersion)
		if !ok {
			return nil, fmt.Errorf("unknown release version %q; supported: %s to %s", releaseVersion,
				metadata.FeatureLevelString(metadata.MetadataVersionFeature, metadata.MinMetadataVersion), latestRelease())
		}
		mv = level
	}
	levels := metadata.DefaultFeatureLevels(mv)
	for name, level := range given {
		if name == metadata.MetadataVersionFeature {
			continue
		}
		spec, ok := metadata.LookupFeature(name)
		if !ok {
			var names []string
			for _, f := range metadata.SupportedFeatures()[1:] {
				names = append(names, f.Name)
			}
			return nil, fmt.Errorf("unsupported feature: %s. Supported features are: %s", name, strings.Join(names, ", "))
		}
		if level < spec.Min || level > spec.Max {
			return nil, fmt.Errorf("no feature %s with level %d (supported: %d to %d)", name, level, spec.Min, spec.Max)
		}
		levels[name] = level
	}
	for name, level := range levels {
		if spec, ok := metadata.LookupFeature(name); ok {
			if err := metadata.ValidateFeatureLevel(spec, level, levels); err != nil {
				return nil, err
			}
		}
	}
	return levels, nil
}
