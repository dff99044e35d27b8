// Package offsetreset computes new committed offsets for a consumer group,
// as kafka-consumer-groups --reset-offsets does, for the operator tools (the
// CLI and the console): to the log start or end, to an offset, to the first
// offset at or after a time, or shifted from the committed one; always kept
// within the log's start and end offsets. Plan also computes a share
// group's new start offsets (kafka-share-groups --reset-offsets), which have
// no committed offset to shift from.
package offsetreset

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Target is where the offsets go.
type Target int

const (
	Earliest Target = iota // the log start offset
	Latest                 // the log end offset
	Offset                 // Spec.Offset
	Datetime               // the first offset at or after Spec.Millis
	Shift                  // the committed offset plus Spec.Shift
)

// Spec is a reset: its target and the target's value.
type Spec struct {
	Target Target
	Offset int64 // Offset: the offset (not negative)
	Millis int64 // Datetime: ms since the epoch
	Shift  int64 // Shift: added to the committed offset (negative: back)
}

// GroupState is the group's state as DescribeGroups reports it ("Dead"
// for a group the coordinator does not know).
func GroupState(ctx context.Context, adm *kadm.Client, group string) (string, error) {
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return "", fmt.Errorf("describe group %q: %w", group, err)
	}
	d, ok := described[group]
	if !ok || errors.Is(d.Err, kerr.GroupIDNotFound) {
		return "Dead", nil
	}
	if d.Err != nil {
		return "", fmt.Errorf("group %q: %w", group, d.Err)
	}
	return d.State, nil
}

// ActiveGroupError refuses to reset the offsets of a group with members.
type ActiveGroupError struct{ Group, State string }

func (e *ActiveGroupError) Error() string {
	return fmt.Sprintf("offsets can only be reset if group %q is inactive, but its state is %s", e.Group, e.State)
}

// CheckInactive refuses a group with members (an *ActiveGroupError), as
// Kafka's tool does: a live member would overwrite the new offsets with its
// next commit.
func CheckInactive(ctx context.Context, adm *kadm.Client, group string) error {
	state, err := GroupState(ctx, adm, group)
	if err != nil {
		return err
	}
	if state != "Empty" && state != "Dead" {
		return &ActiveGroupError{Group: group, State: state}
	}
	return nil
}

// Plan computes each partition of set's new offset; committed are the
// group's committed offsets (needed for Shift).
func Plan(ctx context.Context, adm *kadm.Client, set kadm.TopicsSet, committed kadm.OffsetResponses, spec Spec) (kadm.Offsets, error) {
	topics := set.Topics()
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("list start offsets: %w", err)
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("list end offsets: %w", err)
	}
	var byTime kadm.ListedOffsets
	if spec.Target == Datetime {
		if byTime, err = adm.ListOffsetsAfterMilli(ctx, spec.Millis, topics...); err == nil {
			err = byTime.Error()
		}
		if err != nil {
			return nil, fmt.Errorf("list offsets by time: %w", err)
		}
	}
	plan := kadm.Offsets{}
	for _, tp := range set.Sorted() {
		for _, p := range tp.Partitions {
			start, _ := starts.Lookup(tp.Topic, p)
			end, _ := ends.Lookup(tp.Topic, p)
			var at int64
			switch spec.Target {
			case Earliest:
				at = start.Offset
			case Latest:
				at = end.Offset
			case Offset:
				at = spec.Offset
			case Datetime:
				at = end.Offset // no record at or after the time: the end
				if o, ok := byTime.Lookup(tp.Topic, p); ok && o.Offset >= 0 {
					at = o.Offset
				}
			case Shift:
				c, ok := committed.Lookup(tp.Topic, p)
				if !ok || c.Err != nil || c.At < 0 {
					return nil, fmt.Errorf("shift: no committed offset for %s-%d", tp.Topic, p)
				}
				at = c.At + spec.Shift
			default:
				return nil, fmt.Errorf("unknown reset target %d", spec.Target)
			}
			at = max(start.Offset, min(at, end.Offset))
			plan.Add(kadm.Offset{Topic: tp.Topic, Partition: p, At: at, LeaderEpoch: -1})
		}
	}
	return plan, nil
}
