package main

import (
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"gregor/internal/config"
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
		overrides             []string
		ignoreFormatted       bool
	)
	format := &cobra.Command{
		Use:   "format --cluster-id ID --config FILE",
		Short: "Write meta.properties into log.dirs and metadata.log.dir",
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
			dirs := slices.Clone(cfg.LogDirs)
			if !slices.Contains(dirs, cfg.MetadataLogDir) {
				dirs = append(dirs, cfg.MetadataLogDir)
			}
			formatted, err := server.Format(dirs, cfg.NodeID, clusterID, ignoreFormatted)
			for _, d := range formatted {
				fmt.Fprintf(cmd.OutOrStdout(), "Formatting %s with cluster.id %s and node.id %d\n", d, clusterID, cfg.NodeID)
			}
			return err
		},
	}
	format.Flags().StringVarP(&clusterID, "cluster-id", "t", "", "the cluster id (from `gregor storage random-uuid`), the same on every node")
	format.Flags().StringVarP(&configFile, "config", "c", "", "the node's server.properties")
	format.Flags().StringArrayVar(&overrides, "override", nil, "a config override key=value (repeatable)")
	format.Flags().BoolVarP(&ignoreFormatted, "ignore-formatted", "g", false, "skip directories already formatted with the same ids")
	format.MarkFlagRequired("cluster-id")
	cmd.AddCommand(format)
	return cmd
}
