package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/internal/offsetreset"
)

// NewShareGroupCommand returns `share-group
// list|describe|reset-offsets|delete|delete-offsets`, Gregor's
// kafka-share-groups (KIP-932).
func NewShareGroupCommand() *cobra.Command {
	conn := &connFlags{}
	cmd := &cobra.Command{
		Use:   "share-group",
		Short: "List, describe and delete share groups, reset or delete their start offsets (like kafka-share-groups)",
	}
	conn.register(cmd, cmd.PersistentFlags())
	cmd.AddCommand(newShareGroupList(conn), newShareGroupDescribe(conn), newShareGroupResetOffsets(conn),
		newShareGroupDelete(conn), newShareGroupDeleteOffsets(conn))
	return cmd
}

// shareGroupErr names the group in Kafka's group errors.
func shareGroupErr(group string, err error) error {
	if errors.Is(err, kerr.GroupIDNotFound) {
		return fmt.Errorf("share group %q does not exist", group)
	}
	if errors.Is(err, kerr.NonEmptyGroup) {
		return fmt.Errorf("share group %q has active members; stop its consumers first", group)
	}
	return fmt.Errorf("share group %q: %w", group, err)
}

func newShareGroupList(conn *connFlags) *cobra.Command {
	var states string
	cmd := &cobra.Command{
		Use:   "list [--state[=STATE,...]]",
		Short: "List share group ids; --state adds each group's state (and filters by the states given)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return conn.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				groups, err := adm.ListGroupsByType(ctx, []string{"share"}, stateFilter(states)...)
				if err != nil {
					return fmt.Errorf("list share groups: %w", err)
				}
				return printGroups(cmd, groups)
			})
		},
	}
	cmd.Flags().StringVar(&states, "state", "", "show states; with a value, only groups in these states (Stable, Empty)")
	cmd.Flags().Lookup("state").NoOptDefVal = "all"
	return cmd
}

func newShareGroupDescribe(conn *connFlags) *cobra.Command {
	var (
		groups                           []string
		members, state, offsets, verbose bool
	)
	cmd := &cobra.Command{
		Use:   "describe GROUP... [--offsets | --members | --state] [--verbose]",
		Short: "Per partition: the share-partition start offset; or the members, or the state",
		RunE: func(cmd *cobra.Command, args []string) error {
			names := groupArgs(args, groups)
			if len(names) == 0 {
				return errors.New("no group given (as an argument or with --group)")
			}
			n := 0
			for _, b := range []bool{members, state, offsets} {
				if b {
					n++
				}
			}
			if n > 1 {
				return errors.New("give only one of --offsets, --members and --state")
			}
			return conn.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				described, err := adm.DescribeShareGroups(ctx, names...)
				if err != nil {
					return fmt.Errorf("describe share groups: %w", err)
				}
				out := cmd.OutOrStdout()
				for i, name := range names {
					d, ok := described[name]
					if !ok {
						return shareGroupErr(name, kerr.GroupIDNotFound)
					}
					if d.Err != nil {
						return shareGroupErr(name, d.Err)
					}
					if i > 0 {
						fmt.Fprintln(out)
					}
					switch {
					case members:
						err = printShareMembers(out, d, verbose)
					case state:
						err = printShareState(out, d, verbose)
					default:
						err = printShareOffsets(ctx, out, adm, name)
					}
					if err != nil {
						return err
					}
				}
				return nil
			})
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVar(&groups, "group", nil, "group to describe (repeatable)")
	fs.BoolVar(&offsets, "offsets", false, "each share-partition's start offset (the default)")
	fs.BoolVar(&members, "members", false, "the group's members and their assignments")
	fs.BoolVar(&state, "state", false, "the group's coordinator, state and member count")
	fs.BoolVar(&verbose, "verbose", false, "with --members: member epochs; with --state: group and assignment epochs")
	return cmd
}

func printShareOffsets(ctx context.Context, out io.Writer, adm *kadm.Client, group string) error {
	described, err := adm.DescribeShareGroupOffsets(ctx, group)
	if err != nil {
		return fmt.Errorf("describe share group offsets: %w", err)
	}
	d, ok := described[group]
	if !ok {
		return shareGroupErr(group, kerr.GroupIDNotFound)
	}
	if d.Err != nil {
		return shareGroupErr(group, d.Err)
	}
	rows := d.Offsets.Sorted()
	if len(rows) == 0 {
		fmt.Fprintf(out, "Share group '%s' has no share-partition state.\n", group)
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITION\tSTART-OFFSET\tLAG")
	for _, o := range rows {
		if o.Err != nil {
			return fmt.Errorf("start offset of %s-%d: %w", o.Topic, o.Partition, o.Err)
		}
		// LAG: records from the start offset to the end not yet
		// acknowledged or archived (KIP-1226); "-" when not known.
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", group, o.Topic, o.Partition, offsetOrDash(o.StartOffset), offsetOrDash(o.Lag))
	}
	return tw.Flush()
}

func offsetOrDash(o int64) string {
	if o < 0 {
		return "-"
	}
	return strconv.FormatInt(o, 10)
}

func printShareMembers(out io.Writer, d kadm.DescribedShareGroup, verbose bool) error {
	if len(d.Members) == 0 {
		fmt.Fprintf(out, "Share group '%s' has no active members.\n", d.GroupID)
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	head := "GROUP\tCONSUMER-ID\tHOST\tCLIENT-ID\t#PARTITIONS\tASSIGNMENT"
	if verbose {
		head = "GROUP\tCONSUMER-ID\tHOST\tCLIENT-ID\t#PARTITIONS\tMEMBER-EPOCH\tASSIGNMENT"
	}
	fmt.Fprintln(tw, head)
	for _, m := range d.Members {
		var parts []string
		n := 0
		for _, tp := range m.Assignment.Sorted() {
			ps := make([]string, len(tp.Partitions))
			for i, p := range tp.Partitions {
				ps[i] = strconv.Itoa(int(p))
			}
			n += len(ps)
			parts = append(parts, tp.Topic+":"+strings.Join(ps, ","))
		}
		assignment := strings.Join(parts, ";")
		if assignment == "" {
			assignment = "-"
		}
		if verbose {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\n", d.GroupID, m.MemberID, m.ClientHost, m.ClientID, n, m.MemberEpoch, assignment)
		} else {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", d.GroupID, m.MemberID, m.ClientHost, m.ClientID, n, assignment)
		}
	}
	return tw.Flush()
}

func printShareState(out io.Writer, d kadm.DescribedShareGroup, verbose bool) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	coord := fmt.Sprintf("%s:%d (%d)", d.Coordinator.Host, d.Coordinator.Port, d.Coordinator.NodeID)
	if verbose {
		fmt.Fprintln(tw, "GROUP\tCOORDINATOR (ID)\tSTATE\tGROUP-EPOCH\tASSIGNMENT-EPOCH\t#MEMBERS")
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\n", d.GroupID, coord, d.GroupState, d.GroupEpoch, d.AssignmentEpoch, len(d.Members))
	} else {
		fmt.Fprintln(tw, "GROUP\tCOORDINATOR (ID)\tSTATE\t#MEMBERS")
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", d.GroupID, coord, d.GroupState, len(d.Members))
	}
	return tw.Flush()
}

func newShareGroupDelete(conn *connFlags) *cobra.Command {
	var groups []string
	cmd := &cobra.Command{
		Use:   "delete GROUP...",
		Short: "Delete share groups that have no active members, with their share-partition state",
		RunE: func(cmd *cobra.Command, args []string) error {
			names := groupArgs(args, groups)
			if len(names) == 0 {
				return errors.New("no group given (as an argument or with --group)")
			}
			return conn.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				// DeleteGroups deletes any kind of group: refuse ids that
				// are not share groups, as kafka-share-groups does.
				described, err := adm.DescribeShareGroups(ctx, names...)
				if err != nil {
					return fmt.Errorf("describe share groups: %w", err)
				}
				for _, name := range names {
					if d, ok := described[name]; !ok || d.Err != nil {
						err := kerr.GroupIDNotFound
						if ok && !errors.Is(d.Err, kerr.GroupIDNotFound) {
							return shareGroupErr(name, d.Err)
						}
						return shareGroupErr(name, err)
					}
				}
				resps, err := adm.DeleteGroups(ctx, names...)
				if err != nil {
					return fmt.Errorf("delete share groups: %w", err)
				}
				quoted := make([]string, len(names))
				for i, name := range names {
					r, ok := resps[name]
					if !ok {
						return fmt.Errorf("delete share group %q: no answer", name)
					}
					if r.Err != nil {
						return shareGroupErr(name, r.Err)
					}
					quoted[i] = "'" + name + "'"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Deletion of requested share groups (%s) was successful.\n", strings.Join(quoted, ", "))
				return nil
			})
		},
	}
	cmd.Flags().StringArrayVar(&groups, "group", nil, "group to delete (repeatable)")
	return cmd
}

func newShareGroupDeleteOffsets(conn *connFlags) *cobra.Command {
	var (
		groups, topics []string
	)
	cmd := &cobra.Command{
		Use:   "delete-offsets GROUP --topic T...",
		Short: "Delete an inactive share group's state of some topics (its consumers then start from share.auto.offset.reset)",
		RunE: func(cmd *cobra.Command, args []string) error {
			names := groupArgs(args, groups)
			if len(names) != 1 {
				return fmt.Errorf("one group expected (as an argument or with --group), got %d", len(names))
			}
			group := names[0]
			ts := topicArgs(nil, topics)
			if len(ts) == 0 {
				return errors.New("no topic given (with --topic)")
			}
			return conn.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				resps, err := adm.DeleteShareGroupOffsets(ctx, group, ts...)
				if err != nil {
					return shareGroupErr(group, err)
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "TOPIC\tSTATUS")
				var first error
				for _, t := range ts {
					status := "Successful"
					if err, ok := resps.Lookup(t); !ok {
						status = "Error: no answer"
					} else if err != nil {
						status = "Error: " + err.Error()
						if first == nil {
							first = fmt.Errorf("delete share group %q offsets of topic %q: %w", group, t, err)
						}
					}
					fmt.Fprintf(tw, "%s\t%s\n", t, status)
				}
				tw.Flush()
				return first
			})
		},
	}
	cmd.Flags().StringArrayVar(&groups, "group", nil, "the group")
	cmd.Flags().StringArrayVar(&topics, "topic", nil, "topic whose state to delete (repeatable)")
	return cmd
}

// shareResetFlags are kafka-share-groups --reset-offsets' options.
type shareResetFlags struct {
	groups     []string
	topics     []string
	allTopics  bool
	toEarliest bool
	toLatest   bool
	toDatetime string
	execute    bool
	dryRun     bool
}

func newShareGroupResetOffsets(conn *connFlags) *cobra.Command {
	f := &shareResetFlags{}
	cmd := &cobra.Command{
		Use:   "reset-offsets GROUP (--topic T[:P,P] | --all-topics) (--to-earliest | --to-latest | --to-datetime T) [--execute]",
		Short: "Set an inactive share group's start offsets; shows the plan unless --execute",
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, conn, args)
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVar(&f.groups, "group", nil, "the group")
	fs.StringArrayVar(&f.topics, "topic", nil, "topic, or topic:0,1 for some partitions (repeatable)")
	fs.BoolVar(&f.allTopics, "all-topics", false, "every topic the group has share-partition state for")
	fs.BoolVar(&f.toEarliest, "to-earliest", false, "reset to the log start offset")
	fs.BoolVar(&f.toLatest, "to-latest", false, "reset to the log end offset")
	fs.StringVar(&f.toDatetime, "to-datetime", "", "reset to the first offset at or after this time (YYYY-MM-DDTHH:mm:SS.sss, RFC 3339, or ms)")
	fs.BoolVar(&f.execute, "execute", false, "set the new start offsets")
	fs.BoolVar(&f.dryRun, "dry-run", false, "only show the new start offsets (the default)")
	return cmd
}

func (f *shareResetFlags) target() (offsetreset.Spec, error) {
	var chosen []offsetreset.Target
	if f.toEarliest {
		chosen = append(chosen, offsetreset.Earliest)
	}
	if f.toLatest {
		chosen = append(chosen, offsetreset.Latest)
	}
	var ms int64
	if f.toDatetime != "" {
		var err error
		if ms, err = parseTime(f.toDatetime); err != nil {
			return offsetreset.Spec{}, fmt.Errorf("--to-datetime: %w", err)
		}
		chosen = append(chosen, offsetreset.Datetime)
	}
	if len(chosen) != 1 {
		return offsetreset.Spec{}, errors.New("give exactly one of --to-earliest, --to-latest, --to-datetime")
	}
	return offsetreset.Spec{Target: chosen[0], Millis: ms}, nil
}

func (f *shareResetFlags) run(cmd *cobra.Command, conn *connFlags, args []string) error {
	groups := groupArgs(args, f.groups)
	if len(groups) != 1 {
		return fmt.Errorf("one group expected (as an argument or with --group), got %d", len(groups))
	}
	group := groups[0]
	if f.allTopics == (len(f.topics) > 0) {
		return errors.New("give --topic or --all-topics")
	}
	if f.execute && f.dryRun {
		return errors.New("give only one of --execute and --dry-run")
	}
	spec, err := f.target()
	if err != nil {
		return err
	}
	return conn.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
		described, err := adm.DescribeShareGroups(ctx, group)
		if err != nil {
			return fmt.Errorf("describe share group: %w", err)
		}
		// A group that does not exist yet is made by the reset, as Kafka's
		// AlterShareGroupOffsets does; one with members is refused.
		d, ok := described[group]
		exists := ok && d.Err == nil
		switch {
		case ok && d.Err != nil && !errors.Is(d.Err, kerr.GroupIDNotFound):
			return shareGroupErr(group, d.Err)
		case exists && len(d.Members) > 0:
			return fmt.Errorf("share group %q has active members (state %s); stop its consumers first", group, d.GroupState)
		}
		var set kadm.TopicsSet
		if f.allTopics {
			if !exists {
				return shareGroupErr(group, kerr.GroupIDNotFound)
			}
			if set, err = shareStateTopics(ctx, adm, group); err != nil {
				return err
			}
		} else {
			// --topic parsing and checks are the consumer groups' ones.
			rf := &resetFlags{topics: f.topics}
			if set, err = rf.partitions(ctx, adm, nil); err != nil {
				return err
			}
		}
		plan, err := offsetreset.Plan(ctx, adm, set, nil, spec)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITION\tNEW-START-OFFSET")
		for _, o := range plan.Sorted() {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", group, o.Topic, o.Partition, o.At)
		}
		tw.Flush()
		if !f.execute {
			if !f.dryRun {
				fmt.Fprintln(cmd.ErrOrStderr(), "Dry run: no offsets were changed; add --execute to set them.")
			}
			return nil
		}
		resps, err := adm.AlterShareGroupOffsets(ctx, group, plan)
		if err == nil {
			err = resps.Error()
		}
		if err != nil {
			return fmt.Errorf("reset start offsets of share group %q: %w", group, err)
		}
		return nil
	})
}

// shareStateTopics are the partitions a share group has state for.
func shareStateTopics(ctx context.Context, adm *kadm.Client, group string) (kadm.TopicsSet, error) {
	described, err := adm.DescribeShareGroupOffsets(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("describe share group offsets: %w", err)
	}
	d, ok := described[group]
	if !ok {
		return nil, shareGroupErr(group, kerr.GroupIDNotFound)
	}
	if d.Err != nil {
		return nil, shareGroupErr(group, d.Err)
	}
	set := kadm.TopicsSet{}
	d.Offsets.Each(func(o kadm.ShareOffset) {
		if o.Err == nil {
			set.Add(o.Topic, o.Partition)
		}
	})
	if len(set) == 0 {
		return nil, errors.New("the share group has no share-partition state; name topics with --topic")
	}
	return set, nil
}
