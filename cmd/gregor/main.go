// Command gregor is the Gregor binary: a Kafka-compatible broker and
// controller, and the tools to run it.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"gregor/internal/cli"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "gregor:", err)
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "gregor",
		Short:         "Gregor: Apache Kafka's design in one Go binary",
		Version:       version(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// kafka-topics --list habits: `gregor topic --list` names `gregor topic list`.
	root.SetFlagErrorFunc(cli.HintFlagError)
	root.AddCommand(newServerCommand())
	root.AddCommand(newToolCommands()...)
	root.AddCommand(newStorageCommand())
	return root
}
