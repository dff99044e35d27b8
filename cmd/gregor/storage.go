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
			bootstrap, err := bootstrapRecords(addScram)
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

// bootstrapRecords is the metadata a new cluster starts with, as
// kafka-storage's Formatter builds it: metadata.version, then a
// UserScramCredentialRecord per --add-scram.
func bootstrapRecords(addScram []string) ([]metadata.Record, error) {
	records := []metadata.Record{&metadata.FeatureLevelRecord{Name: metadata.MetadataVersionFeature, FeatureLevel: metadata.LatestMetadataVersion}}
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
