package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/offsetreset"
)

// The console's partition and group actions: add partitions to a topic,
// elect its partitions' leaders, reset a group's committed offsets (a dry
// run first), delete a group. Who may run them, and the cross-site
// defence, are those of every action (actions.go).

// ---- Add partitions ----

type addPartitionsRequest struct {
	// Count is the topic's new partition count (a number or numeric
	// string), as kafka-topics --alter --partitions takes it.
	Count json.RawMessage `json:"count"`
}

type addedPartitions struct {
	Topic      string `json:"topic"`
	Partitions int32  `json:"partitions"`
}

func (c *Console) addPartitions(ctx context.Context, r *http.Request, cl *kgo.Client) (any, error) {
	topic := r.PathValue("topic")
	var req addPartitionsRequest
	if err := decodeAction(r, &req, `{"count"}`); err != nil {
		return nil, err
	}
	count, err := parseInt32(req.Count, "partition count", 0)
	if err != nil {
		return nil, err
	}
	if count <= 0 {
		return nil, badRequest("give the topic's new partition count")
	}
	kreq := kmsg.NewPtrCreatePartitionsRequest()
	kreq.TimeoutMillis = int32(apiTimeout / time.Millisecond)
	t := kmsg.NewCreatePartitionsRequestTopic()
	t.Topic, t.Count = topic, count
	kreq.Topics = append(kreq.Topics, t)
	resp, err := kreq.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("add partitions to %q: %w", topic, err)
	}
	if len(resp.Topics) != 1 {
		return nil, fmt.Errorf("add partitions to %q: the answer has %d topics", topic, len(resp.Topics))
	}
	if err := refusal(resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage); err != nil {
		return nil, err
	}
	c.logAction(r, "add partitions", topic, "partitions", count)
	return addedPartitions{Topic: topic, Partitions: count}, nil
}

// ---- Elect leaders ----

type electLeadersRequest struct {
	// Type is "preferred" (the first live replica in the ISR becomes the
	// leader, as kafka-leader-election --election-type PREFERRED) or
	// "unclean" (an out-of-sync replica may lead a leaderless partition,
	// losing what only the old leader had).
	Type string `json:"type"`
}

type electedPartition struct {
	Partition int32 `json:"partition"`
	// Result is "elected", "not needed" (the partition already has the
	// leader asked for) or the broker's refusal.
	Result string `json:"result"`
	Error  bool   `json:"error,omitempty"`
}

type electedLeaders struct {
	Topic      string             `json:"topic"`
	Type       string             `json:"type"`
	Partitions []electedPartition `json:"partitions"`
}

func (c *Console) electLeaders(ctx context.Context, r *http.Request, cl *kgo.Client) (any, error) {
	topic := r.PathValue("topic")
	var req electLeadersRequest
	if err := decodeAction(r, &req, `{"type": "preferred" or "unclean"}`); err != nil {
		return nil, err
	}
	kreq := kmsg.NewPtrElectLeadersRequest()
	switch req.Type {
	case "", "preferred":
		req.Type, kreq.ElectionType = "preferred", 0
	case "unclean":
		kreq.ElectionType = 1
	default:
		return nil, badRequest("election type %q: preferred or unclean", req.Type)
	}
	td, err := describeTopic(ctx, kadm.NewClient(cl), topic)
	if err != nil {
		return nil, err
	}
	t := kmsg.NewElectLeadersRequestTopic()
	t.Topic = topic
	for p := range td.Partitions {
		t.Partitions = append(t.Partitions, p)
	}
	kreq.Topics = append(kreq.Topics, t)
	kreq.TimeoutMillis = int32(apiTimeout / time.Millisecond)
	resp, err := kreq.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("elect leaders of %q: %w", topic, err)
	}
	if err := refusal(resp.ErrorCode, nil); err != nil {
		return nil, err
	}
	out := electedLeaders{Topic: topic, Type: req.Type, Partitions: []electedPartition{}}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			ep := electedPartition{Partition: rp.Partition, Result: "elected"}
			switch err := refusal(rp.ErrorCode, rp.ErrorMessage); {
			case err == nil:
			case errors.Is(err, kerr.ElectionNotNeeded):
				ep.Result = "not needed"
			default:
				ep.Result, ep.Error = err.Error(), true
			}
			out.Partitions = append(out.Partitions, ep)
		}
	}
	c.logAction(r, "elect leaders", topic, "type", req.Type)
	return out, nil
}

// ---- Reset a group's offsets ----

type resetOffsetsRequest struct {
	// Topic limits the reset to one topic (all its partitions); empty
	// resets every topic the group has committed offsets for.
	Topic string `json:"topic"`
	// To is earliest, latest, offset, datetime or shift.
	To string `json:"to"`
	// Value is the offset (offset), the time (datetime: ms since the
	// epoch, or RFC 3339) or the shift (shift: negative goes back).
	Value string `json:"value"`
	// Execute commits the new offsets; without it the answer is the plan
	// only (a dry run), as kafka-consumer-groups does.
	Execute bool `json:"execute"`
}

type resetOffset struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Current   int64  `json:"current"` // -1: nothing committed
	New       int64  `json:"new"`
}

type resetOffsets struct {
	Group    string        `json:"group"`
	Executed bool          `json:"executed"`
	Offsets  []resetOffset `json:"offsets"`
}

// resetSpec reads a reset's target and value.
func resetSpec(to, value string) (offsetreset.Spec, error) {
	value = strings.TrimSpace(value)
	num := func(what string) (int64, error) {
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return 0, badRequest("%s: %q is not a whole number", what, value)
		}
		return n, nil
	}
	switch to {
	case "earliest":
		return offsetreset.Spec{Target: offsetreset.Earliest}, nil
	case "latest":
		return offsetreset.Spec{Target: offsetreset.Latest}, nil
	case "offset":
		n, err := num("offset")
		if err == nil && n < 0 {
			err = badRequest("offset %d is negative", n)
		}
		return offsetreset.Spec{Target: offsetreset.Offset, Offset: n}, err
	case "datetime":
		ms, err := parseMillis(value)
		return offsetreset.Spec{Target: offsetreset.Datetime, Millis: ms}, err
	case "shift":
		n, err := num("shift")
		return offsetreset.Spec{Target: offsetreset.Shift, Shift: n}, err
	}
	return offsetreset.Spec{}, badRequest("reset to %q: earliest, latest, offset, datetime or shift", to)
}

func (c *Console) resetGroupOffsets(ctx context.Context, r *http.Request, cl *kgo.Client) (any, error) {
	group := r.PathValue("group")
	var req resetOffsetsRequest
	if err := decodeAction(r, &req, `{"topic", "to", "value", "execute"}`); err != nil {
		return nil, err
	}
	spec, err := resetSpec(req.To, req.Value)
	if err != nil {
		return nil, err
	}
	adm := kadm.NewClient(cl)
	if err := offsetreset.CheckInactive(ctx, adm, group); err != nil {
		var active *offsetreset.ActiveGroupError
		if errors.As(err, &active) {
			return nil, &statusError{http.StatusConflict, err}
		}
		return nil, withStatus(err)
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return nil, withStatus(fmt.Errorf("committed offsets of %q: %w", group, err))
	}
	set := kadm.TopicsSet{}
	if req.Topic = strings.TrimSpace(req.Topic); req.Topic != "" {
		td, err := describeTopic(ctx, adm, req.Topic)
		if err != nil {
			return nil, err
		}
		for p := range td.Partitions {
			set.Add(req.Topic, p)
		}
	} else {
		committed.Each(func(o kadm.OffsetResponse) {
			if o.Err == nil && o.At >= 0 {
				set.Add(o.Topic, o.Partition)
			}
		})
		if len(set) == 0 {
			return nil, badRequest("group %q has no committed offsets: choose a topic", group)
		}
	}
	plan, err := offsetreset.Plan(ctx, adm, set, committed, spec)
	if err != nil {
		return nil, withStatus(err)
	}
	out := resetOffsets{Group: group, Offsets: []resetOffset{}}
	for _, o := range plan.Sorted() {
		cur := int64(-1)
		if c, ok := committed.Lookup(o.Topic, o.Partition); ok && c.Err == nil {
			cur = c.At
		}
		out.Offsets = append(out.Offsets, resetOffset{Topic: o.Topic, Partition: o.Partition, Current: cur, New: o.At})
	}
	if !req.Execute {
		return out, nil
	}
	resps, err := adm.CommitOffsets(ctx, group, plan)
	if err == nil {
		err = resps.Error()
	}
	if err != nil {
		return nil, withStatus(fmt.Errorf("commit offsets of %q: %w", group, err))
	}
	out.Executed = true
	c.logAction(r, "reset offsets", req.Topic, "group", group, "to", req.To, "partitions", len(out.Offsets))
	return out, nil
}

// ---- Delete a group ----

func (c *Console) deleteGroup(ctx context.Context, r *http.Request, cl *kgo.Client) (any, error) {
	group := r.PathValue("group")
	if err := confirmDeletion(r, group, "group's id"); err != nil {
		return nil, err
	}
	kreq := kmsg.NewPtrDeleteGroupsRequest()
	kreq.Groups = []string{group}
	resp, err := kreq.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("delete group %q: %w", group, err)
	}
	if len(resp.Groups) != 1 {
		return nil, fmt.Errorf("delete group %q: the answer has %d groups", group, len(resp.Groups))
	}
	if err := refusal(resp.Groups[0].ErrorCode, nil); err != nil {
		return nil, err
	}
	c.logAction(r, "delete group", "", "group", group)
	return map[string]string{"deleted": group}, nil
}

// parseMillis reads a time: ms since the epoch, or RFC 3339.
func parseMillis(value string) (int64, error) {
	if ms, err := strconv.ParseInt(value, 10, 64); err == nil {
		return ms, nil
	}
	t, err := time.Parse(time.RFC3339Nano, value)
	if err != nil {
		return 0, badRequest("time %q: give ms since the epoch or RFC 3339 (2006-01-02T15:04:05Z)", value)
	}
	return t.UnixMilli(), nil
}
