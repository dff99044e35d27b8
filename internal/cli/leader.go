package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// NewLeaderCommand returns `leader elect`, kafka-leader-election.sh.
func NewLeaderCommand() *cobra.Command {
	conn := &connFlags{}
	cmd := &cobra.Command{
		Use:   "leader",
		Short: "Elect partition leaders (as kafka-leader-election)",
	}
	conn.register(cmd, cmd.PersistentFlags())
	cmd.AddCommand(newLeaderElect(conn))
	return cmd
}

// electionFile is --path-to-json-file: {"partitions":[{"topic":"t","partition":0}]}.
type electionFile struct {
	Partitions *[]struct {
		Topic     *string `json:"topic"`
		Partition *int32  `json:"partition"`
	} `json:"partitions"`
}

// parseElectionFile reads the partitions of an election JSON, refusing
// duplicates as Kafka's tool does.
func parseElectionFile(data []byte) ([]topicPartition, error) {
	var f electionFile
	if err := decodeStrict(data, &f); err != nil {
		return nil, fmt.Errorf("election JSON: %w", err)
	}
	if f.Partitions == nil {
		return nil, errors.New(`replica election data is missing "partitions" field`)
	}
	var out []topicPartition
	for i, p := range *f.Partitions {
		if p.Topic == nil || p.Partition == nil {
			return nil, fmt.Errorf("election JSON: partitions[%d] needs topic and partition", i)
		}
		tp := topicPartition{*p.Topic, *p.Partition}
		if slices.Contains(out, tp) {
			return nil, fmt.Errorf("replica election data contains duplicate partitions: %s", tp)
		}
		out = append(out, tp)
	}
	if len(out) == 0 {
		return nil, errors.New("replica election data is empty")
	}
	return out, nil
}

func newLeaderElect(conn *connFlags) *cobra.Command {
	var preferred, unclean, all bool
	var electionType, topic, jsonFile string
	var partition int32
	cmd := &cobra.Command{
		Use:   "elect",
		Short: "Run preferred or unclean leader elections",
		Long: `Elect leaders, as kafka-leader-election does. --preferred moves leadership back
to each partition's first replica when it is in sync; --unclean elects, for
a partition with no in-sync replica left, the first live replica (records
it did not have are lost). Choose the partitions with --topic and
--partition, --all-topic-partitions, or --path-to-json-file
({"partitions":[{"topic":"orders","partition":0}]}).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			how, name, err := electionHow(preferred, unclean, electionType)
			if err != nil {
				return err
			}
			sources := 0
			for _, given := range []bool{all, topic != "", jsonFile != ""} {
				if given {
					sources++
				}
			}
			if sources != 1 {
				return errors.New("give exactly one of --all-topic-partitions, --topic (with --partition), --path-to-json-file")
			}
			if cmd.Flags().Changed("partition") && topic == "" {
				return errors.New("--partition is only allowed with --topic")
			}
			var set kadm.TopicsSet // nil: every partition
			switch {
			case topic != "":
				if !cmd.Flags().Changed("partition") {
					return errors.New("--topic needs --partition")
				}
				set = kadm.TopicsSet{}
				set.Add(topic, partition)
			case jsonFile != "":
				data, err := readJSONFile("path-to-json-file", jsonFile)
				if err != nil {
					return err
				}
				parts, err := parseElectionFile(data)
				if err != nil {
					return err
				}
				set = kadm.TopicsSet{}
				for _, tp := range parts {
					set.Add(tp.topic, tp.partition)
				}
			}
			return conn.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				results, err := adm.ElectLeaders(ctx, how, set)
				if err != nil {
					if errors.Is(err, kerr.ClusterAuthorizationFailed) {
						return errors.New("not authorized to perform leader election")
					}
					return fmt.Errorf("elect leaders: %w", err)
				}
				return printElection(cmd, name, results)
			})
		},
	}
	f := cmd.Flags()
	f.BoolVar(&preferred, "preferred", false, "elect each partition's preferred (first) replica")
	f.BoolVar(&unclean, "unclean", false, "elect a live replica outside the ISR where none is in sync (may lose data)")
	f.StringVar(&electionType, "election-type", "", "PREFERRED or UNCLEAN (kafka-leader-election's flag; same as --preferred / --unclean)")
	f.StringVar(&topic, "topic", "", "the topic of the partition to elect for")
	f.Int32Var(&partition, "partition", 0, "the partition to elect for (with --topic)")
	f.BoolVar(&all, "all-topic-partitions", false, "elect for every partition")
	f.StringVar(&jsonFile, "path-to-json-file", "", "JSON file of the partitions to elect for")
	return cmd
}

// electionHow resolves the election type from --preferred, --unclean and
// --election-type: exactly one must say it.
func electionHow(preferred, unclean bool, electionType string) (kadm.ElectLeadersHow, string, error) {
	var kinds []string
	if preferred {
		kinds = append(kinds, "PREFERRED")
	}
	if unclean {
		kinds = append(kinds, "UNCLEAN")
	}
	if electionType != "" {
		switch t := strings.ToUpper(electionType); t {
		case "PREFERRED", "UNCLEAN":
			kinds = append(kinds, t)
		default:
			return 0, "", fmt.Errorf("--election-type %q: want PREFERRED or UNCLEAN", electionType)
		}
	}
	slices.Sort(kinds)
	kinds = slices.Compact(kinds)
	if len(kinds) != 1 {
		return 0, "", errors.New("give exactly one election type: --preferred or --unclean")
	}
	if kinds[0] == "UNCLEAN" {
		return kadm.ElectLiveReplica, kinds[0], nil
	}
	return kadm.ElectPreferredReplica, kinds[0], nil
}

// printElection prints the results as Kafka's tool does: the partitions
// elected, those whose leader was already right, then each failure; any
// failure fails the command.
func printElection(cmd *cobra.Command, name string, results kadm.ElectLeadersResults) error {
	var succeeded, noop, failed []string
	var failures []string
	var all []kadm.ElectLeadersResult
	for _, ps := range results {
		for _, r := range ps {
			all = append(all, r)
		}
	}
	slices.SortFunc(all, func(a, b kadm.ElectLeadersResult) int {
		return compareTopicPartitions(topicPartition{a.Topic, a.Partition}, topicPartition{b.Topic, b.Partition})
	})
	for _, r := range all {
		tp := topicPartition{r.Topic, r.Partition}.String()
		switch {
		case r.Err == nil:
			succeeded = append(succeeded, tp)
		case errors.Is(r.Err, kerr.ElectionNotNeeded):
			noop = append(noop, tp)
		default:
			failed = append(failed, tp)
			failures = append(failures, fmt.Sprintf("Error completing leader election (%s) for partition: %s: %v", name, tp,
				withBrokerMessage(r.Err, r.ErrMessage)))
		}
	}
	out := cmd.OutOrStdout()
	if len(succeeded) > 0 {
		fmt.Fprintf(out, "Successfully completed leader election (%s) for partitions %s\n", name, strings.Join(succeeded, ", "))
	}
	if len(noop) > 0 {
		fmt.Fprintf(out, "Valid replica already elected for partitions %s\n", strings.Join(noop, ", "))
	}
	for _, f := range failures {
		fmt.Fprintln(out, f)
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d replica(s) could not be elected: %s", len(failed), strings.Join(failed, ", "))
	}
	return nil
}
