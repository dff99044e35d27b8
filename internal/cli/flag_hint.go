package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// HintFlagError is the flag error function of the gregor command tree.
// Kafka's tools take their action as a flag (kafka-topics --list,
// kafka-consumer-groups --describe, kafka-acls --add) where gregor has a
// subcommand, so an unknown flag that names a subcommand of the command it
// was given to says which command was meant; other flag errors are
// returned as they are.
func HintFlagError(cmd *cobra.Command, err error) error {
	var unknown *pflag.NotExistError
	if !errors.As(err, &unknown) || unknown.GetSpecifiedName() == "" {
		return err
	}
	name := unknown.GetSpecifiedName()
	for _, sub := range cmd.Commands() {
		if sub.Name() == name || sub.HasAlias(name) {
			return fmt.Errorf("%w (did you mean `%s`?)", err, sub.CommandPath())
		}
	}
	return err
}
