// Command gregor is the Gregor binary: a Kafka-compatible broker and
// controller, and the tools to run it.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	root := &cobra.Command{
		Use:           "gregor",
		Short:         "Gregor: Apache Kafka's design in one Go binary",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newServerCommand())
	root.AddCommand(newToolCommands()...)
	root.AddCommand(newStorageCommand())
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "gregor:", err)
		os.Exit(1)
	}
}
