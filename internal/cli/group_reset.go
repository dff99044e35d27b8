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

type resetTarget int

const (
	resetEarliest resetTarget = iota
	resetLatest
	resetOffset
	resetDatetime
	resetShift
)

func (f *resetFlags) target(cmd *cobra.Command) (resetTarget, int64, error) {
	var chosen []resetTarget
	if f.toEarliest {
		chosen = append(chosen, resetEarliest)
	}
	if f.toLatest {
		chosen = append(chosen, resetLatest)
	}
	if cmd.Flags().Changed("to-offset") {
		if f.toOffset < 0 {
			return 0, 0, fmt.Errorf("--to-offset must not be negative, got %d", f.toOffset)
		}
		chosen = append(chosen, resetOffset)
	}
	var ms int64
	if f.toDatetime != "" {
		var err error
		if ms, err = parseTime(f.toDatetime); err != nil {
			return 0, 0, fmt.Errorf("--to-datetime: %w", err)
		}
		chosen = append(chosen, resetDatetime)
	}
	if cmd.Flags().Changed("shift-by") {
		chosen = append(chosen, resetShift)
	}
	if len(chosen) != 1 {
		return 0, 0, errors.New("give exactly one of --to-earliest, --to-latest, --to-offset, --to-datetime, --shift-by")
	}
	return chosen[0], ms, nil
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
	target, ms, err := f.target(cmd)
	if err != nil {
		return err
	}
	return conn.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {

		// Kafka resets only groups without members: a live member would
		// overwrite the new offsets with its next commit.
		state, err := groupState(ctx, adm, group)
		if err != nil {
			return err
		}
		if state != "Empty" && state != "Dead" {
			return fmt.Errorf("offsets can only be reset if group %q is inactive, but its state is %s", group, state)
		}
		committed, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return groupErr(group, err)
		}
		set, err := f.partitions(ctx, adm, committed)
		if err != nil {
			return err
		}
		plan, err := planReset(ctx, adm, set, committed, target, f.toOffset, ms, f.shiftBy)
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

// planReset computes each partition's new offset, kept within the log's
// start and end offsets as kafka-consumer-groups does.
func planReset(ctx context.Context, adm *kadm.Client, set kadm.TopicsSet, committed kadm.OffsetResponses,
	target resetTarget, toOffset, ms, shift int64) (kadm.Offsets, error) {
	topics := set.Topics()
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("list start offsets: %w", err)
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("list end offsets: %w", err)
	}
	var byTime kadm.ListedOffsets
	if target == resetDatetime {
		if byTime, err = adm.ListOffsetsAfterMilli(ctx, ms, topics...); err == nil {
			err = byTime.Error()
		}
		if err != nil {
			return nil, fmt.Errorf("list offsets by time: %w", err)
		}
	}
	plan := kadm.Offsets{}
	for _, tp := range set.Sorted() {
		for _, p := range tp.Partitions {
			start, _ := starts.Lookup(tp.Topic, p)
			end, _ := ends.Lookup(tp.Topic, p)
			var at int64
			switch target {
			case resetEarliest:
				at = start.Offset
			case resetLatest:
				at = end.Offset
			case resetOffset:
				at = toOffset
			case resetDatetime:
				at = end.Offset // no record at or after the time: the end
				if o, ok := byTime.Lookup(tp.Topic, p); ok && o.Offset >= 0 {
					at = o.Offset
				}
			case resetShift:
				c, ok := committed.Lookup(tp.Topic, p)
				if !ok || c.Err != nil || c.At < 0 {
					return nil, fmt.Errorf("--shift-by: no committed offset for %s-%d", tp.Topic, p)
				}
				at = c.At + shift
			}
			at = max(start.Offset, min(at, end.Offset))
			plan.Add(kadm.Offset{Topic: tp.Topic, Partition: p, At: at, LeaderEpoch: -1})
		}
	}
	return plan, nil
}
