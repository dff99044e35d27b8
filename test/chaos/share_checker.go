package chaos

import (
	"fmt"
	"sort"
)

// The share-group checker (KIP-932). A share group hands each record to
// one consumer at a time; the consumer accepts it, or releases it for
// another delivery; a record whose acquisition lock expires (its consumer
// died) is delivered again with a higher delivery count, and a record
// delivered delivery.count.limit times and not accepted is archived. So a
// record may be delivered more than once, but once a consumer's
// acceptance was acknowledged by the broker it is never delivered again,
// and no record is accepted twice. Every record ends accepted or archived,
// and the share-partition start offset reaches the end of the log.

// Share anomaly kinds (Lost is shared with the other workloads: a record
// neither accepted nor archived).
const (
	// AcceptedTwice: two acceptances of one record were both acknowledged.
	AcceptedTwice = "accepted-twice"
	// RedeliveredAfterAccept: a record was delivered again after the
	// broker acknowledged a consumer's acceptance of it.
	RedeliveredAfterAccept = "redelivered-after-accept"
	// DeliveredPastLimit: a record was delivered more often than the
	// group's delivery.count.limit, or its delivery count did not grow
	// from one delivery to the next.
	DeliveredPastLimit = "delivered-past-limit"
	// ShareStartBehind: after the run, the share-partition start offset
	// is below the log end: some record was never resolved.
	ShareStartBehind = "share-start-behind"
)

// ShareConfig is what the share-group check needs besides the history.
type ShareConfig struct {
	Topic, Group  string
	DeliveryLimit int32
	// Ends is each partition's log end offset after the producers
	// stopped; StartOffsets the group's share-partition start offsets read
	// once every consumer stopped.
	Ends, StartOffsets map[int32]int64
}

// ShareCounts says how the produced records were resolved.
type ShareCounts struct {
	Records     int // acknowledged sends
	Accepted    int // accepted exactly once, the acceptance acknowledged
	Uncertain   int // last handed to a consumer that died while accepting it (its acceptance may have landed)
	Archived    int // delivered delivery.count.limit times, never accepted
	Redelivered int // delivered more than once
}

func (c ShareCounts) String() string {
	return fmt.Sprintf("records %d: accepted once %d, accepted by a consumer that died before hearing back %d, archived at the delivery limit %d; delivered more than once %d",
		c.Records, c.Accepted, c.Uncertain, c.Archived, c.Redelivered)
}

// CheckShare checks the share-group workload's operations in ops: the
// sends to cfg.Topic and the deliveries and acknowledgements of cfg.Group.
func CheckShare(cfg ShareConfig, ops []Op) (Report, ShareCounts) {
	rep := Report{Faults: map[string]int{}, Ops: map[string]map[Outcome]int{}}
	add := func(kind, format string, args ...any) {
		rep.Anomalies = append(rep.Anomalies, Anomaly{kind, fmt.Sprintf(format, args...)})
	}
	type record struct {
		send       *Op
		deliveries []Op
		acks       []Op
	}
	recs := map[string]*record{}
	get := func(v string) *record {
		if recs[v] == nil {
			recs[v] = &record{}
		}
		return recs[v]
	}
	for i := range ops {
		op := ops[i]
		switch {
		case op.F == FFault:
			rep.Faults[op.Value]++
			continue
		case op.F == FSend && op.Topic == cfg.Topic:
			get(op.Value).send = &ops[i]
		case (op.F == FShareDeliver || op.F == FShareAck) && op.Group == cfg.Group:
			r := get(op.Value)
			if op.F == FShareDeliver {
				r.deliveries = append(r.deliveries, op)
			} else {
				r.acks = append(r.acks, op)
			}
		default:
			continue
		}
		if rep.Ops[op.F] == nil {
			rep.Ops[op.F] = map[Outcome]int{}
		}
		rep.Ops[op.F][op.Outcome]++
	}
	var counts ShareCounts
	values := make([]string, 0, len(recs))
	for v := range recs {
		values = append(values, v)
	}
	sort.Strings(values)
	for _, v := range values {
		r := recs[v]
		if r.send == nil {
			add(UncommittedRead, "share group %s was handed %q, which no producer sent", cfg.Group, v)
			continue
		}
		sent := r.send
		if sent.Outcome == OK {
			counts.Records++
		}
		for _, d := range r.deliveries {
			if sent.Outcome == OK && (d.Partition != sent.Partition || d.Offset != sent.Offset) {
				add(UncommittedRead, "%s: %s was handed %q at %d/%d, acknowledged to %s at %d/%d",
					cfg.Topic, d.Process, v, d.Partition, d.Offset, sent.Process, sent.Partition, sent.Offset)
			}
		}
		if len(r.deliveries) == 0 {
			if sent.Outcome == OK {
				add(Lost, "%s/%d: %q acknowledged at offset %d, never delivered to the share group", cfg.Topic, sent.Partition, v, sent.Offset)
			}
			continue
		}
		sort.SliceStable(r.deliveries, func(i, j int) bool { return r.deliveries[i].Invoke < r.deliveries[j].Invoke })
		if len(r.deliveries) > 1 {
			counts.Redelivered++
		}
		for i, d := range r.deliveries {
			if d.Delivery > cfg.DeliveryLimit {
				add(DeliveredPastLimit, "%q: delivery %d to %s, the limit is %d", v, d.Delivery, d.Process, cfg.DeliveryLimit)
			}
			if i > 0 && d.Delivery <= r.deliveries[i-1].Delivery {
				add(DeliveredPastLimit, "%q: delivery count %d to %s after %d to %s", v, d.Delivery, d.Process,
					r.deliveries[i-1].Delivery, r.deliveries[i-1].Process)
			}
		}
		var accepted []Op
		for _, a := range r.acks {
			if a.Ack == "accept" && a.Outcome == OK {
				accepted = append(accepted, a)
			}
		}
		if len(accepted) > 1 {
			add(AcceptedTwice, "%q: accepted by %s at %v and by %s at %v, both acknowledged", v,
				accepted[0].Process, accepted[0].Complete, accepted[1].Process, accepted[1].Complete)
		}
		for _, a := range accepted {
			for _, d := range r.deliveries {
				if d.Invoke > a.Complete {
					add(RedeliveredAfterAccept, "%q: delivered to %s (delivery %d) at %v, after %s's acceptance was acknowledged at %v",
						v, d.Process, d.Delivery, d.Invoke, a.Process, a.Complete)
				}
			}
		}
		// The record's fate is its last delivery's: accepted (for sure, or
		// by a consumer that died before hearing back), or left unaccepted
		// at the delivery limit (archived). Anything else needed one more
		// delivery that never came.
		last := r.deliveries[len(r.deliveries)-1]
		var lastAck *Op
		for i := range r.acks {
			if a := r.acks[i]; a.Process == last.Process && a.Invoke >= last.Invoke {
				lastAck = &r.acks[i]
			}
		}
		switch {
		case lastAck != nil && lastAck.Ack == "accept" && lastAck.Outcome == OK:
			counts.Accepted++
		case lastAck != nil && lastAck.Ack == "accept":
			counts.Uncertain++
		case last.Delivery >= cfg.DeliveryLimit:
			counts.Archived++
		default:
			how := "never acknowledged"
			if lastAck != nil {
				how = fmt.Sprintf("%s (%s)", lastAck.Ack, lastAck.Outcome)
			}
			add(Lost, "%s/%d: %q (offset %d) last delivered to %s (delivery %d of %d), %s, never delivered again",
				cfg.Topic, last.Partition, v, last.Offset, last.Process, last.Delivery, cfg.DeliveryLimit, how)
		}
	}
	parts := make([]int32, 0, len(cfg.Ends))
	for p := range cfg.Ends {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	for _, p := range parts {
		if start, ok := cfg.StartOffsets[p]; !ok || start < cfg.Ends[p] {
			add(ShareStartBehind, "%s/%d: share group %s's start offset is %d (known %v), the log ends at %d",
				cfg.Topic, p, cfg.Group, start, ok, cfg.Ends[p])
		}
	}
	return rep, counts
}
