package group

import (
	"encoding/binary"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestGoldenScripts runs the scripts in testdata: requests to one Shard on a
// clock the script drives, printing every answer as it is delivered (delayed
// JoinGroup and SyncGroup answers appear under the command that completes
// them), the records written, and a summary of each group after the command.
// Rewrite the expected output with:
//
//	go test ./internal/coordinator/group -run TestGoldenScripts -rewrite
//
// Commands (group= defaults to "g"; group=<empty> is the empty group id;
// as=LABEL names a request whose answer may come later, default cmdN):
//
//	shard [max-size=N] [initial-delay=MS] [min-session=MS] [max-session=MS] [metadata-max=N]
//	      [retention=MS] [consumer-max-size=N] [consumer-session=MS]   a new empty shard at time 0
//	writer [max-bytes=N]       writes of more bytes fail with MESSAGE_TOO_LARGE (0: no limit)
//	topics NAME=PARTITIONS...  the cluster's topics, for consumer-heartbeat
//	join [member=ID] [instance=I] [client=C] [session=MS] [rebalance=MS] [type=T]
//	     [protocols=(P,..)] [meta=M] [meta-bytes=N] [v=N]
//	sync member=ID gen=N [instance=I] [assign=(ID:BYTES,..)] [type=T] [protocol=P] [v=N]
//	heartbeat member=ID gen=N [instance=I]
//	leave members=(ID|ID/INSTANCE|/INSTANCE,..) [v=N]
//	commit [member=ID] [gen=N] [instance=I] offsets=(T/P=O,..) [metadata=S] [metadata-len=N] [v=N]
//	fetch-offsets [topics=(T/P,..)] [require-stable] [member=ID] [epoch=N]   member/epoch: v9's check first
//	offset-delete topics=(T/P,..)
//	describe [v=N]
//	tick [ms=N] | tick deadline    advance the clock, then fire the shard's timers
//	consumer-heartbeat member=ID epoch=N [subscribe=(T,..)] [regex=RE] [owned=(T:P+P,..)] [instance=I]
//	     [rack=R] [rebalance=MS] [assignor=A] [v=N]   owned absent: not reported (nil), except at epoch 0
//	consumer-describe
//	state                      the shard's groups in full, offsets included
//	reload                     a new shard rebuilt from the records written so far (a coordinator failover)
//	delete-group               DeleteGroups for one group
//	subscription-metadata      the last ConsumerGroupPartitionMetadata value written for the group
func TestGoldenScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		h := newGolden(nil)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return h.run(t, d)
		})
	})
}

type golden struct {
	cfg    Config
	s      *Shard
	now    int64
	seq    int
	log    []Record
	max    int
	topics Topics
	names  map[[16]byte]string
	out    *strings.Builder
}

func newGolden(d *datadriven.TestData) *golden {
	h := &golden{topics: Topics{}, names: map[[16]byte]string{}}
	n := 0
	h.cfg = Config{
		MinSessionTimeoutMs: 6000, MaxSessionTimeoutMs: 300000, InitialRebalanceDelayMs: 0,
		OffsetMetadataMaxBytes: 4096, OffsetsRetentionMs: 7 * 24 * 3600 * 1000, OffsetsRetentionCheckMs: 600000,
		ConsumerSessionTimeoutMs: 45000, ConsumerHeartbeatIntervalMs: 5000,
		// Deterministic member ids: the client id and a counter.
		NewMemberID: func(clientID string) string { n++; return fmt.Sprintf("%s-%d", clientID, n) },
	}
	if d != nil {
		for _, a := range d.CmdArgs {
			v, _ := strconv.Atoi(a.Vals[0])
			switch a.Key {
			case "max-size":
				h.cfg.MaxSize = v
			case "initial-delay":
				h.cfg.InitialRebalanceDelayMs = int32(v)
			case "min-session":
				h.cfg.MinSessionTimeoutMs = int32(v)
			case "max-session":
				h.cfg.MaxSessionTimeoutMs = int32(v)
			case "metadata-max":
				h.cfg.OffsetMetadataMaxBytes = v
			case "retention":
				h.cfg.OffsetsRetentionMs = int64(v)
			case "consumer-max-size":
				h.cfg.ConsumerMaxSize = int32(v)
			case "consumer-session":
				h.cfg.ConsumerSessionTimeoutMs = int32(v)
			}
		}
	}
	h.s = NewShard(h.cfg)
	// The first Tick would run the offsets expiry at once; start its period now.
	h.s.nextExpiry = h.cfg.OffsetsRetentionCheckMs
	return h
}

// Write is the shard's log: it keeps what it writes, refusing batches over
// the size limit as a partition refuses a batch over max.message.bytes.
func (h *golden) Write(rs []Record) error {
	size := 0
	for _, r := range rs {
		size += len(r.Key) + len(r.Value)
	}
	if h.max > 0 && size > h.max {
		fmt.Fprintf(h.out, "write of %d records (%d bytes) failed: MESSAGE_TOO_LARGE\n", len(rs), size)
		return fmt.Errorf("append to __consumer_offsets: %w", kerr.MessageTooLarge)
	}
	h.log = append(h.log, rs...)
	var parts []string
	for _, r := range rs {
		parts = append(parts, describeRecord(r))
	}
	fmt.Fprintf(h.out, "wrote %s\n", strings.Join(parts, ", "))
	return nil
}

func describeRecord(r Record) string {
	typ := int16(binary.BigEndian.Uint16(r.Key))
	tomb := ""
	if r.Value == nil {
		tomb = " (tombstone)"
	}
	switch typ {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		_ = k.ReadFrom(r.Key)
		if r.Value == nil {
			return fmt.Sprintf("offset %s %s/%d%s", k.Group, k.Topic, k.Partition, tomb)
		}
		var v kmsg.OffsetCommitValue
		_ = v.ReadFrom(r.Value)
		return fmt.Sprintf("offset %s %s/%d=%d", k.Group, k.Topic, k.Partition, v.Offset)
	case 2:
		var k kmsg.GroupMetadataKey
		_ = k.ReadFrom(r.Key)
		if r.Value == nil {
			return "group " + k.Group + tomb
		}
		var v kmsg.GroupMetadataValue
		_ = v.ReadFrom(r.Value)
		return fmt.Sprintf("group %s gen=%d members=%d", k.Group, v.Generation, len(v.Members))
	}
	names := map[int16]string{3: "ConsumerGroupMetadata", 4: "ConsumerGroupPartitionMetadata", 5: "ConsumerGroupMemberMetadata",
		6: "ConsumerGroupTargetAssignmentMetadata", 7: "ConsumerGroupTargetAssignmentMember", 8: "ConsumerGroupCurrentMemberAssignment"}
	return names[typ] + tomb
}

func errName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return e.Message
	}
	return strconv.Itoa(int(code))
}

func str(d *datadriven.TestData, key, def string) string {
	if a, ok := d.Arg(key); ok {
		if len(a.Vals) == 0 {
			return ""
		}
		if a.Vals[0] == "<empty>" {
			return ""
		}
		return a.Vals[0]
	}
	return def
}

func num(t *testing.T, d *datadriven.TestData, key string, def int64) int64 {
	v := str(d, key, "")
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		d.Fatalf(t, "%s=%q: %v", key, v, err)
	}
	return n
}

func optStr(d *datadriven.TestData, key string) *string {
	if !d.HasArg(key) {
		return nil
	}
	v := str(d, key, "")
	return &v
}

func vals(d *datadriven.TestData, key string) []string {
	if a, ok := d.Arg(key); ok {
		return a.Vals
	}
	return nil
}

// respond makes a labelled responder: its answer is printed when delivered.
func (h *golden) respond(d *datadriven.TestData) Responder {
	label := str(d, "as", fmt.Sprintf("%s%d", d.Cmd, h.seq))
	return func(r kmsg.Response) { fmt.Fprintf(h.out, "%s <- %s\n", label, h.formatResponse(r)) }
}

func (h *golden) finish(r Result) { _ = Finish(h, r, AppendErrorCode) }

func (h *golden) run(t *testing.T, d *datadriven.TestData) string {
	var out strings.Builder
	h.out = &out
	h.seq++
	groupID := str(d, "group", "g")
	summary := true
	switch d.Cmd {
	case "shard":
		*h = *newGolden(d)
		h.out = &out
	case "writer":
		h.max = int(num(t, d, "max-bytes", 0))
		summary = false
	case "topics":
		h.topics, h.names = Topics{}, map[[16]byte]string{}
		for i, a := range d.CmdArgs {
			p, _ := strconv.Atoi(a.Vals[0])
			id := [16]byte{byte(i + 1)}
			h.topics[a.Key] = TopicInfo{ID: id, Partitions: int32(p)}
			h.names[id] = a.Key
		}
		summary = false
	case "join":
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version = int16(num(t, d, "v", 9))
		req.Group, req.MemberID, req.InstanceID = groupID, str(d, "member", ""), optStr(d, "instance")
		req.SessionTimeoutMillis = int32(num(t, d, "session", 10000))
		req.RebalanceTimeoutMillis = int32(num(t, d, "rebalance", 30000))
		req.ProtocolType = str(d, "type", "consumer")
		meta := []byte(str(d, "meta", "sub"))
		if n := num(t, d, "meta-bytes", -1); n >= 0 {
			meta = []byte(strings.Repeat("x", int(n)))
		}
		protocols := vals(d, "protocols")
		if protocols == nil {
			protocols = []string{"range"}
		}
		for _, name := range protocols {
			if name == "<none>" {
				continue
			}
			p := kmsg.NewJoinGroupRequestProtocol()
			p.Name, p.Metadata = name, meta
			req.Protocols = append(req.Protocols, p)
		}
		h.finish(h.s.JoinGroup(h.now, req, str(d, "client", "c"), "/127.0.0.1", h.respond(d)))
	case "sync":
		req := kmsg.NewPtrSyncGroupRequest()
		req.Version = int16(num(t, d, "v", 5))
		req.Group, req.MemberID, req.InstanceID = groupID, str(d, "member", ""), optStr(d, "instance")
		req.Generation = int32(num(t, d, "gen", -1))
		req.ProtocolType, req.Protocol = optStr(d, "type"), optStr(d, "protocol")
		for _, a := range vals(d, "assign") {
			id, bytes, _ := strings.Cut(a, ":")
			ga := kmsg.NewSyncGroupRequestGroupAssignment()
			ga.MemberID, ga.MemberAssignment = id, []byte(bytes)
			req.GroupAssignment = append(req.GroupAssignment, ga)
		}
		h.finish(h.s.SyncGroup(h.now, req, h.respond(d)))
	case "heartbeat":
		req := kmsg.NewPtrHeartbeatRequest()
		req.Version = int16(num(t, d, "v", 4))
		req.Group, req.MemberID, req.InstanceID = groupID, str(d, "member", ""), optStr(d, "instance")
		req.Generation = int32(num(t, d, "gen", -1))
		h.respond(d)(h.s.Heartbeat(h.now, req))
	case "leave":
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Version, req.Group = int16(num(t, d, "v", 5)), groupID
		for _, m := range vals(d, "members") {
			id, inst, static := strings.Cut(m, "/")
			lm := kmsg.NewLeaveGroupRequestMember()
			lm.MemberID = id
			if static {
				lm.InstanceID = &inst
			}
			req.Members = append(req.Members, lm)
		}
		if req.Version < 3 && len(req.Members) > 0 {
			req.MemberID, req.Members = req.Members[0].MemberID, nil
		}
		resp, r := h.s.LeaveGroup(h.now, req)
		h.finish(r)
		h.respond(d)(resp)
	case "commit":
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version = int16(num(t, d, "v", 9))
		req.Group, req.MemberID, req.InstanceID = groupID, str(d, "member", ""), optStr(d, "instance")
		req.Generation = int32(num(t, d, "gen", -1))
		req.RetentionTimeMillis = -1
		meta := optStr(d, "metadata")
		if n := num(t, d, "metadata-len", -1); n >= 0 {
			s := strings.Repeat("m", int(n))
			meta = &s
		}
		for _, o := range vals(d, "offsets") {
			tpart, off, _ := strings.Cut(o, "=")
			topic, part, _ := strings.Cut(tpart, "/")
			p, _ := strconv.Atoi(part)
			offset, _ := strconv.ParseInt(off, 10, 64)
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset, rp.Metadata, rp.LeaderEpoch = int32(p), offset, meta, -1
			if n := len(req.Topics); n > 0 && req.Topics[n-1].Topic == topic {
				req.Topics[n-1].Partitions = append(req.Topics[n-1].Partitions, rp)
				continue
			}
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic, rt.Partitions = topic, []kmsg.OffsetCommitRequestTopicPartition{rp}
			req.Topics = append(req.Topics, rt)
		}
		h.finish(h.s.OffsetCommit(h.now, req, h.respond(d)))
	case "fetch-offsets":
		var topics []kmsg.OffsetFetchRequestGroupTopic
		for _, tpart := range vals(d, "topics") {
			topic, part, _ := strings.Cut(tpart, "/")
			p, _ := strconv.Atoi(part)
			if n := len(topics); n > 0 && topics[n-1].Topic == topic {
				topics[n-1].Partitions = append(topics[n-1].Partitions, int32(p))
				continue
			}
			rt := kmsg.NewOffsetFetchRequestGroupTopic()
			rt.Topic, rt.Partitions = topic, []int32{int32(p)}
			topics = append(topics, rt)
		}
		if d.HasArg("member") || d.HasArg("epoch") {
			// OffsetFetch v9 names the member (Kafka's validateOffsetFetch).
			if code := h.s.ValidateOffsetFetch(groupID, optStr(d, "member"), int32(num(t, d, "epoch", -1))); code != 0 {
				fmt.Fprintf(&out, "err=%s\n", errName(code))
				summary = false
				break
			}
		}
		code, got := h.s.FetchOffsets(groupID, topics, d.HasArg("require-stable"))
		fmt.Fprintf(&out, "err=%s", errName(code))
		for _, rt := range got {
			for _, rp := range rt.Partitions {
				fmt.Fprintf(&out, " %s/%d=%d", rt.Topic, rp.Partition, rp.Offset)
				if rp.Metadata != nil && *rp.Metadata != "" {
					fmt.Fprintf(&out, "(%q)", *rp.Metadata)
				}
			}
		}
		out.WriteString("\n")
		summary = false
	case "offset-delete":
		req := kmsg.NewPtrOffsetDeleteRequest()
		req.Group = groupID
		for _, tpart := range vals(d, "topics") {
			topic, part, _ := strings.Cut(tpart, "/")
			p, _ := strconv.Atoi(part)
			rt := kmsg.NewOffsetDeleteRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewOffsetDeleteRequestTopicPartition()
			rp.Partition = int32(p)
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		resp, r := h.s.OffsetDelete(req)
		h.finish(r)
		h.respond(d)(resp)
	case "describe":
		rg := h.s.DescribeGroup(int16(num(t, d, "v", 5)), groupID, false)
		fmt.Fprintf(&out, "err=%s state=%s type=%q protocol=%q\n", errName(rg.ErrorCode), rg.State, rg.ProtocolType, rg.Protocol)
		for _, m := range rg.Members {
			fmt.Fprintf(&out, "  %s%s client=%s meta=%s assignment=%q\n", m.MemberID, instance(m.InstanceID), m.ClientID, short(m.ProtocolMetadata), m.MemberAssignment)
		}
		summary = false
	case "tick":
		if d.HasArg("deadline") {
			if next := h.s.NextDeadline(); next > h.now {
				h.now = next
			}
		} else {
			h.now += num(t, d, "ms", 0)
		}
		fmt.Fprintf(&out, "now=%d\n", h.now)
		h.finish(h.s.Tick(h.now))
	case "consumer-heartbeat":
		req := h.consumerHeartbeat(t, d, groupID)
		h.finish(h.s.ConsumerGroupHeartbeat(h.now, req, str(d, "client", "c"), "/127.0.0.1", h.topics, h.respond(d)))
	case "consumer-describe":
		rg := h.s.ConsumerGroupDescribe(1, groupID, false)
		fmt.Fprintf(&out, "err=%s state=%s epoch=%d assignment-epoch=%d assignor=%s\n", errName(rg.ErrorCode), rg.State, rg.Epoch, rg.AssignmentEpoch, rg.AssignorName)
		for _, m := range rg.Members {
			rack := ""
			if m.RackID != nil {
				rack = " rack=" + *m.RackID
			}
			fmt.Fprintf(&out, "  %s%s%s epoch=%d assigned=%s target=%s\n", m.MemberID, instance(m.InstanceID), rack, m.MemberEpoch,
				h.kmsgAssignment(m.Assignment.TopicPartitions), h.kmsgAssignment(m.TargetAssignment.TopicPartitions))
		}
		summary = false
	case "state":
		h.state(&out)
		summary = false
	case "delete-group":
		code, r := h.s.DeleteGroup(h.now, groupID)
		h.finish(r)
		fmt.Fprintf(&out, "err=%s\n", errName(code))
	case "subscription-metadata":
		h.subscriptionMetadata(t, d, &out, groupID)
		summary = false
	case "reload":
		s := NewShard(h.cfg)
		s.nextExpiry = h.s.nextExpiry
		for _, r := range h.log {
			if err := s.Replay(h.now, r.Key, r.Value); err != nil {
				d.Fatalf(t, "replay: %v", err)
			}
		}
		h.s = s
	default:
		d.Fatalf(t, "unknown command %s", d.Cmd)
	}
	if summary {
		h.summary(&out)
	}
	return out.String()
}

func instance(i *string) string {
	if i == nil {
		return ""
	}
	return "(" + *i + ")"
}

// short shows metadata, cut when long (oversized metadata tests).
func short(b []byte) string {
	if len(b) > 32 {
		return fmt.Sprintf("<%d bytes>", len(b))
	}
	return strconv.Quote(string(b))
}

func (h *golden) consumerHeartbeat(t *testing.T, d *datadriven.TestData, groupID string) *kmsg.ConsumerGroupHeartbeatRequest {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version, req.Group = int16(num(t, d, "v", 1)), groupID
	req.MemberID, req.InstanceID = str(d, "member", ""), optStr(d, "instance")
	req.MemberEpoch = int32(num(t, d, "epoch", 0))
	req.RebalanceTimeoutMillis = -1
	if req.MemberEpoch == 0 {
		req.RebalanceTimeoutMillis = 10000
	}
	req.RebalanceTimeoutMillis = int32(num(t, d, "rebalance", int64(req.RebalanceTimeoutMillis)))
	if d.HasArg("subscribe") {
		req.SubscribedTopicNames = append([]string{}, vals(d, "subscribe")...)
	}
	req.ServerAssignor = optStr(d, "assignor")
	req.SubscribedTopicRegex = optStr(d, "regex")
	req.RackID = optStr(d, "rack")
	if d.HasArg("owned") || req.MemberEpoch == 0 {
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		for _, o := range vals(d, "owned") {
			if o == "" || o == "<none>" {
				continue
			}
			topic, parts, _ := strings.Cut(o, ":")
			rt := kmsg.NewConsumerGroupHeartbeatRequestTopic()
			rt.TopicID = h.topics[topic].ID
			for _, p := range strings.Split(parts, "+") {
				n, _ := strconv.Atoi(p)
				rt.Partitions = append(rt.Partitions, int32(n))
			}
			req.Topics = append(req.Topics, rt)
		}
	}
	return req
}

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
		return fmt.Sprintf("SyncGroup err=NONE protocol=%s assignment=%q", deref(r.Protocol), r.MemberAssignment)
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
	case *kmsg.OffsetDeleteResponse:
		s := "OffsetDelete err=" + errName(r.ErrorCode)
		for _, rt := range r.Topics {
			for _, rp := range rt.Partitions {
				s += fmt.Sprintf(" %s/%d:%s", rt.Topic, rp.Partition, errName(rp.ErrorCode))
			}
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
				ms = append(ms, fmt.Sprintf("%s%s@%d:%s", mid, instance(m.instanceID), m.epoch, m.state))
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
		return ""
	}
	sort.Strings(ps)
	return " offsets=[" + strings.Join(ps, " ") + "]"
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
			fmt.Fprintf(out, "  member %s%s session=%d rebalance=%d due=%d assignment=%q %s\n", mid, instance(m.instanceID),
				m.sessionTimeoutMs, m.rebalanceTimeoutMs, m.heartbeatDue, m.assignment, strings.Join(waits, " "))
		}
		if c := g.consumer; c != nil {
			fmt.Fprintf(out, "  consumer %s epoch=%d assignment-epoch=%d\n", c.state(), c.epoch, c.assignmentEpoch)
			for _, mid := range c.sortedMembers() {
				m := c.members[mid]
				due := fmt.Sprintf("session-due=%d", m.sessionDue)
				if m.revokeDue > 0 {
					due += fmt.Sprintf(" revoke-due=%d", m.revokeDue)
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
