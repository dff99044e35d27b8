package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"

	"gregor/internal/offsetreset"
)

// resetFlags are kafka-consumer-groups --reset-offsets' options.
type resetFlags struct {
	groups     []string
	topics     []string
	allTopics  bool
	toEarliest bool
	toLatest   bool
	toOffset   int64
	toDatetime string
	shiftBy    int64
	execute    bool
	dryRun     bool
}

func newGroupResetOffsets(conn *connFlags) *cobra.Command {
	f := &resetFlags{}
	cmd := &cobra.Command{
		Use:   "reset-offsets GROUP (--topic T[:P,P] | --all-topics) (--to-earliest | --to-latest | --to-offset N | --to-datetime T | --shift-by N) [--execute]",
		Short: "Set an inactive group's committed offsets; shows the plan unless --execute",
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, conn, args)
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVar(&f.groups, "group", nil, "the group")
	fs.StringArrayVar(&f.topics, "topic", nil, "topic, or topic:0,1 for some partitions (repeatable)")
	fs.BoolVar(&f.allTopics, "all-topics", false, "every topic the group has committed offsets for")
	fs.BoolVar(&f.toEarliest, "to-earliest", false, "reset to the log start offset")
	fs.BoolVar(&f.toLatest, "to-latest", false, "reset to the log end offset")
	fs.Int64Var(&f.toOffset, "to-offset", -1, "reset to this offset (kept within the log's start and end)")
	fs.StringVar(&f.toDatetime, "to-datetime", "", "reset to the first offset at or after this time (YYYY-MM-DDTHH:mm:SS.sss, RFC 3339, or ms)")
	fs.Int64Var(&f.shiftBy, "shift-by", 0, "move the committed offset by N (negative: back)")
	fs.BoolVar(&f.execute, "execute", false, "commit the new offsets")
	fs.BoolVar(&f.dryRun, "dry-run", false, "only show the new offsets (the default)")
	return cmd
}

func (f *resetFlags) target(cmd *cobra.Command) (offsetreset.Spec, error) {
	var chosen []offsetreset.Target
	if f.toEarliest {
		chosen = append(chosen, offsetreset.Earliest)
	}
	if f.toLatest {
		chosen = append(chosen, offsetreset.Latest)
	}
	if cmd.Flags().Changed("to-offset") {
		if f.toOffset < 0 {
			return offsetreset.Spec{}, fmt.Errorf("--to-offset must not be negative, got %d", f.toOffset)
		}
		chosen = append(chosen, offsetreset.Offset)
	}
	var ms int64
	if f.toDatetime != "" {
		var err error
		if ms, err = parseTime(f.toDatetime); err != nil {
			return offsetreset.Spec{}, fmt.Errorf("--to-datetime: %w", err)
		}
		chosen = append(chosen, offsetreset.Datetime)
	}
	if cmd.Flags().Changed("shift-by") {
		chosen = append(chosen, offsetreset.Shift)
	}
	if len(chosen) != 1 {
		return offsetreset.Spec{}, errors.New("give exactly one of --to-earliest, --to-latest, --to-offset, --to-datetime, --shift-by")
	}
	return offsetreset.Spec{Target: chosen[0], Offset: f.toOffset, Millis: ms, Shift: f.shiftBy}, nil
}

// parseTopicPartitions reads "topic" or "topic:0,1,2".
func parseTopicPartitions(s string) (string, []int32, error) {
	topic, parts, ok := strings.Cut(s, ":")
	if topic == "" {
		return "", nil, fmt.Errorf("--topic %q: empty topic", s)
	}
	if !ok {
		return topic, nil, nil
	}
	var ps []int32
	for _, p := range strings.Split(parts, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		if err != nil || n < 0 {
			return "", nil, fmt.Errorf("--topic %q: %q is not a partition number", s, p)
		}
		ps = append(ps, int32(n))
	}
	return topic, ps, nil
}

func (f *resetFlags) run(cmd *cobra.Command, conn *connFlags, args []string) error {
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
	spec, err := f.target(cmd)
	if err != nil {
		return err
	}
	return conn.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {

		if err := offsetreset.CheckInactive(ctx, adm, group); err != nil {
			return err
		}
		committed, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return groupErr(group, err)
		}
		set, err := f.partitions(ctx, adm, committed)
		if err != nil {
			return err
		}
		plan, err := offsetreset.Plan(ctx, adm, set, committed, spec)
		if err != nil {
			return err
		}

		out := cmd.OutOrStdout()
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITION\tNEW-OFFSET")
		for _, o := range plan.Sorted() {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", group, o.Topic, o.Partition, o.At)
		}
		tw.Flush()
		if !f.execute {
			if !f.dryRun {
				fmt.Fprintln(cmd.ErrOrStderr(), "Dry run: no offsets were changed; add --execute to commit them.")
			}
			return nil
		}
		resps, err := adm.CommitOffsets(ctx, group, plan)
		if err == nil {
			err = resps.Error()
		}
		if err != nil {
			return fmt.Errorf("commit offsets of group %q: %w", group, err)
		}
		return nil
	})
}

// partitions are the partitions to reset: the topics given (all their
// partitions unless listed) or every topic with a commit.
func (f *resetFlags) partitions(ctx context.Context, adm *kadm.Client, committed kadm.OffsetResponses) (kadm.TopicsSet, error) {
	set := kadm.TopicsSet{}
	if f.allTopics {
		committed.Each(func(o kadm.OffsetResponse) {
			if o.Err == nil && o.At >= 0 {
				set.Add(o.Topic, o.Partition)
			}
		})
		if len(set) == 0 {
			return nil, errors.New("the group has no committed offsets; name topics with --topic")
		}
		return set, nil
	}
	wanted := map[string][]int32{}
	var topics []string
	for _, s := range f.topics {
		t, ps, err := parseTopicPartitions(s)
		if err != nil {
			return nil, err
		}
		if _, seen := wanted[t]; !seen {
			topics = append(topics, t)
		}
		wanted[t] = append(wanted[t], ps...)
	}
	md, err := adm.Metadata(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	for _, t := range topics {
		td, ok := md.Topics[t]
		if !ok || td.Err != nil {
			return nil, topicErr(t, td.Err)
		}
		if len(wanted[t]) == 0 {
			for p := range td.Partitions {
				set.Add(t, p)
			}
			continue
		}
		for _, p := range wanted[t] {
			if _, ok := td.Partitions[p]; !ok {
				return nil, fmt.Errorf("topic %q has no partition %d", t, p)
			}
			set.Add(t, p)
		}
	}
	return set, nil
}
