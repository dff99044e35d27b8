// Package logdirs reads the answers of a cluster's brokers to
// DescribeLogDirs for the operator tools (the CLI and the console): how
// large each partition is.
package logdirs

import "github.com/twmb/franz-go/pkg/kadm"

// PartitionSizes is the size of each partition of tds, by topic and
// partition: the leader's copy, or, when the leader did not answer (it is
// down, or the partition has none), the largest copy that did. A
// partition no broker reported is absent.
//
// dirs may be what kadm's DescribeAllLogDirs returned together with an
// error: the brokers that answered are there, and one broker that is down
// does not hide the sizes the others reported.
func PartitionSizes(dirs kadm.DescribedAllLogDirs, tds kadm.TopicDetails) map[string]map[int32]int64 {
	sizes := map[string]map[int32]int64{}
	type topicPartition struct {
		topic     string
		partition int32
	}
	fromLeader := map[topicPartition]bool{}
	dirs.Each(func(d kadm.DescribedLogDir) {
		if d.Err != nil {
			return
		}
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			td, ok := tds[p.Topic]
			if !ok {
				return
			}
			pd, ok := td.Partitions[p.Partition]
			if !ok {
				return
			}
			tp := topicPartition{p.Topic, p.Partition}
			byPartition := sizes[p.Topic]
			if byPartition == nil {
				byPartition = map[int32]int64{}
				sizes[p.Topic] = byPartition
			}
			cur, seen := byPartition[p.Partition]
			switch {
			case p.Broker == pd.Leader:
				byPartition[p.Partition] = p.Size
				fromLeader[tp] = true
			case fromLeader[tp]:
			case !seen || p.Size > cur:
				byPartition[p.Partition] = p.Size
			}
		})
	})
	return sizes
}
