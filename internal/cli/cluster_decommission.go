package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// `gregor cluster unregister` (kafka-cluster unregister) and `gregor cluster
// decommission` (Gregor's: Kafka has no single command for it; operators
// run kafka-reassign-partitions, wait, stop the broker and unregister it).

func newClusterUnregister(conn *connFlags) *cobra.Command {
	var id int32
	cmd := &cobra.Command{
		Use:   "unregister",
		Short: "Remove a broker's registration (as kafka-cluster unregister)",
		Long: `Remove broker --id from the cluster metadata: it leaves every ISR and
leadership, and no longer counts as a broker. Use it for a broker that is
gone for good; a broker that is still running registers again at its next
heartbeat.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("id") {
				return errors.New("--id is required")
			}
			return conn.withClient(cmd, func(ctx context.Context, cl *kgo.Client) error {
				if err := unregisterBroker(ctx, cl, id); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Broker %d is no longer registered.\n", id)
				return nil
			})
		},
	}
	cmd.Flags().Int32Var(&id, "id", -1, "the id of the broker to unregister")
	return cmd
}

func unregisterBroker(ctx context.Context, cl *kgo.Client, id int32) error {
	req := kmsg.NewPtrUnregisterBrokerRequest()
	req.BrokerID = id
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("unregister broker %d: %w", id, err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return fmt.Errorf("unregister broker %d: %w", id, withBrokerMessage(err, deref(resp.ErrorMessage)))
	}
	return nil
}

// registeredBroker is one registration DescribeCluster reports.
type registeredBroker struct {
	id     int32
	rack   string
	fenced bool
}

// describeBrokers returns every registered broker, fenced ones included.
func describeBrokers(ctx context.Context, cl *kgo.Client) ([]registeredBroker, error) {
	req := kmsg.NewPtrDescribeClusterRequest()
	req.IncludeFencedBrokers = true
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("describe the cluster: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("describe the cluster: %w", withBrokerMessage(err, deref(resp.ErrorMessage)))
	}
	var out []registeredBroker
	for _, b := range resp.Brokers {
		out = append(out, registeredBroker{id: b.NodeID, rack: deref(b.Rack), fenced: b.IsFenced})
	}
	return out, nil
}

// planDecommission moves every replica on broker off to another unfenced
// broker, in place (a replacement of the preferred leader becomes the
// preferred leader). For each partition, in topic and partition order, the
// replacement is a broker that is not already a replica, preferring one in a
// rack none of the partition's other replicas is in (as the controller's
// placement spreads a partition over racks), then the one holding the fewest
// replicas (counting the moves planned so far), then the lowest id.
func planDecommission(current assignment, brokers []registeredBroker, broker int32) (assignment, error) {
	rack := map[int32]string{}
	load := map[int32]int{}
	var candidates []int32
	for _, b := range brokers {
		rack[b.id] = b.rack
		if b.id != broker && !b.fenced {
			candidates = append(candidates, b.id)
			load[b.id] = 0
		}
	}
	for _, replicas := range current {
		for _, r := range replicas {
			if _, ok := load[r]; ok {
				load[r]++
			}
		}
	}
	plan := assignment{}
	for _, tp := range current.sortedPartitions() {
		replicas := current[tp]
		i := slices.Index(replicas, broker)
		if i < 0 {
			continue
		}
		usedRacks := map[string]bool{}
		for _, r := range replicas {
			if r != broker && rack[r] != "" {
				usedRacks[rack[r]] = true
			}
		}
		var options []int32
		for _, c := range candidates {
			if !slices.Contains(replicas, c) {
				options = append(options, c)
			}
		}
		if len(options) == 0 {
			return nil, fmt.Errorf("partition %s has %d replicas and no other live broker can take the one on broker %d",
				tp, len(replicas), broker)
		}
		slices.SortFunc(options, func(a, b int32) int {
			newRackA, newRackB := rack[a] != "" && !usedRacks[rack[a]], rack[b] != "" && !usedRacks[rack[b]]
			if newRackA != newRackB {
				if newRackA {
					return -1
				}
				return 1
			}
			if c := cmp.Compare(load[a], load[b]); c != 0 {
				return c
			}
			return cmp.Compare(a, b)
		})
		target := slices.Clone(replicas)
		target[i] = options[0]
		load[options[0]]++
		plan[tp] = target
	}
	return plan, nil
}

// allPartitions returns the replicas of every partition of every topic,
// internal ones included.
func allPartitions(ctx context.Context, adm *kadm.Client) (assignment, error) {
	md, err := adm.Metadata(ctx)
	if err != nil {
		return nil, fmt.Errorf("describe topics: %w", err)
	}
	out := assignment{}
	for name, td := range md.Topics {
		if td.Err != nil {
			return nil, topicErr(name, td.Err)
		}
		for p, pd := range td.Partitions {
			out[topicPartition{name, p}] = slices.Clone(pd.Replicas)
		}
	}
	return out, nil
}

func newClusterDecommission(conn *connFlags) *cobra.Command {
	var broker int32
	var throttle int64
	var unregister bool
	var waitTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "decommission",
		Short: "Move every replica off a broker, wait until it holds none, then optionally unregister it",
		Long: `Reassign every partition replica on --broker to the other live brokers (the
partition's other replicas stay; the replacement goes to a rack the
partition is not in yet, else to the broker with the fewest replicas), and
wait until the moves are complete: the new replicas caught up and joined
the ISR, and the broker holds no replica. Partitions created on the broker
meanwhile are moved in a further round.

--throttle N limits the moving data to N bytes/s per broker, as
'reassign execute --throttle' does, and removes the throttles at the end.

--unregister then removes the broker's registration, once it is stopped (a
broker that is still running would register again): decommission a live
broker, stop it, then run 'gregor cluster unregister --id N'; or
decommission a dead broker with --unregister in one go.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("broker") {
				return errors.New("--broker is required")
			}
			if waitTimeout <= 0 {
				return fmt.Errorf("--wait-timeout must be positive, got %s", waitTimeout)
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			ctx, cancel := context.WithTimeout(ctx, waitTimeout)
			defer cancel()
			cl, err := conn.client(ctx)
			if err != nil {
				return err
			}
			defer cl.Close()
			adm := kadm.NewClient(cl)
			adm.SetTimeoutMillis(int32(min(conn.timeout.Milliseconds(), 1<<31-1)))
			d := &decommission{cl: cl, adm: adm, broker: broker, throttle: throttle,
				throttled: cmd.Flags().Changed("throttle"), out: cmd.OutOrStdout()}
			if err := d.run(ctx); err != nil {
				if errors.Is(err, context.DeadlineExceeded) {
					return fmt.Errorf("decommission broker %d: not done within --wait-timeout %s (the moves go on; 'gregor reassign list' shows them)", broker, waitTimeout)
				}
				return err
			}
			if unregister {
				return d.unregister(ctx)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.Int32Var(&broker, "broker", -1, "the id of the broker to empty")
	f.Int64Var(&throttle, "throttle", -1, "limit the movement to this many bytes/s per broker")
	f.BoolVar(&unregister, "unregister", false, "unregister the broker once it holds no replica and is stopped")
	f.DurationVar(&waitTimeout, "wait-timeout", 30*time.Minute, "give up waiting for the moves after this long")
	return cmd
}

// decommission is one run of `cluster decommission`.
type decommission struct {
	cl        *kgo.Client
	adm       *kadm.Client
	broker    int32
	throttle  int64
	throttled bool
	out       io.Writer
}

// maxDecommissionRounds bounds the rounds of moves: each round moves what
// the broker held when it started; a later round only finds partitions
// created on the broker during the earlier ones.
const maxDecommissionRounds = 5

func (d *decommission) run(ctx context.Context) error {
	brokers, err := describeBrokers(ctx, d.cl)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(brokers, func(b registeredBroker) bool { return b.id == d.broker }) {
		return fmt.Errorf("broker %d is not registered", d.broker)
	}
	var moved assignment
	for round := 1; ; round++ {
		current, err := allPartitions(ctx, d.adm)
		if err != nil {
			return err
		}
		plan, err := planDecommission(current, brokers, d.broker)
		if err != nil {
			return err
		}
		if len(plan) == 0 {
			break
		}
		if round > maxDecommissionRounds {
			return fmt.Errorf("broker %d still holds %d partitions after %d rounds of moves (topics are being created on it)", d.broker, len(plan), maxDecommissionRounds)
		}
		ongoing, err := listReassignments(ctx, d.cl, plan.sortedPartitions())
		if err != nil {
			return err
		}
		if len(ongoing) > 0 {
			parts := make([]string, 0, len(ongoing))
			for tp := range ongoing {
				parts = append(parts, tp.String())
			}
			slices.Sort(parts)
			return fmt.Errorf("partitions being reassigned already: %v; wait for them ('gregor reassign list') or cancel them", parts)
		}
		fmt.Fprintf(d.out, "Moving %d partition replica%s off broker %d:\n", len(plan), plural(len(plan)), d.broker)
		for _, tp := range plan.sortedPartitions() {
			fmt.Fprintf(d.out, "  %s: %s -> %s\n", tp, joinIDs(current[tp]), joinIDs(plan[tp]))
		}
		if d.throttled {
			if err := setThrottles(ctx, d.adm, moveMap(nil, plan, current), d.throttle); err != nil {
				return err
			}
			fmt.Fprintf(d.out, "The inter-broker throttle limit was set to %d B/s\n", d.throttle)
		}
		if err := alterReassignments(ctx, d.adm, plan, "reassigning"); err != nil {
			return err
		}
		if err := d.wait(ctx, plan); err != nil {
			return err
		}
		if moved == nil {
			moved = assignment{}
		}
		for tp, r := range plan {
			moved[tp] = r
		}
	}
	if d.throttled && moved != nil {
		if err := clearThrottles(ctx, d.adm, moved, d.out); err != nil {
			return err
		}
	}
	fmt.Fprintf(d.out, "Broker %d holds no partition replicas.\n", d.broker)
	return nil
}

// wait polls until no partition of plan is being reassigned and the
// metadata (of the broker the client asks, which may lag the controller)
// shows none of them on the broker, printing progress when it changes.
func (d *decommission) wait(ctx context.Context, plan assignment) error {
	parts := plan.sortedPartitions()
	last := -1
	for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, time.Second) {
		ongoing, err := listReassignments(ctx, d.cl, parts)
		if err != nil {
			return err
		}
		done := len(parts) - len(ongoing)
		if done != last {
			fmt.Fprintf(d.out, "Moved %d of %d\n", done, len(parts))
			last = done
		}
		if len(ongoing) == 0 {
			current, err := currentAssignmentOf(ctx, d.adm, parts)
			if err != nil {
				return err
			}
			if !slices.ContainsFunc(parts, func(tp topicPartition) bool { return slices.Contains(current[tp], d.broker) }) {
				return nil
			}
		}
		if !sleepCtx(ctx, backoff) {
			return ctx.Err()
		}
	}
}

// unregister removes the broker's registration unless it is running (a
// running broker would register again).
func (d *decommission) unregister(ctx context.Context) error {
	brokers, err := describeBrokers(ctx, d.cl)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(brokers, func(b registeredBroker) bool { return b.id == d.broker })
	switch {
	case i < 0:
		fmt.Fprintf(d.out, "Broker %d is not registered.\n", d.broker)
		return nil
	case !brokers[i].fenced:
		return fmt.Errorf("broker %d is still running, so it was not unregistered: stop it, then run 'gregor cluster unregister --id %d'", d.broker, d.broker)
	}
	if err := unregisterBroker(ctx, d.cl, d.broker); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "Broker %d is no longer registered.\n", d.broker)
	return nil
}
