package cli

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/logdirs"
)

// NewTopicCommand returns `topic create|list|describe|alter|delete|add-partitions`,
// Gregor's kafka-topics.
func NewTopicCommand() *cobra.Command {
	conn := &connFlags{}
	cmd := &cobra.Command{
		Use:   "topic",
		Short: "Create, list, describe, alter and delete topics (like kafka-topics)",
	}
	conn.register(cmd, cmd.PersistentFlags())
	cmd.AddCommand(
		newTopicCreate(conn), newTopicList(conn), newTopicDescribe(conn),
		newTopicAlter(conn), newTopicDelete(conn), newTopicAddPartitions(conn),
	)
	return cmd
}

func newTopicCreate(conn *connFlags) *cobra.Command {
	var (
		topics      []string
		partitions  int32
		replication int16
		configs     []string
		ifNotExists bool
	)
	cmd := &cobra.Command{
		Use:   "create TOPIC... [--partitions N] [--replication-factor N] [--config k=v]...",
		Short: "Create topics; partitions and replication factor default to the broker's",
		RunE: func(cmd *cobra.Command, args []string) error {
			names := topicArgs(args, topics)
			if len(names) == 0 {
				return errors.New("no topic given (as an argument or with --topic)")
			}
			if partitions == 0 || partitions < -1 {
				return fmt.Errorf("--partitions must be at least 1, got %d", partitions)
			}
			if replication == 0 || replication < -1 {
				return fmt.Errorf("--replication-factor must be at least 1, got %d", replication)
			}
			kv, _, err := parseKeyValues("config", configs)
			if err != nil {
				return err
			}
			cfg := make(map[string]*string, len(kv))
			for k, v := range kv {
				cfg[k] = kadm.StringPtr(v)
			}
			return conn.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				resps, err := adm.CreateTopics(ctx, partitions, replication, cfg, names...)
				if err != nil {
					return fmt.Errorf("create topics: %w", err)
				}
				out := cmd.OutOrStdout()
				for _, name := range names {
					r := resps[name]
					switch {
					case r.Err == nil:
						fmt.Fprintf(out, "Created topic %s.\n", name)
					case ifNotExists && errors.Is(r.Err, kerr.TopicAlreadyExists):
					case errors.Is(r.Err, kerr.TopicAlreadyExists):
						return fmt.Errorf("topic %q already exists", name)
					default:
						return fmt.Errorf("create topic %q: %w", name, withBrokerMessage(r.Err, r.ErrMessage))
					}
				}
				return nil
			})
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVar(&topics, "topic", nil, "topic to create (repeatable; or give names as arguments)")
	fs.Int32Var(&partitions, "partitions", -1, "number of partitions (default: the broker's num.partitions)")
	fs.Int16Var(&replication, "replication-factor", -1, "replicas per partition (default: the broker's default.replication.factor)")
	fs.StringArrayVar(&configs, "config", nil, "topic config key=value (repeatable)")
	fs.BoolVar(&ifNotExists, "if-not-exists", false, "do nothing for a topic that already exists")
	return cmd
}

// brokerError is a Kafka error code with the broker's message for it
// (the response's ErrorMessage), which says what happened where the code's
// generic text may not: INVALID_PARTITIONS is described as "Number of
// partitions is below 1." also when the count did not grow.
type brokerError struct {
	code *kerr.Error
	msg  string
}

func (e *brokerError) Error() string { return e.code.Message + ": " + e.msg }
func (e *brokerError) Unwrap() error { return e.code }

// withBrokerMessage puts the broker's message in place of the code's
// generic text; without a message, or for an error that is no Kafka code,
// err is returned as it is.
func withBrokerMessage(err error, msg string) error {
	var code *kerr.Error
	if msg == "" || !errors.As(err, &code) || code != err {
		return err
	}
	return &brokerError{code: code, msg: msg}
}

func newTopicList(conn *connFlags) *cobra.Command {
	var excludeInternal bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List topic names, one per line",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return conn.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				tds, err := adm.ListTopicsWithInternal(ctx)
				if err != nil {
					return fmt.Errorf("list topics: %w", err)
				}
				for _, name := range tds.Names() {
					if excludeInternal && tds[name].IsInternal {
						continue
					}
					fmt.Fprintln(cmd.OutOrStdout(), name)
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&excludeInternal, "exclude-internal", false, "leave out internal topics (__consumer_offsets, ...)")
	return cmd
}

func newTopicDescribe(conn *connFlags) *cobra.Command {
	var topics []string
	cmd := &cobra.Command{
		Use:   "describe [TOPIC...]",
		Short: "Show partitions (leader, replicas, ISR, start/end offsets, size of the leader's copy) and non-default configs; all topics without arguments",
		RunE: func(cmd *cobra.Command, args []string) error {
			names := topicArgs(args, topics)
			return conn.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				var (
					tds kadm.TopicDetails
					err error
				)
				if len(names) == 0 {
					tds, err = adm.ListTopics(ctx)
				} else {
					tds, err = adm.ListTopics(ctx, names...)
				}
				if err != nil {
					return fmt.Errorf("describe topics: %w", err)
				}
				for _, name := range names {
					if td, ok := tds[name]; !ok || td.Err != nil {
						return topicErr(name, td.Err)
					}
				}
				if len(names) == 0 {
					names = tds.Names()
				}
				if len(names) == 0 {
					return nil
				}
				// Offsets and sizes are best effort: a partition without a
				// leader (its broker down, an election under way) or whose
				// brokers did not answer DescribeLogDirs is described with
				// "-" for them, and the others as usual.
				starts, _ := adm.ListStartOffsets(ctx, names...)
				ends, _ := adm.ListEndOffsets(ctx, names...)
				dirs, _ := adm.DescribeAllLogDirs(ctx, tds.TopicsSet())
				sizes := logdirs.PartitionSizes(dirs, tds)
				configs, _ := adm.DescribeTopicConfigs(ctx, names...)
				out := cmd.OutOrStdout()
				for i, name := range names {
					if i > 0 {
						fmt.Fprintln(out)
					}
					writeTopic(out, tds[name], dynamicConfigs(configs, name), starts, ends, sizes[name])
				}
				return nil
			})
		},
	}
	cmd.Flags().StringArrayVar(&topics, "topic", nil, "topic to describe (repeatable)")
	return cmd
}

// dynamicConfigs lists the configs set on the topic itself, as kafka-topics
// --describe shows them.
func dynamicConfigs(rcs kadm.ResourceConfigs, topic string) string {
	rc, err := rcs.On(topic, nil)
	if err != nil {
		return ""
	}
	var kv []string
	for _, c := range rc.Configs {
		if c.Source == kmsg.ConfigSourceDynamicTopicConfig {
			kv = append(kv, c.Key+"="+configValue(c))
		}
	}
	sort.Strings(kv)
	return strings.Join(kv, ",")
}

func configValue(c kadm.Config) string {
	if c.Sensitive {
		return "(sensitive)"
	}
	return c.MaybeValue()
}

func writeTopic(out io.Writer, td kadm.TopicDetail, configs string, starts, ends kadm.ListedOffsets, sizes map[int32]int64) {
	rf := 0
	for _, p := range td.Partitions {
		rf = max(rf, len(p.Replicas))
	}
	// Topic ids print as Kafka's Uuid.toString: URL-safe base64, no padding.
	fmt.Fprintf(out, "Topic: %s\tTopicId: %s\tPartitionCount: %d\tReplicationFactor: %d\tConfigs: %s\n",
		td.Topic, base64.RawURLEncoding.EncodeToString(td.ID[:]), len(td.Partitions), rf, configs)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PARTITION\tLEADER\tREPLICAS\tISR\tSTART-OFFSET\tEND-OFFSET\tSIZE")
	for _, p := range td.Partitions.Sorted() {
		start, end := "-", "-"
		if o, ok := starts.Lookup(td.Topic, p.Partition); ok && o.Err == nil {
			start = fmt.Sprint(o.Offset)
		}
		if o, ok := ends.Lookup(td.Topic, p.Partition); ok && o.Err == nil {
			end = fmt.Sprint(o.Offset)
		}
		size := "-"
		if s, ok := sizes[p.Partition]; ok {
			size = fmt.Sprint(s)
		}
		leader := fmt.Sprint(p.Leader)
		if p.Leader < 0 {
			leader = "none"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Partition, leader, joinInt32(p.Replicas), joinInt32(p.ISR), start, end, size)
	}
	tw.Flush()
}

func newTopicAlter(conn *connFlags) *cobra.Command {
	var topics, configs, deletes []string
	cmd := &cobra.Command{
		Use:   "alter TOPIC [--config k=v]... [--delete-config k]...",
		Short: "Set or remove topic configs (IncrementalAlterConfigs)",
		RunE: func(cmd *cobra.Command, args []string) error {
			topic, err := oneTopic(args, topics)
			if err != nil {
				return err
			}
			alters, err := alterConfigs(configs, deletes)
			if err != nil {
				return err
			}
			return conn.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				if err := alterTopicConfigs(ctx, adm, topic, alters); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Updated config for topic %s.\n", topic)
				return nil
			})
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVar(&topics, "topic", nil, "topic to alter")
	fs.StringArrayVar(&configs, "config", nil, "config key=value to set (repeatable)")
	fs.StringArrayVar(&deletes, "delete-config", nil, "config key to remove, falling back to the broker default (repeatable)")
	return cmd
}

func newTopicDelete(conn *connFlags) *cobra.Command {
	var (
		topics   []string
		ifExists bool
	)
	cmd := &cobra.Command{
		Use:   "delete TOPIC...",
		Short: "Delete topics",
		RunE: func(cmd *cobra.Command, args []string) error {
			names := topicArgs(args, topics)
			if len(names) == 0 {
				return errors.New("no topic given (as an argument or with --topic)")
			}
			return conn.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				resps, err := adm.DeleteTopics(ctx, names...)
				if err != nil {
					return fmt.Errorf("delete topics: %w", err)
				}
				for _, name := range names {
					r := resps[name]
					switch {
					case r.Err == nil:
						fmt.Fprintf(cmd.OutOrStdout(), "Deleted topic %s.\n", name)
					case ifExists && errors.Is(r.Err, kerr.UnknownTopicOrPartition):
					default:
						return topicErr(name, r.Err)
					}
				}
				return nil
			})
		},
	}
	cmd.Flags().StringArrayVar(&topics, "topic", nil, "topic to delete (repeatable)")
	cmd.Flags().BoolVar(&ifExists, "if-exists", false, "do nothing for a topic that does not exist")
	return cmd
}

func newTopicAddPartitions(conn *connFlags) *cobra.Command {
	var (
		topics     []string
		partitions int
	)
	cmd := &cobra.Command{
		Use:   "add-partitions TOPIC --partitions N",
		Short: "Raise a topic's partition count to N (the new total, as kafka-topics --alter --partitions)",
		RunE: func(cmd *cobra.Command, args []string) error {
			topic, err := oneTopic(args, topics)
			if err != nil {
				return err
			}
			if partitions < 1 {
				return errors.New("--partitions N (the new total, at least 1) is required")
			}
			return conn.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				resps, err := adm.UpdatePartitions(ctx, partitions, topic)
				if err != nil {
					return fmt.Errorf("add partitions: %w", err)
				}
				r, ok := resps[topic]
				if !ok {
					return fmt.Errorf("add partitions to %q: no answer for the topic", topic)
				}
				if r.Err != nil {
					if errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
						return topicErr(topic, r.Err)
					}
					return fmt.Errorf("add partitions to %q: %w", topic, withBrokerMessage(r.Err, r.ErrMessage))
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Topic %s now has %d partitions.\n", topic, partitions)
				return nil
			})
		},
	}
	cmd.Flags().StringArrayVar(&topics, "topic", nil, "topic to grow")
	cmd.Flags().IntVar(&partitions, "partitions", 0, "the new total number of partitions")
	return cmd
}
