package txn

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// seqProducerIDs hands out ids in order; failNext makes the next call fail
// as a full producer id block does.
type seqProducerIDs struct {
	next     int64
	failNext bool
}

func (p *seqProducerIDs) Generate() (int64, error) {
	if p.failNext {
		p.failNext = false
		return -1, fmt.Errorf("no block: %w", kerr.CoordinatorLoadInProgress)
	}
	p.next++
	return p.next - 1, nil
}

// harness drives a Shard the way the coordinator runtime does: write the
// records (to an in-memory log), finish, and remember the markers sent.
type harness struct {
	cfg       Config
	pids      *seqProducerIDs
	shard     *Shard
	log       []Record
	failWrite error
	// pending markers: transactional id -> the entry sent
	markers map[string]Markers
}

func newHarness(t *testing.T, d *datadriven.TestData) *harness {
	h := &harness{pids: &seqProducerIDs{next: 1000}, markers: map[string]Markers{}}
	h.cfg = Config{CoordinatorEpoch: 5, ProducerIDs: h.pids}
	scanInt := func(key string, set func(int64)) {
		if d.HasArg(key) {
			var v int64
			d.ScanArgs(t, key, &v)
			set(v)
		}
	}
	scanInt("tv", func(v int64) { tv := int16(v); h.cfg.TransactionVersion = func() int16 { return tv } })
	scanInt("max-timeout", func(v int64) { h.cfg.TransactionMaxTimeoutMs = int32(v) })
	scanInt("expiration", func(v int64) { h.cfg.TransactionalIDExpirationMs = v })
	scanInt("abort-interval", func(v int64) { h.cfg.AbortTimedOutTransactionsIntervalMs = v })
	scanInt("expire-interval", func(v int64) { h.cfg.RemoveExpiredTransactionalIDsIntervalMs = v })
	scanInt("next-pid", func(v int64) { h.pids.next = v })
	h.shard = New(h.cfg)
	return h
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

func fmtPartitions(tps []TopicPartition) string {
	s := make([]string, len(tps))
	for i, tp := range tps {
		s[i] = fmt.Sprintf("%s-%d", tp.Topic, tp.Partition)
	}
	return "[" + strings.Join(s, " ") + "]"
}

func fmtMetadata(m Metadata) string {
	return fmt.Sprintf("%s pid=%d prev=%d next=%d epoch=%d last=%d timeout=%d state=%s start=%d update=%d tv=%d parts=%s",
		m.TransactionalID, m.ProducerID, m.PrevProducerID, m.NextProducerID, m.ProducerEpoch, m.LastProducerEpoch,
		m.TimeoutMs, m.State, m.TxnStartTimestamp, m.LastUpdateTimestamp, m.ClientTransactionVersion, fmtPartitions(m.Partitions))
}

// run writes a Result's records, finishes it and prints what happened.
func (h *harness) run(b *strings.Builder, r Result) Outcome {
	var werr error
	if len(r.Records) > 0 {
		werr, h.failWrite = h.failWrite, nil
	}
	for _, rec := range r.Records {
		m, tombstone, err := Decode(rec.Key, rec.Value)
		switch {
		case err != nil:
			fmt.Fprintf(b, "bad record: %v\n", err)
		case tombstone:
			fmt.Fprintf(b, "write: tombstone %s\n", m.TransactionalID)
		default:
			// the log does not carry the last epoch
			line := strings.Replace(fmtMetadata(m), " last=-1", "", 1)
			fmt.Fprintf(b, "write: %s\n", line)
		}
	}
	if werr != nil {
		fmt.Fprintf(b, "write failed: %v\n", werr)
	} else {
		h.log = append(h.log, r.Records...)
	}
	o := r.Finish(werr)
	for _, m := range o.Markers {
		fmt.Fprintf(b, "markers: %s commit=%t pid=%d epoch=%d coord-epoch=%d tv=%d %s\n",
			m.TransactionalID, m.Commit, m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch, m.TransactionVersion, fmtPartitions(m.Partitions))
		h.markers[m.TransactionalID] = m
	}
	return o
}

func (h *harness) respond(b *strings.Builder, r Result) {
	o := h.run(b, r)
	fmt.Fprintf(b, "response: %s pid=%d epoch=%d\n", errName(o.ErrorCode), o.ProducerID, o.ProducerEpoch)
}

func parsePartitions(t *testing.T, d *datadriven.TestData, key string) []TopicPartition {
	arg, ok := d.Arg(key)
	if !ok {
		d.Fatalf(t, "missing %s", key)
	}
	var out []TopicPartition
	for _, v := range arg.Vals {
		i := strings.LastIndexByte(v, '-')
		p, err := strconv.Atoi(v[i+1:])
		if i < 0 || err != nil {
			d.Fatalf(t, "bad partition %q", v)
		}
		out = append(out, TopicPartition{Topic: v[:i], Partition: int32(p)})
	}
	return out
}

func TestGolden(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var h *harness
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			var b strings.Builder
			var now, pid, epoch, version int64
			var txnID string
			d.MaybeScanArgs(t, "now", &now)
			d.MaybeScanArgs(t, "txn", &txnID)
			d.MaybeScanArgs(t, "pid", &pid)
			d.MaybeScanArgs(t, "epoch", &epoch)
			d.MaybeScanArgs(t, "version", &version)
			switch d.Cmd {
			case "new":
				h = newHarness(t, d)
				return "ok"
			case "init-producer-id":
				req := kmsg.NewInitProducerIDRequest()
				req.Version = 5
				if d.HasArg("version") {
					req.Version = int16(version)
				}
				if d.HasArg("txn") {
					req.TransactionalID = &txnID
				}
				req.TransactionTimeoutMillis = 60000
				if d.HasArg("timeout") {
					var v int64
					d.ScanArgs(t, "timeout", &v)
					req.TransactionTimeoutMillis = int32(v)
				}
				if d.HasArg("pid") {
					req.ProducerID, req.ProducerEpoch = pid, int16(epoch)
				}
				h.respond(&b, h.shard.InitProducerID(now, &req))
			case "add-partitions":
				if !d.HasArg("version") {
					version = 3
				}
				req := AddPartitionsRequest{TransactionalID: txnID, ProducerID: pid, ProducerEpoch: int16(epoch),
					Partitions: parsePartitions(t, d, "parts"), Version: int16(version)}
				h.respond(&b, h.shard.AddPartitions(now, req))
			case "verify":
				req := AddPartitionsRequest{TransactionalID: txnID, ProducerID: pid, ProducerEpoch: int16(epoch),
					Partitions: parsePartitions(t, d, "parts"), Version: 4}
				got := h.shard.VerifyPartitions(req)
				for _, tp := range req.Partitions {
					fmt.Fprintf(&b, "%s-%d: %s\n", tp.Topic, tp.Partition, errName(got[tp]))
				}
			case "add-offsets":
				req := kmsg.NewAddOffsetsToTxnRequest()
				req.Version = 3
				if d.HasArg("version") {
					req.Version = int16(version)
				}
				req.TransactionalID, req.ProducerID, req.ProducerEpoch = txnID, pid, int16(epoch)
				d.ScanArgs(t, "group", &req.Group)
				h.respond(&b, h.shard.AddOffsets(now, &req))
			case "end-txn":
				req := kmsg.NewEndTxnRequest()
				req.Version = 4
				if d.HasArg("version") {
					req.Version = int16(version)
				}
				req.TransactionalID, req.ProducerID, req.ProducerEpoch = txnID, pid, int16(epoch)
				req.Commit = d.HasArg("commit")
				h.respond(&b, h.shard.EndTxn(now, &req))
			case "write-markers":
				// every partition of the sent markers answers (one txn, or all)
				for _, id := range sortedKeys(h.markers) {
					if txnID != "" && id != txnID {
						continue
					}
					m := h.markers[id]
					delete(h.markers, id)
					for _, tp := range m.Partitions {
						r := h.shard.MarkerWritten(now, id, m.ProducerID, m.ProducerEpoch, tp)
						if len(r.Records) > 0 {
							o := h.run(&b, r)
							fmt.Fprintf(&b, "completed %s: %s\n", id, errName(o.ErrorCode))
						}
					}
				}
			case "marker":
				tps := parsePartitions(t, d, "tp")
				r := h.shard.MarkerWritten(now, txnID, pid, int16(epoch), tps[0])
				if len(r.Records) == 0 {
					return "no completion"
				}
				o := h.run(&b, r)
				fmt.Fprintf(&b, "completed %s: %s\n", txnID, errName(o.ErrorCode))
			case "tick":
				for _, r := range h.shard.Tick(now) {
					o := h.run(&b, r)
					if len(r.Records) > 0 {
						fmt.Fprintf(&b, "outcome: %s\n", errName(o.ErrorCode))
					}
				}
				fmt.Fprintf(&b, "next deadline: %d\n", h.shard.NextDeadline())
			case "fail-write":
				name := "NOT_ENOUGH_REPLICAS"
				d.MaybeScanArgs(t, "error", &name)
				for code := int16(1); code < 200; code++ {
					if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok && e.Message == name {
						h.failWrite = fmt.Errorf("append: %w", e)
					}
				}
				if h.failWrite == nil {
					d.Fatalf(t, "unknown error %s", name)
				}
				return "ok"
			case "fail-pid":
				h.pids.failNext = true
				return "ok"
			case "describe":
				st := h.shard.DescribeTransaction(txnID)
				fmt.Fprintf(&b, "%s: %s state=%s pid=%d epoch=%d timeout=%d start=%d",
					st.TransactionalID, errName(st.ErrorCode), st.State, st.ProducerID, st.ProducerEpoch, st.TimeoutMillis, st.StartTimestamp)
				for _, topic := range st.Topics {
					fmt.Fprintf(&b, " %s%v", topic.Topic, topic.Partitions)
				}
				b.WriteString("\n")
			case "list":
				req := kmsg.NewListTransactionsRequest()
				if a, ok := d.Arg("states"); ok {
					req.StateFilters = a.Vals
				}
				if a, ok := d.Arg("pids"); ok {
					for _, v := range a.Vals {
						n, _ := strconv.ParseInt(v, 10, 64)
						req.ProducerIDFilters = append(req.ProducerIDFilters, n)
					}
				}
				d.MaybeScanArgs(t, "duration", &req.DurationFilterMillis)
				if d.HasArg("pattern") {
					var p string
					d.ScanArgs(t, "pattern", &p)
					req.TransactionalIDPattern = &p
				}
				states, unknown, code := h.shard.ListTransactions(now, &req)
				fmt.Fprintf(&b, "error=%s unknown=%v\n", errName(code), unknown)
				for _, st := range states {
					fmt.Fprintf(&b, "%s pid=%d %s\n", st.TransactionalID, st.ProducerID, st.TransactionState)
				}
			case "state":
				for _, m := range h.shard.Snapshot() {
					fmt.Fprintf(&b, "%s\n", fmtMetadata(m))
				}
			case "replay-check":
				return h.replayCheck()
			case "restart-with":
				// a record as an older coordinator left it, then a reload
				var stateName string
				d.ScanArgs(t, "state", &stateName)
				st, ok := ParseState(stateName)
				if !ok {
					d.Fatalf(t, "bad state %s", stateName)
				}
				m := Metadata{TransactionalID: txnID, ProducerID: pid, PrevProducerID: -1, NextProducerID: -1,
					ProducerEpoch: int16(epoch), TimeoutMs: 60000, State: st, TxnStartTimestamp: -1, LastUpdateTimestamp: now}
				if d.HasArg("parts") {
					m.Partitions = parsePartitions(t, d, "parts")
					m.TxnStartTimestamp = now
				}
				if d.HasArg("tv") {
					var v int64
					d.ScanArgs(t, "tv", &v)
					m.ClientTransactionVersion = int16(v)
				}
				h.log = append(h.log, Record{Key: Key(txnID), Value: Value(m, h.shard.valueVersion())})
				fallthrough
			case "restart":
				// a new coordinator loads the partition
				h.shard = h.replayed()
				h.markers = map[string]Markers{}
				for _, m := range h.shard.Snapshot() {
					fmt.Fprintf(&b, "%s\n", fmtMetadata(m))
				}
			default:
				d.Fatalf(t, "unknown command %s", d.Cmd)
			}
			return b.String()
		})
	})
}

func sortedKeys(m map[string]Markers) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (h *harness) replayed() *Shard {
	s := New(h.cfg)
	for _, r := range h.log {
		if err := s.Replay(r.Key, r.Value); err != nil {
			panic(err)
		}
	}
	return s
}

// replayCheck rebuilds the state from the written records and compares it
// with the live state. As in Kafka, the last epoch is never in the log,
// and TransactionLogValue v0 (transaction.version 0) has no previous or
// next producer id and no client transaction version.
func (h *harness) replayCheck() string {
	live := h.shard.Snapshot()
	for i := range live {
		live[i].LastProducerEpoch = -1
		if h.shard.transactionVersion() < 1 {
			live[i].PrevProducerID, live[i].NextProducerID, live[i].ClientTransactionVersion = -1, -1, 0
		}
	}
	loaded := h.replayed().Snapshot()
	if !reflect.DeepEqual(live, loaded) {
		var b strings.Builder
		b.WriteString("MISMATCH\nlive:\n")
		for _, m := range live {
			fmt.Fprintf(&b, "  %s\n", fmtMetadata(m))
		}
		b.WriteString("replayed:\n")
		for _, m := range loaded {
			fmt.Fprintf(&b, "  %s\n", fmtMetadata(m))
		}
		return b.String()
	}
	return fmt.Sprintf("ok: %d transactional ids", len(live))
}
