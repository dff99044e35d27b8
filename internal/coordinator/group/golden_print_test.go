package group

// The golden scripts' printing: answers, group summaries and full state.

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *golden) formatResponse(r kmsg.Response) string {
	switch r := r.(type) {
	case *kmsg.JoinGroupResponse:
		s := fmt.Sprintf("JoinGroup err=%s gen=%d member=%s", errName(r.ErrorCode), r.Generation, r.MemberID)
		if r.ErrorCode != 0 {
			return s
		}
		s += fmt.Sprintf(" leader=%s protocol=%s", r.LeaderID, deref(r.Protocol))
		if r.SkipAssignment {
			s += " skip-assignment"
		}
		if len(r.Members) > 0 {
			var ms []string
			for _, m := range r.Members {
				ms = append(ms, m.MemberID+instance(m.InstanceID)+":"+short(m.ProtocolMetadata))
			}
			s += " members=[" + strings.Join(ms, " ") + "]"
		}
		return s
	case *kmsg.SyncGroupResponse:
		if r.ErrorCode != 0 {
			return "SyncGroup err=" + errName(r.ErrorCode)
		}
		return fmt.Sprintf("SyncGroup err=NONE protocol=%s assignment=%s", deref(r.Protocol), formatAssignment(r.MemberAssignment))
	case *kmsg.HeartbeatResponse:
		return "Heartbeat err=" + errName(r.ErrorCode)
	case *kmsg.LeaveGroupResponse:
		s := "LeaveGroup err=" + errName(r.ErrorCode)
		for _, m := range r.Members {
			s += fmt.Sprintf(" %s%s:%s", m.MemberID, instance(m.InstanceID), errName(m.ErrorCode))
		}
		return s
	case *kmsg.OffsetCommitResponse:
		s := "OffsetCommit"
		for _, rt := range r.Topics {
			for _, rp := range rt.Partitions {
				s += fmt.Sprintf(" %s/%d:%s", rt.Topic, rp.Partition, errName(rp.ErrorCode))
			}
		}
		return s
	case *kmsg.TxnOffsetCommitResponse:
		s := "TxnOffsetCommit"
		for _, rt := range r.Topics {
			for _, rp := range rt.Partitions {
				s += fmt.Sprintf(" %s/%d:%s", rt.Topic, rp.Partition, errName(rp.ErrorCode))
			}
		}
		return s
	case *kmsg.OffsetDeleteResponse:
		s := "OffsetDelete err=" + errName(r.ErrorCode)
		for _, rt := range r.Topics {
			for _, rp := range rt.Partitions {
				s += fmt.Sprintf(" %s/%d:%s", rt.Topic, rp.Partition, errName(rp.ErrorCode))
			}
		}
		return s
	case *kmsg.ShareGroupHeartbeatResponse:
		s := fmt.Sprintf("ShareGroupHeartbeat err=%s", errName(r.ErrorCode))
		if r.ErrorCode != 0 {
			if r.ErrorMessage != nil {
				s += fmt.Sprintf(" (%s)", *r.ErrorMessage)
			}
			return s
		}
		s += fmt.Sprintf(" member=%s epoch=%d interval=%d", deref(r.MemberID), r.MemberEpoch, r.HeartbeatIntervalMillis)
		if r.Assignment != nil {
			var parts []string
			for _, t := range r.Assignment.TopicPartitions {
				parts = append(parts, h.topicParts(t.TopicID, t.Partitions))
			}
			s += " assignment=[" + strings.Join(parts, " ") + "]"
		}
		return s
	case *kmsg.ConsumerGroupHeartbeatResponse:
		s := fmt.Sprintf("ConsumerGroupHeartbeat err=%s", errName(r.ErrorCode))
		if r.ErrorCode != 0 {
			if r.ErrorMessage != nil {
				s += fmt.Sprintf(" (%s)", *r.ErrorMessage)
			}
			return s
		}
		s += fmt.Sprintf(" member=%s epoch=%d", deref(r.MemberID), r.MemberEpoch)
		if r.Assignment != nil {
			var parts []string
			for _, t := range r.Assignment.Topics {
				parts = append(parts, h.topicParts(t.TopicID, t.Partitions))
			}
			s += " assignment=[" + strings.Join(parts, " ") + "]"
		}
		return s
	}
	return fmt.Sprintf("%T", r)
}

func deref(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}

func (h *golden) topicParts(id [16]byte, ps []int32) string {
	var s []string
	for _, p := range ps {
		s = append(s, strconv.Itoa(int(p)))
	}
	return h.names[id] + ":" + strings.Join(s, ",")
}

func (h *golden) kmsgAssignment(ts []kmsg.AssignmentTopicPartition) string {
	var parts []string
	for _, t := range ts {
		parts = append(parts, h.topicParts(t.TopicID, t.Partitions))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func (h *golden) assignmentString(a assignment) string {
	ids, parts := a.byTopic()
	var out []string
	for _, id := range ids {
		out = append(out, h.topicParts(id, parts[id]))
	}
	return "[" + strings.Join(out, " ") + "]"
}

// summary is one line per group: what a reader checks after each step.
func (h *golden) summary(out *strings.Builder) {
	defer h.shareSummary(out)
	for _, id := range h.s.sortedGroupIDs() {
		g := h.s.groups[id]
		name := id
		if name == "" {
			name = "<empty>"
		}
		if c := g.consumer; c != nil && len(g.members) == 0 {
			var ms []string
			for _, mid := range c.sortedMembers() {
				m := c.members[mid]
				classic := ""
				if m.classic != nil {
					classic = "[classic]"
				}
				ms = append(ms, fmt.Sprintf("%s%s@%d:%s%s", mid, instance(m.instanceID), m.epoch, m.state, classic))
			}
			fmt.Fprintf(out, "> %s: consumer %s epoch=%d assignment-epoch=%d members=[%s]%s\n", name, c.state(), c.epoch, c.assignmentEpoch, strings.Join(ms, " "), offsetsString(g))
			continue
		}
		var ms []string
		for _, mid := range g.order {
			ms = append(ms, mid+instance(g.members[mid].instanceID))
		}
		fmt.Fprintf(out, "> %s: %s gen=%d", name, g.state, g.generation)
		if g.protocolType != "" || g.protocolName != "" {
			fmt.Fprintf(out, " protocol=%s/%s", g.protocolType, g.protocolName)
		}
		if g.leader != "" {
			fmt.Fprintf(out, " leader=%s", g.leader)
		}
		fmt.Fprintf(out, " members=[%s]%s\n", strings.Join(ms, " "), offsetsString(g))
	}
}

func offsetsString(g *group) string {
	var ps []string
	for topic, parts := range g.offsets {
		for p, c := range parts {
			ps = append(ps, fmt.Sprintf("%s/%d=%d", topic, p, c.offset))
		}
	}
	if len(ps) == 0 {
		return txnOffsetsString(g)
	}
	sort.Strings(ps)
	return " offsets=[" + strings.Join(ps, " ") + "]" + txnOffsetsString(g)
}

// txnOffsetsString shows the open transactions' offsets: producer:T/P=O.
func txnOffsetsString(g *group) string {
	var ps []string
	for pid, byTopic := range g.txnOffsets {
		if len(byTopic) == 0 {
			ps = append(ps, fmt.Sprintf("%d:-", pid))
		}
		for topic, parts := range byTopic {
			for p, c := range parts {
				ps = append(ps, fmt.Sprintf("%d:%s/%d=%d", pid, topic, p, c.offset))
			}
		}
	}
	if len(ps) == 0 {
		return ""
	}
	sort.Strings(ps)
	return " txn=[" + strings.Join(ps, " ") + "]"
}

// state prints the groups in full.
func (h *golden) state(out *strings.Builder) {
	fmt.Fprintf(out, "now=%d next-deadline=%d\n", h.now, h.s.NextDeadline())
	for _, id := range h.s.sortedGroupIDs() {
		g := h.s.groups[id]
		fmt.Fprintf(out, "group %q: %s since %d gen=%d type=%q protocol=%q leader=%q\n", id, g.state, g.stateTimestamp, g.generation, g.protocolType, g.protocolName, g.leader)
		if g.state == PreparingRebalance {
			fmt.Fprintf(out, "  join deadline=%d\n", g.joinDeadline)
		}
		if len(g.pendingSync) > 0 {
			var ps []string
			for p := range g.pendingSync {
				ps = append(ps, p)
			}
			sort.Strings(ps)
			fmt.Fprintf(out, "  pending sync=%v deadline=%d\n", ps, g.syncDeadline)
		}
		if len(g.pending) > 0 {
			var ps []string
			for p := range g.pending {
				ps = append(ps, p)
			}
			sort.Strings(ps)
			fmt.Fprintf(out, "  pending members=%v\n", ps)
		}
		for _, mid := range g.order {
			m := g.members[mid]
			var waits []string
			if m.joinReply != nil {
				waits = append(waits, "awaiting-join")
			}
			if m.syncReply != nil {
				waits = append(waits, "awaiting-sync")
			}
			fmt.Fprintf(out, "  member %s%s session=%d rebalance=%d due=%d assignment=%s %s\n", mid, instance(m.instanceID),
				m.sessionTimeoutMs, m.rebalanceTimeoutMs, m.heartbeatDue, formatAssignment(m.assignment), strings.Join(waits, " "))
		}
		if c := g.consumer; c != nil {
			fmt.Fprintf(out, "  consumer %s epoch=%d assignment-epoch=%d\n", c.state(), c.epoch, c.assignmentEpoch)
			for _, mid := range c.sortedMembers() {
				m := c.members[mid]
				due := fmt.Sprintf("session-due=%d", m.sessionDue)
				if m.revokeDue > 0 {
					due += fmt.Sprintf(" revoke-due=%d", m.revokeDue)
				}
				if cm := m.classic; cm != nil {
					var ps []string
					for _, p := range cm.protocols {
						ps = append(ps, p.name)
					}
					due += fmt.Sprintf(" classic(session=%d protocols=%s)", cm.sessionTimeoutMs, strings.Join(ps, ","))
				}
				if m.joinDue > 0 {
					due += fmt.Sprintf(" join-due=%d", m.joinDue)
				}
				if m.syncDue > 0 {
					due += fmt.Sprintf(" sync-due=%d", m.syncDue)
				}
				fmt.Fprintf(out, "  consumer member %s%s epoch=%d %s assigned=%s revoking=%s target=%s %s\n", mid, instance(m.instanceID),
					m.epoch, m.state, h.assignmentString(m.assigned), h.assignmentString(m.revoking), h.assignmentString(c.target[mid]), due)
			}
		}
		var topics []string
		for topic := range g.offsets {
			topics = append(topics, topic)
		}
		sort.Strings(topics)
		for _, topic := range topics {
			var ps []int
			for p := range g.offsets[topic] {
				ps = append(ps, int(p))
			}
			sort.Ints(ps)
			for _, p := range ps {
				c := g.offsets[topic][int32(p)]
				fmt.Fprintf(out, "  offset %s/%d=%d metadata=%q committed=%d\n", topic, p, c.offset, c.metadata, c.commitTs)
			}
		}
	}
}

// subscriptionMetadata decodes the last ConsumerGroupPartitionMetadata
// record written for the group.
func (h *golden) subscriptionMetadata(t *testing.T, d *datadriven.TestData, out *strings.Builder, groupID string) {
	key := cgKey(cgPartitionMetadataType, groupID, nil)
	for i := len(h.log) - 1; i >= 0; i-- {
		if string(h.log[i].Key) != key {
			continue
		}
		if h.log[i].Value == nil {
			out.WriteString("tombstone\n")
			return
		}
		vd := dec{b: h.log[i].Value}
		fmt.Fprintf(out, "version=%d", vd.i16())
		topics := readSubscription(&vd)
		if vd.err != nil || len(vd.b) != 0 {
			d.Fatalf(t, "bad ConsumerGroupPartitionMetadataValue: %v (%d bytes left)", vd.err, len(vd.b))
		}
		var names []string
		for n := range topics {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(out, " %s(id=%d partitions=%d)", n, topics[n].ID[0], topics[n].Partitions)
		}
		out.WriteString("\n")
		return
	}
	out.WriteString("none\n")
}

// shareSummary is one line per share group: epochs, members with their
// epochs and assignments, and the initializing and initialized partitions.
func (h *golden) shareSummary(out *strings.Builder) {
	topics := func(ts map[[16]byte]*shareTopic) string {
		var parts []string
		for _, id := range sortedTopicIDs(ts) {
			parts = append(parts, h.topicParts(id, sortedPartitions(ts[id].partitions)))
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	for _, id := range h.s.sortedShareGroupIDs() {
		sg := h.s.shares[id]
		var ms []string
		for _, mid := range sg.sortedMembers() {
			m := sg.members[mid]
			ms = append(ms, fmt.Sprintf("%s@%d:%s", mid, m.epoch, h.assignmentString(m.assigned)))
		}
		fmt.Fprintf(out, "> %s: share %s epoch=%d assignment-epoch=%d members=[%s] initializing=%s initialized=%s\n",
			id, sg.state(), sg.epoch, sg.assignmentEpoch, strings.Join(ms, " "), topics(sg.initializing), topics(sg.initialized))
	}
}
