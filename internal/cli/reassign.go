package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The replication throttle configs kafka-reassign-partitions sets and
// clears (Kafka's QuotaConfig names).
const (
	leaderThrottledRate       = "leader.replication.throttled.rate"
	followerThrottledRate     = "follower.replication.throttled.rate"
	leaderThrottledReplicas   = "leader.replication.throttled.replicas"
	followerThrottledReplicas = "follower.replication.throttled.replicas"
)

// NewReassignCommand returns `reassign generate|execute|verify|cancel|list`,
// kafka-reassign-partitions.sh's actions with its JSON files and output.
func NewReassignCommand() *cobra.Command {
	conn := &connFlags{}
	cmd := &cobra.Command{
		Use:   "reassign",
		Short: "Move partitions between brokers (as kafka-reassign-partitions)",
	}
	conn.register(cmd, cmd.PersistentFlags())
	cmd.AddCommand(newReassignGenerate(conn), newReassignExecute(conn), newReassignVerify(conn),
		newReassignCancel(conn), newReassignList(conn))
	return cmd
}

// withClients is withClient with an admin client on the same connection,
// its requests timing out with --timeout.
func (c *connFlags) withClients(cmd *cobra.Command, fn func(ctx context.Context, cl *kgo.Client, adm *kadm.Client) error) error {
	return c.withClient(cmd, func(ctx context.Context, cl *kgo.Client) error {
		adm := kadm.NewClient(cl)
		adm.SetTimeoutMillis(int32(min(c.timeout.Milliseconds(), 1<<31-1)))
		return fn(ctx, cl, adm)
	})
}

// loadReassignment reads and checks --reassignment-json-file.
func loadReassignment(path string) (assignment, []topicPartition, error) {
	data, err := readJSONFile("reassignment-json-file", path)
	if err != nil {
		return nil, nil, err
	}
	return parseReassignment(data)
}

func readJSONFile(flag, path string) ([]byte, error) {
	if path == "" {
		return nil, fmt.Errorf("--%s is required", flag)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", flag, err)
	}
	return b, nil
}

func newReassignGenerate(conn *connFlags) *cobra.Command {
	var topicsFile, brokerList string
	var disableRackAware bool
	cmd := &cobra.Command{
		Use:   "generate",
		Short: "Propose an assignment of the topics in --topics-to-move-json-file onto --broker-list",
		Long: `Print the current assignment of the topics and a proposed one that spreads their
replicas over the given brokers, as kafka-reassign-partitions --generate does
(round robin from a random start, rack-aware when the brokers have racks).
Nothing changes in the cluster: save the proposal and pass it to
'reassign execute'.

The topics file: {"version":1,"topics":[{"topic":"orders"}]}`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := readJSONFile("topics-to-move-json-file", topicsFile)
			if err != nil {
				return err
			}
			topics, err := parseTopicsToMove(data)
			if err != nil {
				return err
			}
			if brokerList == "" {
				return errors.New("--broker-list is required")
			}
			brokers, err := parseBrokerList(brokerList)
			if err != nil {
				return err
			}
			return conn.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				current, err := currentAssignment(ctx, adm, topics)
				if err != nil {
					return err
				}
				md, err := adm.BrokerMetadata(ctx)
				if err != nil {
					return fmt.Errorf("describe the cluster: %w", err)
				}
				var placed []placedBroker
				for _, b := range md.Brokers {
					if !slices.Contains(brokers, b.NodeID) {
						continue
					}
					pb := placedBroker{id: b.NodeID}
					if b.Rack != nil && !disableRackAware {
						pb.rack = *b.Rack
					}
					placed = append(placed, pb)
				}
				proposed := assignment{}
				rnd := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
				for _, topic := range topics {
					var parts []int32
					for tp := range current {
						if tp.topic == topic {
							parts = append(parts, tp.partition)
						}
					}
					slices.Sort(parts)
					rf := len(current[topicPartition{topic, parts[0]}])
					placement, err := assignReplicas(placed, len(parts), rf, rnd)
					if err != nil {
						return fmt.Errorf("topic %q: %w", topic, err)
					}
					for p, replicas := range placement {
						proposed[topicPartition{topic, p}] = replicas
					}
				}
				out := cmd.OutOrStdout()
				fmt.Fprintf(out, "Current partition replica assignment\n%s\n\n", formatAssignment(current))
				fmt.Fprintf(out, "Proposed partition reassignment configuration\n%s\n", formatAssignment(proposed))
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&topicsFile, "topics-to-move-json-file", "", "JSON file of the topics to move")
	cmd.Flags().StringVar(&brokerList, "broker-list", "", "the brokers to place the replicas on, as 1,2,3")
	cmd.Flags().BoolVar(&disableRackAware, "disable-rack-aware", false, "place replicas without regard to the brokers' racks")
	return cmd
}

// currentAssignment returns every partition's replicas of the topics (an
// error for a topic that does not exist).
func currentAssignment(ctx context.Context, adm *kadm.Client, topics []string) (assignment, error) {
	md, err := adm.Metadata(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("describe topics: %w", err)
	}
	out := assignment{}
	for _, topic := range topics {
		td, ok := md.Topics[topic]
		if !ok || td.Err != nil {
			return nil, topicErr(topic, td.Err)
		}
		for p, pd := range td.Partitions {
			out[topicPartition{topic, p}] = slices.Clone(pd.Replicas)
		}
		if len(td.Partitions) == 0 {
			return nil, fmt.Errorf("topic %q has no partitions", topic)
		}
	}
	return out, nil
}

// currentAssignmentOf returns the replicas of the given partitions (Kafka's
// getReplicaAssignmentForPartitions: "Unable to find partition" for missing ones).
func currentAssignmentOf(ctx context.Context, adm *kadm.Client, parts []topicPartition) (assignment, error) {
	var topics []string
	for _, tp := range parts {
		if !slices.Contains(topics, tp.topic) {
			topics = append(topics, tp.topic)
		}
	}
	md, err := adm.Metadata(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("describe topics: %w", err)
	}
	out := assignment{}
	var missing []string
	for _, tp := range parts {
		pd, ok := md.Topics[tp.topic].Partitions[tp.partition]
		if !ok {
			missing = append(missing, tp.String())
			continue
		}
		out[tp] = slices.Clone(pd.Replicas)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("unable to find partition: %s", strings.Join(missing, ", "))
	}
	return out, nil
}

// reassignmentState is one partition's entry of ListPartitionReassignments.
type reassignmentState struct {
	replicas, adding, removing []int32
}

// listReassignments returns the ongoing reassignments of parts (of every
// partition when parts is nil), straight from ListPartitionReassignments:
// kadm's helper takes no "all".
func listReassignments(ctx context.Context, cl *kgo.Client, parts []topicPartition) (map[topicPartition]reassignmentState, error) {
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	req.TimeoutMillis = 30000
	for _, tp := range parts {
		i := slices.IndexFunc(req.Topics, func(t kmsg.ListPartitionReassignmentsRequestTopic) bool { return t.Topic == tp.topic })
		if i < 0 {
			t := kmsg.NewListPartitionReassignmentsRequestTopic()
			t.Topic = tp.topic
			req.Topics = append(req.Topics, t)
			i = len(req.Topics) - 1
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, tp.partition)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("list partition reassignments: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("list partition reassignments: %w", withBrokerMessage(err, deref(resp.ErrorMessage)))
	}
	out := map[topicPartition]reassignmentState{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[topicPartition{t.Topic, p.Partition}] = reassignmentState{p.Replicas, p.AddingReplicas, p.RemovingReplicas}
		}
	}
	return out, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func newReassignExecute(conn *connFlags) *cobra.Command {
	var file string
	var additional bool
	var throttle int64
	cmd := &cobra.Command{
		Use:   "execute",
		Short: "Start the reassignment in --reassignment-json-file",
		Long: `Start moving the partitions of the reassignment JSON to their new replicas, as
kafka-reassign-partitions --execute does. It prints the current assignment
(keep it to roll back) and returns once the controller accepted the moves;
'reassign verify' tells when they are done.

--throttle N limits the moving data to N bytes/s per broker: it sets
leader.replication.throttled.rate and follower.replication.throttled.rate on
every broker that sends or receives, and the topics'
leader/follower.replication.throttled.replicas to the moving replicas. Run
'reassign verify' until it reports completion: that removes the throttles.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			proposed, order, err := loadReassignment(file)
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("throttle") && throttle < 0 {
				return fmt.Errorf("--throttle must be >= 0, got %d", throttle)
			}
			return conn.withClients(cmd, func(ctx context.Context, cl *kgo.Client, adm *kadm.Client) error {
				ongoing, err := listReassignments(ctx, cl, nil)
				if err != nil {
					return err
				}
				if !additional && len(ongoing) > 0 {
					return errors.New("cannot execute because there is an existing partition assignment; use --additional to add this one to it (or to change the throttle by resubmitting the current reassignment)")
				}
				if err := checkBrokersExist(ctx, adm, proposed); err != nil {
					return err
				}
				current, err := currentAssignmentOf(ctx, adm, order)
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				fmt.Fprintf(out, "Current partition replica assignment\n\n%s\n\nSave this to use as the --reassignment-json-file option during rollback\n",
					formatAssignment(current))
				if cmd.Flags().Changed("throttle") {
					fmt.Fprintln(out, "Warning: You must run 'gregor reassign verify' periodically, until the reassignment completes, to ensure the throttle is removed.")
					if err := setThrottles(ctx, adm, moveMap(ongoing, proposed, current), throttle); err != nil {
						return err
					}
					fmt.Fprintf(out, "The inter-broker throttle limit was set to %d B/s\n", throttle)
				}
				if err := alterReassignments(ctx, adm, proposed, "reassigning"); err != nil {
					return err
				}
				fmt.Fprintf(out, "Successfully started partition reassignment%s for %s\n", plural(len(proposed)), proposed.names())
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&file, "reassignment-json-file", "", "the reassignment JSON (as 'reassign generate' proposes)")
	cmd.Flags().BoolVar(&additional, "additional", false, "start this reassignment while others are in progress")
	cmd.Flags().Int64Var(&throttle, "throttle", -1, "limit the movement to this many bytes/s per broker (see above)")
	return cmd
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// checkBrokersExist is Kafka's verifyBrokerIds: every target broker must be
// in the cluster.
func checkBrokersExist(ctx context.Context, adm *kadm.Client, a assignment) error {
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return fmt.Errorf("describe the cluster: %w", err)
	}
	known := map[int32]bool{}
	for _, b := range md.Brokers {
		known[b.NodeID] = true
	}
	for _, tp := range a.sortedPartitions() {
		for _, r := range a[tp] {
			if !known[r] {
				return fmt.Errorf("unknown broker id %d", r)
			}
		}
	}
	return nil
}

// moveMap is Kafka's calculateProposedMoveMap: the ongoing reassignments'
// moves, then each proposed partition's (sources = its ongoing move's
// sources, else its current replicas; destinations = the target minus the
// sources).
func moveMap(ongoing map[topicPartition]reassignmentState, proposed, current assignment) map[topicPartition]partitionMove {
	moves := map[topicPartition]partitionMove{}
	for tp, r := range ongoing {
		var sources []int32
		for _, id := range r.replicas {
			if !slices.Contains(r.adding, id) {
				sources = append(sources, id)
			}
		}
		moves[tp] = partitionMove{sources: sources, destinations: slices.Clone(r.adding)}
	}
	for tp, target := range proposed {
		sources := current[tp]
		if m, ok := moves[tp]; ok {
			sources = m.sources
		}
		var dest []int32
		for _, id := range target {
			if !slices.Contains(sources, id) {
				dest = append(dest, id)
			}
		}
		moves[tp] = partitionMove{sources: slices.Clone(sources), destinations: dest}
	}
	return moves
}

// setThrottles writes the throttled replicas on the topics and the rate on
// the brokers that move data (Kafka's modifyReassignmentThrottle). A broker
// that is not running (a dead broker being decommissioned) is skipped: its
// configs are altered through it, and it moves nothing.
func setThrottles(ctx context.Context, adm *kadm.Client, moves map[topicPartition]partitionMove, rate int64) error {
	leader, follower, brokers := throttledReplicas(moves)
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return fmt.Errorf("describe the cluster: %w", err)
	}
	live := md.Brokers.NodeIDs()
	brokers = slices.DeleteFunc(brokers, func(b int32) bool { return !slices.Contains(live, b) })
	for topic, l := range leader {
		alters := []kadm.AlterConfig{
			{Op: kadm.SetConfig, Name: leaderThrottledReplicas, Value: kadm.StringPtr(l)},
			{Op: kadm.SetConfig, Name: followerThrottledReplicas, Value: kadm.StringPtr(follower[topic])},
		}
		if err := alterTopicConfigs(ctx, adm, topic, alters); err != nil {
			return fmt.Errorf("set the throttled replicas: %w", err)
		}
	}
	v := strconv.FormatInt(rate, 10)
	alters := []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: leaderThrottledRate, Value: &v},
		{Op: kadm.SetConfig, Name: followerThrottledRate, Value: &v},
	}
	for _, b := range brokers {
		if err := alterBrokerConfigs(ctx, adm, b, alters); err != nil {
			return fmt.Errorf("set the throttle rate on broker %d: %w", b, err)
		}
	}
	return nil
}

func alterBrokerConfigs(ctx context.Context, adm *kadm.Client, broker int32, alters []kadm.AlterConfig) error {
	resps, err := adm.AlterBrokerConfigs(ctx, alters, broker)
	if err == nil {
		err = firstAlterErr(resps)
	}
	return err
}

// clearThrottles removes the throttle configs from every running broker of
// the cluster and from the topics (Kafka's clearAllThrottles: the tool
// cannot know every broker an earlier reassignment throttled), and names
// the brokers of the assignment that are not running.
func clearThrottles(ctx context.Context, adm *kadm.Client, target assignment, out io.Writer) error {
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return fmt.Errorf("describe the cluster: %w", err)
	}
	brokers := md.Brokers.NodeIDs()
	var topics, notRunning []string
	for _, tp := range target.sortedPartitions() {
		for _, r := range target[tp] {
			if id := strconv.Itoa(int(r)); !slices.Contains(brokers, r) && !slices.Contains(notRunning, id) {
				notRunning = append(notRunning, id)
			}
		}
		if !slices.Contains(topics, tp.topic) {
			topics = append(topics, tp.topic)
		}
	}
	slices.Sort(brokers)
	fmt.Fprintf(out, "Clearing broker-level throttles on broker%s %s\n", plural(len(brokers)), joinIDs(brokers))
	if len(notRunning) > 0 {
		// A broker's configs are altered through it, as Kafka's tool does.
		fmt.Fprintf(out, "Not running, throttles left in place (remove them with 'gregor config delete' once running): broker%s %s\n",
			plural(len(notRunning)), strings.Join(notRunning, ","))
	}
	for _, b := range brokers {
		alters := []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: leaderThrottledRate}, {Op: kadm.DeleteConfig, Name: followerThrottledRate}}
		if err := alterBrokerConfigs(ctx, adm, b, alters); err != nil {
			return fmt.Errorf("clear the throttle rate on broker %d: %w", b, err)
		}
	}
	fmt.Fprintf(out, "Clearing topic-level throttles on topic%s %s\n", plural(len(topics)), strings.Join(topics, ","))
	for _, topic := range topics {
		alters := []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: leaderThrottledReplicas}, {Op: kadm.DeleteConfig, Name: followerThrottledReplicas}}
		if err := alterTopicConfigs(ctx, adm, topic, alters); err != nil {
			return fmt.Errorf("clear the throttled replicas: %w", err)
		}
	}
	return nil
}

// alterReassignments sends AlterPartitionReassignments (nil replicas
// cancel) and returns every refused partition in one error.
func alterReassignments(ctx context.Context, adm *kadm.Client, a assignment, what string) error {
	var req kadm.AlterPartitionAssignmentsReq
	for tp, replicas := range a {
		req.Assign(tp.topic, tp.partition, replicas)
	}
	resps, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return fmt.Errorf("%s partitions: %w", what, err)
	}
	var failed []string
	for _, r := range resps.Sorted() {
		if r.Err != nil {
			failed = append(failed, fmt.Sprintf("%s-%d: %v", r.Topic, r.Partition, withBrokerMessage(r.Err, r.ErrMessage)))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("error %s partition(s): %s", what, strings.Join(failed, "; "))
	}
	return nil
}

// verifyStatus is Kafka's verifyPartitionAssignments: one line per target
// partition, and whether any is still moving.
func verifyStatus(ctx context.Context, cl *kgo.Client, adm *kadm.Client, target assignment) ([]string, bool, error) {
	parts := target.sortedPartitions()
	ongoing, err := listReassignments(ctx, cl, parts)
	if err != nil {
		return nil, false, err
	}
	var done []topicPartition
	for _, tp := range parts {
		if _, moving := ongoing[tp]; !moving {
			done = append(done, tp)
		}
	}
	current := assignment{}
	if len(done) > 0 {
		if current, err = currentAssignmentOf(ctx, adm, done); err != nil {
			return nil, false, err
		}
	}
	lines := []string{"Status of partition reassignment:"}
	for _, tp := range parts {
		switch cur, finished := current[tp]; {
		case !finished:
			lines = append(lines, fmt.Sprintf("Reassignment of partition %s is still in progress.", tp))
		case slices.Equal(cur, target[tp]):
			lines = append(lines, fmt.Sprintf("Reassignment of partition %s is completed.", tp))
		default:
			lines = append(lines, fmt.Sprintf("There is no active reassignment of partition %s, but replica set is %s rather than %s.",
				tp, joinIDs(cur), joinIDs(target[tp])))
		}
	}
	return lines, len(ongoing) > 0, nil
}

func newReassignVerify(conn *connFlags) *cobra.Command {
	var file string
	var preserve bool
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Report whether the reassignment in --reassignment-json-file is done; then remove the throttles",
		Long: `Print, per partition of the reassignment JSON, whether its move is complete,
still in progress, or ended with other replicas, as kafka-reassign-partitions
--verify does. Once none of them is moving, the replication throttles are
removed from every broker and from the topics (unless --preserve-throttles).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			target, _, err := loadReassignment(file)
			if err != nil {
				return err
			}
			return conn.withClients(cmd, func(ctx context.Context, cl *kgo.Client, adm *kadm.Client) error {
				lines, moving, err := verifyStatus(ctx, cl, adm, target)
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				fmt.Fprintln(out, strings.Join(lines, "\n"))
				if moving || preserve {
					return nil
				}
				return clearThrottles(ctx, adm, target, out)
			})
		},
	}
	cmd.Flags().StringVar(&file, "reassignment-json-file", "", "the reassignment JSON that was executed")
	cmd.Flags().BoolVar(&preserve, "preserve-throttles", false, "leave the replication throttles in place")
	return cmd
}

func newReassignCancel(conn *connFlags) *cobra.Command {
	var file string
	var preserve bool
	cmd := &cobra.Command{
		Use:   "cancel",
		Short: "Cancel the ongoing moves of the partitions in --reassignment-json-file",
		Long: `Cancel the reassignments of the partitions of the JSON that are still in
progress: each partition returns to its replicas from before the move, as
kafka-reassign-partitions --cancel does. Then the replication throttles are
removed (unless --preserve-throttles).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			target, _, err := loadReassignment(file)
			if err != nil {
				return err
			}
			return conn.withClients(cmd, func(ctx context.Context, cl *kgo.Client, adm *kadm.Client) error {
				ongoing, err := listReassignments(ctx, cl, target.sortedPartitions())
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if len(ongoing) == 0 {
					fmt.Fprintln(out, "None of the specified partition reassignments are active.")
				} else {
					cancels := assignment{}
					for tp := range ongoing {
						cancels[tp] = nil
					}
					if err := alterReassignments(ctx, adm, cancels, "cancelling"); err != nil {
						return err
					}
					fmt.Fprintf(out, "Successfully cancelled partition reassignment%s for: %s\n", plural(len(cancels)), cancels.names())
				}
				if preserve {
					return nil
				}
				return clearThrottles(ctx, adm, target, out)
			})
		},
	}
	cmd.Flags().StringVar(&file, "reassignment-json-file", "", "the reassignment JSON that was executed")
	cmd.Flags().BoolVar(&preserve, "preserve-throttles", false, "leave the replication throttles in place")
	return cmd
}

func newReassignList(conn *connFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the partition reassignments in progress",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return conn.withClient(cmd, func(ctx context.Context, cl *kgo.Client) error {
				ongoing, err := listReassignments(ctx, cl, nil)
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if len(ongoing) == 0 {
					fmt.Fprintln(out, "No partition reassignments found.")
					return nil
				}
				fmt.Fprintln(out, "Current partition reassignments:")
				parts := make([]topicPartition, 0, len(ongoing))
				for tp := range ongoing {
					parts = append(parts, tp)
				}
				slices.SortFunc(parts, compareTopicPartitions)
				for _, tp := range parts {
					r := ongoing[tp]
					line := fmt.Sprintf("%s: replicas: %s.", tp, joinIDs(r.replicas))
					if len(r.adding) > 0 {
						line += fmt.Sprintf(" adding: %s.", joinIDs(r.adding))
					}
					if len(r.removing) > 0 {
						line += fmt.Sprintf(" removing: %s.", joinIDs(r.removing))
					}
					fmt.Fprintln(out, line)
				}
				return nil
			})
		},
	}
}
