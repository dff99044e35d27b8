package coordinator_test

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/log"
	"gregor/internal/record"
)

// How TestFailoverScripts prints the brokers, their logs and the answers.

func codeName(code int16) string {
	var ke *kerr.Error
	if errors.As(kerr.ErrorForCode(code), &ke) {
		return ke.Message
	}
	return strconv.Itoa(int(code))
}

func (c *cluster) print(out *strings.Builder) {
	for _, b := range c.brokers {
		fmt.Fprintf(out, "r%d: %s\n", b.id, c.describe(b))
	}
}

// describe is a broker's role, log end, high watermark and records
// (offset:epoch:group/partition=offset), and whether its coordinator has
// the offsets partition loaded.
func (c *cluster) describe(b *broker) string {
	if b.rt == nil {
		return "down"
	}
	p, ok := b.rm.Hosted(offsetsTP)
	if !ok {
		return "not hosting"
	}
	l := p.Log()
	role := "follower"
	if p.IsLeader() {
		role = "leader"
	}
	s := fmt.Sprintf("%s epoch=%d leo=%d hw=%d log=[%s]", role, p.LeaderEpoch(), l.LogEndOffset(), l.HighWatermark(),
		strings.Join(c.records(l), " "))
	if parts, _ := b.rt.Partitions(); slices.Contains(parts, 0) {
		s += " coordinator=loaded"
	}
	return s
}

func (c *cluster) records(l *log.Log) []string {
	c.t.Helper()
	if l.LogEndOffset() == l.LogStartOffset() {
		return nil
	}
	info, err := l.Read(l.LogStartOffset(), 1<<30, l.LogEndOffset(), true)
	if err != nil {
		c.t.Fatalf("read %s: %v", l.Dir(), err)
	}
	return describeRecords(c.t, info.Records)
}

// describeRecords is each record of the batches as offset:eEPOCH:what, what
// being group/topic-partition=offset for an offset commit.
func describeRecords(t *testing.T, b []byte) []string {
	t.Helper()
	var out []string
	for len(b) > 0 {
		h, err := record.ParseHeader(b)
		if err != nil || h.Size() > len(b) {
			t.Fatalf("read batch: %v", err)
		}
		_, recs, err := record.ReadRecords(b[:h.Size()])
		if err != nil {
			t.Fatalf("read batch at %d: %v", h.BaseOffset, err)
		}
		for _, r := range recs {
			what := "other"
			k, v := kmsg.NewOffsetCommitKey(), kmsg.NewOffsetCommitValue()
			if k.ReadFrom(r.Key) == nil && k.Version <= 1 {
				what = fmt.Sprintf("%s/%s-%d=tombstone", k.Group, k.Topic, k.Partition)
				if r.Value != nil && v.ReadFrom(r.Value) == nil {
					what = fmt.Sprintf("%s/%s-%d=%d", k.Group, k.Topic, k.Partition, v.Offset)
				}
			}
			out = append(out, fmt.Sprintf("%d:e%d:%s", h.BaseOffset+int64(r.OffsetDelta), h.PartitionLeaderEpoch, what))
		}
		b = b[h.Size():]
	}
	return out
}
