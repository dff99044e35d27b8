package cli

// `transactions find-hanging` and `transactions abort`, as Kafka's
// kafka-transactions.sh (KIP-664): a transaction a partition's leader holds
// open but whose coordinator will never end it (it does not know the
// partition is in the transaction, or the producer has no transactional id)
// pins the partition's last stable offset and stalls every read_committed
// consumer. find-hanging lists the open transactions older than the longest
// transaction timeout that the coordinator does not account for; abort
// writes the abort marker a coordinator would have written, through
// WriteTxnMarkers to the partition's leader (which needs CLUSTER_ACTION, or,
// without an authorizer, the inter-broker listener).

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// openTxn is one producer's open transaction on one partition.
type openTxn struct {
	topic     string
	partition int32
	producer  kadm.DescribedProducer
}

func newFindHangingCommand(conn *connFlags) *cobra.Command {
	var topic string
	partition, brokerID := int32(-1), int32(-1)
	maxTimeoutMinutes := 15
	cmd := &cobra.Command{
		Use:   "find-hanging",
		Short: "Open transactions older than the longest transaction timeout that no coordinator will end",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if topic == "" && brokerID < 0 {
				return fmt.Errorf("find-hanging needs --topic or --broker-id to limit the search")
			}
			if partition >= 0 && topic == "" {
				return fmt.Errorf("--partition needs --topic")
			}
			if maxTimeoutMinutes < 0 {
				return fmt.Errorf("--max-transaction-timeout must not be negative")
			}
			return conn.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				set, err := partitionsToSearch(ctx, adm, topic, partition, brokerID)
				if err != nil {
					return err
				}
				hanging, err := findHanging(ctx, adm, set, time.Duration(maxTimeoutMinutes)*time.Minute)
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "Topic\tPartition\tProducerId\tProducerEpoch\tCoordinatorEpoch\tStartOffset\tLastTimestamp\tDuration(min)")
				now := time.Now().UnixMilli()
				for _, h := range hanging {
					p := h.producer
					fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", h.topic, h.partition, p.ProducerID, p.ProducerEpoch,
						p.CoordinatorEpoch, p.CurrentTxnStartOffset, p.LastTimestamp, (now-p.LastTimestamp)/60000)
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().StringVar(&topic, "topic", "", "search this topic's partitions")
	cmd.Flags().Int32Var(&partition, "partition", -1, "only this partition (with --topic)")
	cmd.Flags().Int32Var(&brokerID, "broker-id", -1, "search the partitions this broker leads")
	cmd.Flags().IntVar(&maxTimeoutMinutes, "max-transaction-timeout", maxTimeoutMinutes,
		"the brokers' transaction.max.timeout.ms in minutes: younger transactions may still be ended by their producer")
	return cmd
}

// partitionsToSearch is the partitions of topic (or of every topic), only
// partition when it is set, only those brokerID leads when it is set.
func partitionsToSearch(ctx context.Context, adm *kadm.Client, topic string, partition, brokerID int32) (kadm.TopicsSet, error) {
	var topics []string
	if topic != "" {
		topics = append(topics, topic)
	}
	details, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	if err := details.Error(); err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	set := kadm.TopicsSet{}
	for _, t := range details.Sorted() {
		for _, p := range t.Partitions.Sorted() {
			if (partition < 0 || p.Partition == partition) && (brokerID < 0 || p.Leader == brokerID) {
				set.Add(t.Topic, p.Partition)
			}
		}
	}
	if partition >= 0 && len(set) == 0 {
		return nil, fmt.Errorf("%s-%d: %w", topic, partition, kerr.UnknownTopicOrPartition)
	}
	return set, nil
}

// findHanging returns the open transactions of set older than maxTimeout
// that their coordinator does not account for (Kafka's rule): the producer
// id belongs to no transactional id, or the transactional id's current
// transaction does not include the partition.
func findHanging(ctx context.Context, adm *kadm.Client, set kadm.TopicsSet, maxTimeout time.Duration) ([]openTxn, error) {
	if len(set) == 0 {
		return nil, nil
	}
	described, err := adm.DescribeProducers(ctx, set)
	if err != nil {
		return nil, fmt.Errorf("describe producers: %w", err)
	}
	now := time.Now().UnixMilli()
	var open []openTxn
	for _, t := range described {
		for _, p := range t.Partitions {
			if p.Err != nil {
				return nil, fmt.Errorf("describe producers of %s-%d: %w", p.Topic, p.Partition, p.Err)
			}
			for _, pr := range p.ActiveProducers {
				if pr.CurrentTxnStartOffset >= 0 && now-pr.LastTimestamp > maxTimeout.Milliseconds() {
					open = append(open, openTxn{topic: p.Topic, partition: p.Partition, producer: pr})
				}
			}
		}
	}
	if len(open) == 0 {
		return nil, nil
	}
	var pids []int64
	for _, o := range open {
		pids = append(pids, o.producer.ProducerID)
	}
	listed, err := adm.ListTransactions(ctx, pids, nil)
	if err != nil {
		return nil, fmt.Errorf("list transactions: %w", err)
	}
	txnIDs := map[int64]string{}
	var ids []string
	for _, l := range listed.Sorted() {
		if slices.Contains(pids, l.ProducerID) {
			txnIDs[l.ProducerID] = l.TxnID
			ids = append(ids, l.TxnID)
		}
	}
	var descriptions kadm.DescribedTransactions
	if len(ids) > 0 {
		if descriptions, err = adm.DescribeTransactions(ctx, ids...); err != nil {
			return nil, fmt.Errorf("describe transactions: %w", err)
		}
	}
	var hanging []openTxn
	for _, o := range open {
		id, ok := txnIDs[o.producer.ProducerID]
		if ok {
			d, described := descriptions[id]
			if described && d.Err == nil && d.ProducerID == o.producer.ProducerID && inSet(d.Topics, o.topic, o.partition) {
				continue // the coordinator will write this partition's marker
			}
		}
		hanging = append(hanging, o)
	}
	sort.Slice(hanging, func(i, j int) bool {
		a, b := hanging[i], hanging[j]
		if a.topic != b.topic {
			return a.topic < b.topic
		}
		if a.partition != b.partition {
			return a.partition < b.partition
		}
		return a.producer.ProducerID < b.producer.ProducerID
	})
	return hanging, nil
}

func newAbortCommand(conn *connFlags) *cobra.Command {
	var topic string
	partition := int32(-1)
	startOffset := int64(-1)
	cmd := &cobra.Command{
		Use:   "abort",
		Short: "Abort the open transaction that starts at --start-offset of a partition (see find-hanging)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if topic == "" || partition < 0 || startOffset < 0 {
				return fmt.Errorf("--topic, --partition and --start-offset are required")
			}
			ctx, cancel := conn.deadline(cmd)
			defer cancel()
			cl, err := conn.client(ctx)
			if err != nil {
				return err
			}
			defer cl.Close()
			adm := kadm.NewClient(cl)
			p, err := describePartitionProducers(ctx, adm, topic, partition)
			if err != nil {
				return err
			}
			var found *kadm.DescribedProducer
			for _, pr := range p.ActiveProducers {
				if pr.CurrentTxnStartOffset == startOffset {
					found = &pr
					break
				}
			}
			if found == nil {
				return fmt.Errorf("no open transaction starts at offset %d of %s-%d", startOffset, topic, partition)
			}
			req := kmsg.NewPtrWriteTxnMarkersRequest()
			m := kmsg.NewWriteTxnMarkersRequestMarker()
			// A producer whose first transaction hangs has no coordinator
			// epoch yet (-1); 0 is at most any epoch, as Kafka's tool uses.
			m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch, m.Committed = found.ProducerID, found.ProducerEpoch, max(found.CoordinatorEpoch, 0), false
			mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			mt.Topic, mt.Partitions = topic, []int32{partition}
			m.Topics = append(m.Topics, mt)
			req.Markers = append(req.Markers, m)
			kresp, err := cl.Broker(int(p.Leader)).Request(ctx, req)
			if err != nil {
				return fmt.Errorf("abort the transaction of producer %d on %s-%d: %w", found.ProducerID, topic, partition, err)
			}
			resp := kresp.(*kmsg.WriteTxnMarkersResponse)
			for _, rm := range resp.Markers {
				for _, rt := range rm.Topics {
					for _, rp := range rt.Partitions {
						if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
							return fmt.Errorf("abort the transaction of producer %d on %s-%d: %w", found.ProducerID, topic, partition, err)
						}
					}
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Aborted the transaction of producer %d (epoch %d) starting at offset %d of %s-%d\n",
				found.ProducerID, found.ProducerEpoch, startOffset, topic, partition)
			return nil
		},
	}
	cmd.Flags().StringVar(&topic, "topic", "", "the topic")
	cmd.Flags().Int32Var(&partition, "partition", -1, "the partition")
	cmd.Flags().Int64Var(&startOffset, "start-offset", -1, "the offset the open transaction starts at (describe-producers, find-hanging)")
	return cmd
}

func inSet(set kadm.TopicsSet, topic string, partition int32) bool {
	_, ok := set[topic][partition]
	return ok
}
