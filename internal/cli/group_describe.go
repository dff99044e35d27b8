package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

func newGroupDescribe(conn *connFlags) *cobra.Command {
	var (
		groups         []string
		members, state bool
	)
	cmd := &cobra.Command{
		Use:   "describe GROUP... [--members | --state]",
		Short: "Per partition: committed offset, end offset, lag and owning member; or the members, or the state",
		RunE: func(cmd *cobra.Command, args []string) error {
			names := groupArgs(args, groups)
			if len(names) == 0 {
				return errors.New("no group given (as an argument or with --group)")
			}
			if members && state {
				return errors.New("give only one of --members and --state")
			}
			return conn.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				lags, err := adm.Lag(ctx, names...)
				if err != nil {
					return fmt.Errorf("describe groups: %w", err)
				}
				out := cmd.OutOrStdout()
				for i, name := range names {
					l, ok := lags[name]
					if !ok {
						return groupErr(name, kerr.GroupIDNotFound)
					}
					if l.DescribeErr != nil {
						return groupErr(name, l.DescribeErr)
					}
					if l.State == "Dead" {
						return groupErr(name, kerr.GroupIDNotFound)
					}
					if l.FetchErr != nil {
						return fmt.Errorf("committed offsets of group %q: %w", name, l.FetchErr)
					}
					v, err := newGroupView(ctx, adm, l)
					if err != nil {
						return err
					}
					if i > 0 {
						fmt.Fprintln(out)
					}
					switch {
					case state:
						v.writeState(out)
					case members:
						v.writeMembers(out)
					default:
						v.writeOffsets(out)
					}
				}
				return nil
			})
		},
	}
	cmd.Flags().StringArrayVar(&groups, "group", nil, "group to describe (repeatable)")
	cmd.Flags().BoolVar(&members, "members", false, "show the members and their assignments")
	cmd.Flags().BoolVar(&state, "state", false, "show the group's coordinator, assignor, state and size")
	return cmd
}

// groupView is one group as describe prints it, for both protocols: the
// classic one (members' assignments inside DescribeGroups) and KIP-848's
// consumer protocol (assignments from ConsumerGroupDescribe).
type groupView struct {
	name, state, assignor string
	coordinator           kadm.BrokerDetail
	members               []memberView
	lag                   kadm.GroupLag
	owner                 map[string]map[int32]*memberView
}

type memberView struct {
	id, host, client string
	assigned         kadm.TopicsSet
}

func newGroupView(ctx context.Context, adm *kadm.Client, l kadm.DescribedGroupLag) (*groupView, error) {
	v := &groupView{name: l.Group, state: l.State, assignor: l.Protocol, coordinator: l.Coordinator, lag: l.Lag}
	for _, m := range l.Members {
		mv := memberView{id: m.MemberID, host: m.ClientHost, client: m.ClientID, assigned: kadm.TopicsSet{}}
		if a, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range a.Topics {
				mv.assigned.Add(t.Topic, t.Partitions...)
			}
		}
		v.members = append(v.members, mv)
	}
	// A KIP-848 group answers ConsumerGroupDescribe; a classic one (or a
	// broker without the API) does not, and keeps the view above.
	if cgs, err := adm.DescribeConsumerGroups(ctx, l.Group); err == nil {
		if cg, ok := cgs[l.Group]; ok && cg.Err == nil {
			v.state, v.assignor, v.coordinator, v.members = cg.State, cg.AssignorName, cg.Coordinator, nil
			for _, m := range cg.Members {
				// Kafka names each assigned topic next to its id; a
				// broker that sends only ids leaves names empty, which
				// cannot be shown (or looked up) and are skipped.
				delete(m.Assignment, "")
				v.members = append(v.members, memberView{id: m.MemberID, host: m.ClientHost, client: m.ClientID, assigned: m.Assignment})
			}
		}
	}
	v.owner = map[string]map[int32]*memberView{}
	var missing []string // owned partitions without a lag row (no commit yet)
	for i := range v.members {
		m := &v.members[i]
		for t, ps := range m.assigned {
			if v.owner[t] == nil {
				v.owner[t] = map[int32]*memberView{}
			}
			for p := range ps {
				v.owner[t][p] = m
				if _, ok := v.lag.Lookup(t, p); !ok {
					missing = append(missing, t)
				}
			}
		}
	}
	if len(missing) > 0 {
		ends, err := adm.ListEndOffsets(ctx, missing...)
		if err != nil {
			return nil, fmt.Errorf("list end offsets: %w", err)
		}
		if v.lag == nil {
			v.lag = kadm.GroupLag{}
		}
		for t, ps := range v.owner {
			for p := range ps {
				if _, ok := v.lag.Lookup(t, p); ok {
					continue
				}
				end, _ := ends.Lookup(t, p)
				if v.lag[t] == nil {
					v.lag[t] = map[int32]kadm.GroupMemberLag{}
				}
				v.lag[t][p] = kadm.GroupMemberLag{Topic: t, Partition: p, Commit: kadm.Offset{At: -1}, End: end, Lag: -1}
			}
		}
	}
	return v, nil
}

func (v *groupView) writeState(out io.Writer) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tCOORDINATOR (ID)\tASSIGNMENT-STRATEGY\tSTATE\t#MEMBERS")
	fmt.Fprintf(tw, "%s\t%s:%d (%d)\t%s\t%s\t%d\n", v.name, v.coordinator.Host, v.coordinator.Port, v.coordinator.NodeID,
		v.assignor, v.state, len(v.members))
	tw.Flush()
}

func (v *groupView) writeMembers(out io.Writer) {
	if len(v.members) == 0 {
		fmt.Fprintf(out, "Consumer group '%s' has no active members.\n", v.name)
		return
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tCONSUMER-ID\tHOST\tCLIENT-ID\t#PARTITIONS\tASSIGNMENT")
	for _, m := range v.members {
		n, assignment := 0, "-"
		if len(m.assigned) > 0 {
			var parts []string
			for _, t := range m.assigned.Sorted() {
				n += len(t.Partitions)
				parts = append(parts, fmt.Sprintf("%s(%s)", t.Topic, joinInt32(t.Partitions)))
			}
			sort.Strings(parts)
			assignment = strings.Join(parts, ",")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", v.name, m.id, m.host, m.client, n, assignment)
	}
	tw.Flush()
}

// writeOffsets prints kafka-consumer-groups --describe's table: every
// partition with a commit or an owner.
func (v *groupView) writeOffsets(out io.Writer) {
	if len(v.members) == 0 {
		fmt.Fprintf(out, "Consumer group '%s' has no active members.\n\n", v.name)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITION\tCURRENT-OFFSET\tLOG-END-OFFSET\tLAG\tCONSUMER-ID\tHOST\tCLIENT-ID")
	for _, ml := range v.lag.Sorted() {
		owner := v.owner[ml.Topic][ml.Partition]
		if ml.Commit.At < 0 && owner == nil {
			continue // neither committed nor owned: not the group's
		}
		current, end, lag := "-", "-", "-"
		if ml.Commit.At >= 0 {
			current = fmt.Sprint(ml.Commit.At)
		}
		if ml.End.Err == nil && ml.End.Offset >= 0 {
			end = fmt.Sprint(ml.End.Offset)
		}
		if ml.Commit.At >= 0 && ml.Lag >= 0 {
			lag = fmt.Sprint(ml.Lag)
		}
		member, host, client := "-", "-", "-"
		if owner != nil {
			member, host, client = owner.id, owner.host, owner.client
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", v.name, ml.Topic, ml.Partition, current, end, lag, member, host, client)
	}
	tw.Flush()
}
