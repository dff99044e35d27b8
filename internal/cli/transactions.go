package cli

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

// NewTransactionsCommand returns `transactions list|describe|describe-producers|find-hanging|abort`,
// Kafka's kafka-transactions.sh.
func NewTransactionsCommand() *cobra.Command {
	conn := &connFlags{}
	cmd := &cobra.Command{
		Use:   "transactions",
		Short: "List and describe transactional ids and the producers of partitions; find and abort hanging transactions",
	}
	conn.register(cmd, cmd.PersistentFlags())

	var states []string
	list := &cobra.Command{
		Use:   "list",
		Short: "List transactional ids: coordinator, producer id, state",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return conn.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				listed, err := adm.ListTransactions(ctx, nil, states)
				if err != nil {
					return fmt.Errorf("list transactions: %w", err)
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "TransactionalId\tCoordinator\tProducerId\tTransactionState")
				for _, t := range listed.Sorted() {
					fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", t.TxnID, t.Coordinator, t.ProducerID, t.State)
				}
				return tw.Flush()
			})
		},
	}
	list.Flags().StringSliceVar(&states, "state", nil, "only these states (Ongoing, PrepareCommit, CompleteAbort, ...)")

	var txnID string
	describe := &cobra.Command{
		Use:   "describe",
		Short: "Describe a transactional id: state, producer, timeout, partitions of the open transaction",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if txnID == "" {
				return fmt.Errorf("--transactional-id is required")
			}
			return conn.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				described, err := adm.DescribeTransactions(ctx, txnID)
				if err != nil {
					return fmt.Errorf("describe transaction %s: %w", txnID, err)
				}
				d, ok := described[txnID]
				if !ok {
					return fmt.Errorf("describe transaction %s: no answer", txnID)
				}
				if d.Err != nil {
					return fmt.Errorf("describe transaction %s: %w", txnID, d.Err)
				}
				start, duration := "None", "None"
				if d.StartTimestamp >= 0 {
					at := time.UnixMilli(d.StartTimestamp)
					start = at.UTC().Format(time.RFC3339Nano)
					duration = time.Since(at).Round(time.Millisecond).String()
				}
				var parts []string
				for _, t := range d.Topics.Sorted() {
					for _, p := range t.Partitions {
						parts = append(parts, fmt.Sprintf("%s-%d", t.Topic, p))
					}
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "CoordinatorId\tTransactionalId\tProducerId\tProducerEpoch\tTransactionState\tTransactionTimeoutMs\tCurrentTransactionStartTime\tTransactionDuration\tTopicPartitions")
				fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%s\t%d\t%s\t%s\t%s\n", d.Coordinator, d.TxnID, d.ProducerID, d.ProducerEpoch, d.State,
					d.TimeoutMillis, start, duration, strings.Join(parts, ","))
				return tw.Flush()
			})
		},
	}
	describe.Flags().StringVar(&txnID, "transactional-id", "", "the transactional id")

	var topic string
	partition := int32(-1)
	producers := &cobra.Command{
		Use:   "describe-producers",
		Short: "The producers a partition's leader remembers: epoch, last sequence and time, open transaction start",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if topic == "" || partition < 0 {
				return fmt.Errorf("--topic and --partition are required")
			}
			return conn.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				p, err := describePartitionProducers(ctx, adm, topic, partition)
				if err != nil {
					return err
				}
				var list []kadm.DescribedProducer
				for _, pr := range p.ActiveProducers {
					list = append(list, pr)
				}
				sort.Slice(list, func(i, j int) bool { return list[i].ProducerID < list[j].ProducerID })
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ProducerId\tProducerEpoch\tLatestCoordinatorEpoch\tLastSequence\tLastTimestamp\tCurrentTransactionStartOffset")
				for _, pr := range list {
					start := "None"
					if pr.CurrentTxnStartOffset >= 0 {
						start = fmt.Sprint(pr.CurrentTxnStartOffset)
					}
					fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%s\n", pr.ProducerID, pr.ProducerEpoch, pr.CoordinatorEpoch, pr.LastSequence, pr.LastTimestamp, start)
				}
				return tw.Flush()
			})
		},
	}
	producers.Flags().StringVar(&topic, "topic", "", "the topic")
	producers.Flags().Int32Var(&partition, "partition", -1, "the partition")

	cmd.AddCommand(list, describe, producers, newFindHangingCommand(conn), newAbortCommand(conn))
	return cmd
}

// describePartitionProducers returns the active producers of one
// partition (DescribeProducers, answered by its leader).
func describePartitionProducers(ctx context.Context, adm *kadm.Client, topic string, partition int32) (kadm.DescribedProducersPartition, error) {
	set := kadm.TopicsSet{}
	set.Add(topic, partition)
	described, err := adm.DescribeProducers(ctx, set)
	if err != nil {
		return kadm.DescribedProducersPartition{}, fmt.Errorf("describe producers of %s-%d: %w", topic, partition, err)
	}
	p, ok := described[topic].Partitions[partition]
	if !ok {
		return p, fmt.Errorf("describe producers of %s-%d: no answer", topic, partition)
	}
	if p.Err != nil {
		return p, fmt.Errorf("describe producers of %s-%d: %w", topic, partition, p.Err)
	}
	return p, nil
}
