package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// NewGroupCommand returns `group list|describe|delete|reset-offsets`,
// Gregor's kafka-consumer-groups.
func NewGroupCommand() *cobra.Command {
	conn := &connFlags{}
	cmd := &cobra.Command{
		Use:   "group",
		Short: "List, describe (with lag), delete consumer groups and reset their offsets (like kafka-consumer-groups)",
	}
	conn.register(cmd, cmd.PersistentFlags())
	cmd.AddCommand(newGroupList(conn), newGroupDescribe(conn), newGroupDelete(conn), newGroupResetOffsets(conn))
	return cmd
}

func groupArgs(args, flagGroups []string) []string {
	return topicArgs(args, flagGroups) // same de-duplicating merge
}

// groupErr names the group in Kafka's group errors.
func groupErr(group string, err error) error {
	if errors.Is(err, kerr.GroupIDNotFound) {
		return fmt.Errorf("consumer group %q does not exist", group)
	}
	return fmt.Errorf("consumer group %q: %w", group, err)
}

// stateFilter is --state's value as ListGroups' state filter: none for
// every state ("all", or the flag given without a value).
func stateFilter(states string) []string {
	var filter []string
	for _, s := range strings.Split(states, ",") {
		if s = strings.TrimSpace(s); s != "" && s != "all" {
			filter = append(filter, s)
		}
	}
	return filter
}

// printGroups prints listed groups' ids, with their states when --state
// was given.
func printGroups(cmd *cobra.Command, groups kadm.ListedGroups) error {
	out := cmd.OutOrStdout()
	if !cmd.Flags().Changed("state") {
		for _, g := range groups.Sorted() {
			fmt.Fprintln(out, g.Group)
		}
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tSTATE")
	for _, g := range groups.Sorted() {
		fmt.Fprintf(tw, "%s\t%s\n", g.Group, g.State)
	}
	return tw.Flush()
}

func newGroupList(conn *connFlags) *cobra.Command {
	var states string
	cmd := &cobra.Command{
		Use:   "list [--state[=STATE,...]]",
		Short: "List consumer group ids; --state adds each group's state (and filters by the states given)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return conn.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				groups, err := adm.ListGroups(ctx, stateFilter(states)...)
				if err != nil {
					return fmt.Errorf("list groups: %w", err)
				}
				return printGroups(cmd, groups)
			})
		},
	}
	cmd.Flags().StringVar(&states, "state", "", "show states; with a value, only groups in these states (Stable, Empty, ...)")
	cmd.Flags().Lookup("state").NoOptDefVal = "all"
	return cmd
}

func newGroupDelete(conn *connFlags) *cobra.Command {
	var groups []string
	cmd := &cobra.Command{
		Use:   "delete GROUP...",
		Short: "Delete consumer groups that have no active members, with their committed offsets",
		RunE: func(cmd *cobra.Command, args []string) error {
			names := groupArgs(args, groups)
			if len(names) == 0 {
				return errors.New("no group given (as an argument or with --group)")
			}
			return conn.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				resps, err := adm.DeleteGroups(ctx, names...)
				if err != nil {
					return fmt.Errorf("delete groups: %w", err)
				}
				quoted := make([]string, len(names))
				for i, name := range names {
					r, ok := resps[name]
					if !ok {
						return fmt.Errorf("delete group %q: no answer", name)
					}
					if r.Err != nil {
						return groupErr(name, r.Err)
					}
					quoted[i] = "'" + name + "'"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Deletion of requested consumer groups (%s) was successful.\n", strings.Join(quoted, ", "))
				return nil
			})
		},
	}
	cmd.Flags().StringArrayVar(&groups, "group", nil, "group to delete (repeatable)")
	return cmd
}
