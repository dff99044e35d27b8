package cli

import (
	"context"
	"errors"
	"fmt"
	"github.com/twmb/franz-go/pkg/kadm"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// NewClusterCommand returns `cluster describe`, `cluster quorum`, `cluster
// unregister` and `cluster decommission` (cluster_decommission.go).
func NewClusterCommand() *cobra.Command {
	conn := &connFlags{}
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Show the cluster (id, controller, brokers, quorum); unregister or decommission a broker",
	}
	conn.register(cmd, cmd.PersistentFlags())
	describe := &cobra.Command{
		Use:   "describe",
		Short: "Print the cluster id, the active controller and the brokers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return conn.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				md, err := adm.BrokerMetadata(ctx)
				if err != nil {
					return fmt.Errorf("describe cluster: %w", err)
				}
				out := cmd.OutOrStdout()
				fmt.Fprintf(out, "Cluster ID: %s\n", md.Cluster)
				if md.Controller >= 0 {
					fmt.Fprintf(out, "Controller: %d\n", md.Controller)
				} else {
					fmt.Fprintln(out, "Controller: none")
				}
				fmt.Fprintf(out, "Brokers: %d\n", len(md.Brokers))
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tHOST\tPORT\tRACK")
				for _, b := range md.Brokers {
					rack := ""
					if b.Rack != nil {
						rack = *b.Rack
					}
					fmt.Fprintf(tw, "%d\t%s\t%d\t%s\n", b.NodeID, b.Host, b.Port, rack)
				}
				return tw.Flush()
			})
		},
	}
	quorum := &cobra.Command{
		Use:   "quorum",
		Short: "Describe the metadata quorum (as kafka-metadata-quorum describe --status --replication)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := conn.deadline(cmd)
			defer cancel()
			cl, err := conn.client(ctx)
			if err != nil {
				return err
			}
			defer cl.Close()
			return describeQuorum(ctx, cl, cmd.OutOrStdout())
		},
	}
	cmd.AddCommand(describe, quorum, newClusterUnregister(conn), newClusterDecommission(conn))
	return cmd
}

// describeQuorum prints the leader, epoch, high watermark and each voter's
// replication state of __cluster_metadata.
func describeQuorum(ctx context.Context, cl *kgo.Client, out io.Writer) error {
	req := kmsg.NewPtrDescribeQuorumRequest()
	t := kmsg.NewDescribeQuorumRequestTopic()
	t.Topic = "__cluster_metadata"
	t.Partitions = append(t.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("describe quorum: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return fmt.Errorf("describe quorum: %w", err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return errors.New("describe quorum: the answer has no __cluster_metadata partition")
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return fmt.Errorf("describe quorum: %w", err)
	}
	fmt.Fprintf(out, "LeaderId:      %d\nLeaderEpoch:   %d\nHighWatermark: %d\n", p.LeaderID, p.LeaderEpoch, p.HighWatermark)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tLOG END OFFSET\tLAG\tLAST FETCH (ms ago)\tLAST CAUGHT UP (ms ago)\tSTATUS")
	now := time.Now().UnixMilli()
	ago := func(ts int64) string {
		if ts < 0 {
			return "-"
		}
		return fmt.Sprint(max(now-ts, 0))
	}
	row := func(r kmsg.DescribeQuorumResponseTopicPartitionReplicaState, status string) {
		if r.ReplicaID == p.LeaderID {
			status = "Leader"
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%s\t%s\n", r.ReplicaID, r.LogEndOffset, max(p.HighWatermark-r.LogEndOffset, 0),
			ago(r.LastFetchTimestamp), ago(r.LastCaughtUpTimestamp), status)
	}
	for _, r := range p.CurrentVoters {
		row(r, "Follower")
	}
	for _, r := range p.Observers {
		row(r, "Observer")
	}
	return tw.Flush()
}
