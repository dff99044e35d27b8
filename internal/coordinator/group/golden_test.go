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
//	      [retention=MS] [consumer-max-size=N] [consumer-session=MS] [policy=P]   a new empty shard at time 0
//	                           (policy: group.consumer.migration.policy)
//	writer [max-bytes=N] [min-epoch=E]   writes of more bytes fail with MESSAGE_TOO_LARGE (0: no limit);
//	                           transactional writes of an older producer epoch with INVALID_PRODUCER_EPOCH
//	topics NAME=PARTITIONS...  the cluster's topics, for consumer-heartbeat
//	join [member=ID] [instance=I] [client=C] [session=MS] [rebalance=MS] [type=T]
//	     [protocols=(P,..)] [meta=M] [meta-bytes=N] [v=N]
//	     [subscribe=(T,..)] [owned=(T:P+P,..)] [cversion=N]   subscribe: the metadata is a consumer
//	                           protocol subscription (ConsumerProtocolSubscription, version cversion, default 3)
//	sync member=ID gen=N [instance=I] [assign=(ID:BYTES,..)] [cassign=(ID/T:P+P/T:P,..)] [type=T] [protocol=P] [v=N]
//	                           cassign: assignments in the consumer protocol's format
//	                           (assignments in that format are printed decoded: vVERSION[T:P,P ...])
//	heartbeat member=ID gen=N [instance=I]
//	leave members=(ID|ID/INSTANCE|/INSTANCE,..) [v=N]
//	commit [member=ID] [gen=N] [instance=I] offsets=(T/P=O,..) [metadata=S] [metadata-len=N] [v=N]
//	txn-commit producer=PID [epoch=E] [member=ID] [gen=N] [instance=I] offsets=(T/P=O,..) [metadata=S] [v=N]
//	                           TxnOffsetCommit: a transactional batch of the producer
//	txn-marker producer=PID commit|abort   the transaction's marker written, then applied
//	fetch-offsets [topics=(T/P,..)] [require-stable] [member=ID] [epoch=N]   member/epoch: v9's check first
//	offset-delete topics=(T/P,..)
//	describe [v=N]
//	tick [ms=N] | tick deadline    advance the clock, then fire the shard's timers
//	consumer-heartbeat member=ID epoch=N [subscribe=(T,..)] [regex=RE] [owned=(T:P+P,..)] [instance=I]
//	     [rack=R] [rebalance=MS] [assignor=A] [v=N]   owned absent: not reported (nil), except at epoch 0
//	consumer-describe
//	state                      the shard's groups in full, offsets included
//	reload                     a new shard rebuilt from the records and markers written so far (a coordinator failover)
//	delete-group               DeleteGroups for one group
//	subscription-metadata      the last ConsumerGroupPartitionMetadata value written for the group
//	list-groups                ListGroups: every group with its type, state and protocol type
//	share-shard [share-max-size=N] [share-session=MS]   like shard, with share group settings
//	share-heartbeat member=ID epoch=N [subscribe=(T,..)] [rack=R]   ShareGroupHeartbeat; the
//	                           share-partitions it asks to initialize are printed and kept pending
//	share-initialized [failed]  the pending initializations succeed (or fail) and are reported
//	share-describe             ShareGroupDescribe
//	share-delete               DeleteGroups of a share group: its state to delete, then its records
//	                           (share members that left or were fenced are printed as they are told)
func TestGoldenScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		h := newGolden(nil)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return h.run(t, d)
		})
	})
}

type golden struct {
	cfg      Config
	inits    []ShareInit // asked for, not yet reported
	s        *Shard
	now      int64
	seq      int
	log      []logged
	max      int
	minEpoch int16
	topics   Topics
	names    map[[16]byte]string
	out      *strings.Builder
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
			case "policy":
				h.cfg.ConsumerMigrationPolicy = ParseMigrationPolicy(a.Vals[0])
			case "share-max-size":
				h.cfg.ShareMaxSize = int32(v)
			case "share-session":
				h.cfg.ShareSessionTimeoutMs = int32(v)
			}
		}
	}
	h.cfg.Topics = func() Topics { return h.topics }
	h.s = NewShard(h.cfg)
	// The first Tick would run the offsets expiry at once; start its period now.
	h.s.nextExpiry = h.cfg.OffsetsRetentionCheckMs
	return h
}

// logged is one entry of the golden log: a record, of a producer's
// transaction when producerID >= 0, or a transaction marker.
type logged struct {
	Record
	producerID int64
	marker     bool
	commit     bool
}

// Write is the shard's log: it keeps what it writes, refusing batches over
// the size limit as a partition refuses a batch over max.message.bytes.
func (h *golden) Write(rs []Record) error { return h.write(-1, rs) }

// AfterCommit runs fn at once: the golden log commits every write.
func (h *golden) AfterCommit(fn func(error)) { fn(nil) }

// WriteTransactional is Write for a producer's transactional batch; the
// log refuses an epoch older than min-epoch, as a fenced producer's write.
func (h *golden) WriteTransactional(producerID int64, producerEpoch int16, rs []Record) error {
	if producerEpoch < h.minEpoch {
		fmt.Fprintf(h.out, "transactional write of producer %d epoch %d failed: INVALID_PRODUCER_EPOCH\n", producerID, producerEpoch)
		return fmt.Errorf("append to __consumer_offsets: %w", kerr.InvalidProducerEpoch)
	}
	return h.write(producerID, rs)
}

func (h *golden) write(producerID int64, rs []Record) error {
	size := 0
	for _, r := range rs {
		size += len(r.Key) + len(r.Value)
	}
	if h.max > 0 && size > h.max {
		fmt.Fprintf(h.out, "write of %d records (%d bytes) failed: MESSAGE_TOO_LARGE\n", len(rs), size)
		return fmt.Errorf("append to __consumer_offsets: %w", kerr.MessageTooLarge)
	}
	var parts []string
	for _, r := range rs {
		h.log = append(h.log, logged{Record: r, producerID: producerID})
		parts = append(parts, describeRecord(r))
	}
	txn := ""
	if producerID >= 0 {
		txn = fmt.Sprintf(" (transaction of producer %d)", producerID)
	}
	fmt.Fprintf(h.out, "wrote %s%s\n", strings.Join(parts, ", "), txn)
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
		6: "ConsumerGroupTargetAssignmentMetadata", 7: "ConsumerGroupTargetAssignmentMember", 8: "ConsumerGroupCurrentMemberAssignment",
		10: "ShareGroupMemberMetadata", 11: "ShareGroupMetadata", 12: "ShareGroupTargetAssignmentMetadata",
		13: "ShareGroupTargetAssignmentMember", 14: "ShareGroupCurrentMemberAssignment", 15: "ShareGroupStatePartitionMetadata"}
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

func (h *golden) finish(r Result) {
	_ = Finish(h, r, AppendErrorCode)
	for _, in := range r.ShareInit {
		fmt.Fprintf(h.out, "initialize %s %s epoch=%d start=%d\n", in.GroupID, h.topicParts(in.TopicID, in.Partitions), in.StateEpoch, in.StartOffset)
		h.inits = append(h.inits, in)
	}
}

func (h *golden) run(t *testing.T, d *datadriven.TestData) string {
	var out strings.Builder
	h.out = &out
	h.seq++
	groupID := str(d, "group", "g")
	summary := true
	switch d.Cmd {
	case "shard", "share-shard":
		*h = *newGolden(d)
		h.out = &out
		// The shard's view of the topics is this script's, and so is
		// its output.
		h.cfg.Topics = func() Topics { return h.topics }
		h.s.cfg.Topics = h.cfg.Topics
		h.cfg.ShareMemberLeft = func(groupID, memberID string) { fmt.Fprintf(h.out, "member left %s/%s\n", groupID, memberID) }
		h.s.cfg.ShareMemberLeft = h.cfg.ShareMemberLeft
	case "writer":
		h.max = int(num(t, d, "max-bytes", 0))
		h.minEpoch = int16(num(t, d, "min-epoch", 0))
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
		if d.HasArg("subscribe") {
			cm := kmsg.NewConsumerMemberMetadata()
			cm.Version = int16(num(t, d, "cversion", 3))
			cm.Topics = append([]string{}, vals(d, "subscribe")...)
			for _, o := range vals(d, "owned") {
				topic, parts := consumerPartitions(o)
				cm.OwnedPartitions = append(cm.OwnedPartitions, kmsg.ConsumerMemberMetadataOwnedPartition{Topic: topic, Partitions: parts})
			}
			meta = cm.AppendTo(nil)
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
		for _, a := range vals(d, "cassign") {
			fields := strings.Split(a, "/")
			ca := kmsg.ConsumerMemberAssignment{Version: 3}
			for _, f := range fields[1:] {
				topic, parts := consumerPartitions(f)
				ca.Topics = append(ca.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: topic, Partitions: parts})
			}
			ga := kmsg.NewSyncGroupRequestGroupAssignment()
			ga.MemberID, ga.MemberAssignment = fields[0], ca.AppendTo(nil)
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
	case "txn-commit":
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.Version = int16(num(t, d, "v", 4))
		req.TransactionalID = "tx"
		req.ProducerID, req.ProducerEpoch = num(t, d, "producer", 1), int16(num(t, d, "epoch", 0))
		req.Group, req.MemberID, req.InstanceID = groupID, str(d, "member", ""), optStr(d, "instance")
		req.Generation = int32(num(t, d, "gen", -1))
		meta := optStr(d, "metadata")
		for _, o := range vals(d, "offsets") {
			tpart, off, _ := strings.Cut(o, "=")
			topic, part, _ := strings.Cut(tpart, "/")
			p, _ := strconv.Atoi(part)
			offset, _ := strconv.ParseInt(off, 10, 64)
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset, rp.Metadata = int32(p), offset, meta
			if n := len(req.Topics); n > 0 && req.Topics[n-1].Topic == topic {
				req.Topics[n-1].Partitions = append(req.Topics[n-1].Partitions, rp)
				continue
			}
			rt := kmsg.NewTxnOffsetCommitRequestTopic()
			rt.Topic, rt.Partitions = topic, []kmsg.TxnOffsetCommitRequestTopicPartition{rp}
			req.Topics = append(req.Topics, rt)
		}
		h.finish(h.s.TxnOffsetCommit(h.now, req, h.respond(d)))
	case "txn-marker":
		pid, commit := num(t, d, "producer", 1), d.HasArg("commit")
		if commit == d.HasArg("abort") {
			d.Fatalf(t, "txn-marker needs commit or abort")
		}
		h.log = append(h.log, logged{producerID: pid, marker: true, commit: commit})
		fmt.Fprintf(&out, "wrote marker producer=%d commit=%t\n", pid, commit)
		h.s.ReplayEndTxn(pid, commit)
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
				if rp.ErrorCode != 0 {
					fmt.Fprintf(&out, "!%s", errName(rp.ErrorCode))
				}
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
		rg := h.s.DescribeGroup(int16(num(t, d, "v", 5)), groupID)
		fmt.Fprintf(&out, "err=%s state=%s type=%q protocol=%q\n", errName(rg.ErrorCode), rg.State, rg.ProtocolType, rg.Protocol)
		for _, m := range rg.Members {
			fmt.Fprintf(&out, "  %s%s client=%s meta=%s assignment=%s\n", m.MemberID, instance(m.InstanceID), m.ClientID, short(m.ProtocolMetadata), formatAssignment(m.MemberAssignment))
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
		rg := h.s.ConsumerGroupDescribe(1, groupID)
		fmt.Fprintf(&out, "err=%s state=%s epoch=%d assignment-epoch=%d assignor=%s\n", errName(rg.ErrorCode), rg.State, rg.Epoch, rg.AssignmentEpoch, rg.AssignorName)
		for _, m := range rg.Members {
			rack := ""
			if m.RackID != nil {
				rack = " rack=" + *m.RackID
			}
			if m.MemberType == 0 {
				rack += " classic"
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
	case "list-groups":
		for _, lg := range h.s.ListGroups(nil, nil) {
			fmt.Fprintf(&out, "%s type=%s state=%s protocol-type=%q\n", lg.Group, lg.GroupType, lg.GroupState, lg.ProtocolType)
		}
		summary = false
	case "subscription-metadata":
		h.subscriptionMetadata(t, d, &out, groupID)
		summary = false
	case "share-heartbeat":
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.Version, req.GroupID, req.MemberID = 1, groupID, str(d, "member", "")
		req.MemberEpoch = int32(num(t, d, "epoch", 0))
		req.RackID = optStr(d, "rack")
		if d.HasArg("subscribe") {
			req.SubscribedTopicNames = append([]string{}, vals(d, "subscribe")...)
		}
		h.finish(h.s.ShareGroupHeartbeat(h.now, req, str(d, "client", "c"), "/127.0.0.1", h.topics, h.respond(d)))
	case "share-initialized":
		inits := h.inits
		h.inits = nil
		for _, in := range inits {
			h.finish(h.s.ShareGroupStateInitialized(h.now, in.GroupID, in.TopicID, in.Partitions, !d.HasArg("failed")))
		}
	case "share-describe":
		rg := h.s.ShareGroupDescribe(groupID)
		fmt.Fprintf(&out, "err=%s", errName(rg.ErrorCode))
		if rg.ErrorMessage != nil {
			fmt.Fprintf(&out, " (%s)", *rg.ErrorMessage)
		}
		fmt.Fprintf(&out, " state=%s epoch=%d assignment-epoch=%d assignor=%s\n", rg.GroupState, rg.GroupEpoch, rg.AssignmentEpoch, rg.Assignor)
		for _, m := range rg.Members {
			var parts []string
			for _, tp := range m.Assignment.TopicPartitions {
				parts = append(parts, h.topicParts(tp.TopicID, tp.Partitions))
			}
			fmt.Fprintf(&out, "  %s epoch=%d subscribed=%v assigned=[%s]\n", m.MemberID, m.MemberEpoch, m.SubscribedTopicNames, strings.Join(parts, " "))
		}
		summary = false
	case "share-delete":
		parts, code, r := h.s.ShareGroupStateToDelete(groupID)
		h.finish(r)
		if code == 0 {
			ids := make([][16]byte, 0, len(parts))
			for id := range parts {
				ids = append(ids, id)
			}
			sort.Slice(ids, func(i, j int) bool { return string(ids[i][:]) < string(ids[j][:]) })
			for _, id := range ids {
				fmt.Fprintf(&out, "delete state %s\n", h.topicParts(id, parts[id]))
			}
			var r Result
			code, r = h.s.DeleteGroup(h.now, groupID)
			h.finish(r)
		}
		fmt.Fprintf(&out, "err=%s\n", errName(code))
	case "reload":
		s := NewShard(h.cfg)
		s.nextExpiry = h.s.nextExpiry
		for _, r := range h.log {
			var err error
			switch {
			case r.marker:
				s.ReplayEndTxn(r.producerID, r.commit)
			case r.producerID >= 0:
				err = s.ReplayTransactional(h.now, r.producerID, r.Key, r.Value)
			default:
				err = s.Replay(h.now, r.Key, r.Value)
			}
			if err != nil {
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

// consumerPartitions reads T:P+P.
func consumerPartitions(s string) (string, []int32) {
	topic, parts, _ := strings.Cut(s, ":")
	var out []int32
	for _, p := range strings.Split(parts, "+") {
		if p == "" {
			continue
		}
		n, _ := strconv.Atoi(p)
		out = append(out, int32(n))
	}
	return topic, out
}

// formatAssignment shows an assignment in the consumer protocol's format
// decoded, anything else quoted.
func formatAssignment(b []byte) string {
	var a kmsg.ConsumerMemberAssignment
	if len(b) >= 6 && a.ReadFrom(b) == nil && string(a.AppendTo(nil)) == string(b) {
		var parts []string
		for _, t := range a.Topics {
			var ps []string
			for _, p := range t.Partitions {
				ps = append(ps, strconv.Itoa(int(p)))
			}
			parts = append(parts, t.Topic+":"+strings.Join(ps, ","))
		}
		return fmt.Sprintf("v%d[%s]", a.Version, strings.Join(parts, " "))
	}
	return strconv.Quote(string(b))
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
