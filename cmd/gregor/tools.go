package main

import (
	"github.com/spf13/cobra"

	"gregor/internal/cli"
)

// newToolCommands returns the operator commands: topic, produce, consume,
// group, config and cluster (package internal/cli).
func newToolCommands() []*cobra.Command { return cli.Commands() }
