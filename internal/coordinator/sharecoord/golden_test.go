package sharecoord

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/internal/coordinator"
	"gregor/internal/sharestate"
)

// harness drives a Shard as Service does: each operation's records are
// appended to an in-memory log and then replayed into the shard. reload
// rebuilds a shard from the log and checks it equals the live one.
type harness struct {
	cfg   Config
	shard *Shard
	log   []coordinator.Record
	now   int64
	// start is the log start offset: prune moves it to the redundant
	// offset, and reload replays from there.
	start int64
	// deleted are the topics delete-topic removed from the cluster.
	deleted map[byte]bool
}

// TestGolden runs the scripts in testdata: initialize, read, write (batch
// merging, start offset pruning, snapshot cadence, delivery-complete
// count), fencing, summary, delete, and reload after each.
func TestGolden(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var h *harness
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd == "new" {
				h = &harness{now: 1000, cfg: Config{SnapshotUpdateRecordsPerSnapshot: DefaultSnapshotUpdateRecordsPerSnapshot}}
				if d.HasArg("per-snapshot") {
					d.ScanArgs(t, "per-snapshot", &h.cfg.SnapshotUpdateRecordsPerSnapshot)
				}
				if d.HasArg("topics") {
					// topics=N: topic ids 1..N exist, with 4 partitions each.
					var n int
					d.ScanArgs(t, "topics", &n)
					h.deleted = map[byte]bool{}
					deleted := h.deleted
					h.cfg.TopicPartitions = func(id [16]byte) (int32, bool) {
						return 4, id[15] >= 1 && int(id[15]) <= n && id[14] == 0 && !deleted[id[15]]
					}
				}
				h.shard = New(h.cfg)
				return ""
			}
			h.now++
			return h.run(t, d)
		})
	})
}

func (h *harness) key(t *testing.T, d *datadriven.TestData) sharestate.Key {
	k := sharestate.Key{GroupID: "g"}
	if d.HasArg("group") {
		d.ScanArgs(t, "group", &k.GroupID)
	}
	var topic, partition int
	if d.HasArg("topic") {
		d.ScanArgs(t, "topic", &topic)
	} else {
		topic = 1
	}
	if d.HasArg("partition") {
		d.ScanArgs(t, "partition", &partition)
	}
	k.TopicID[15] = byte(topic)
	k.Partition = int32(partition)
	return k
}

func intArg(t *testing.T, d *datadriven.TestData, name string, def int64) int64 {
	if !d.HasArg(name) {
		return def
	}
	var v int64
	d.ScanArgs(t, name, &v)
	return v
}

var stateNames = map[string]sharestate.DeliveryState{"avail": sharestate.Available, "acked": sharestate.Acknowledged, "archived": sharestate.Archived}

func stateName(s sharestate.DeliveryState) string {
	for n, v := range stateNames {
		if v == s {
			return n
		}
	}
	return fmt.Sprintf("state%d", s)
}

// batches reads "first-last state/count" lines.
func batches(t *testing.T, input string) []sharestate.Batch {
	var out []sharestate.Batch
	for _, line := range strings.Split(strings.TrimSpace(input), "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		var b sharestate.Batch
		var state string
		if _, err := fmt.Sscanf(line, "%d-%d %s", &b.FirstOffset, &b.LastOffset, &state); err != nil {
			t.Fatalf("batch %q: %v", line, err)
		}
		name, count, _ := strings.Cut(state, "/")
		s, ok := stateNames[name]
		if !ok {
			t.Fatalf("batch %q: unknown state", line)
		}
		var c int
		fmt.Sscanf(count, "%d", &c)
		b.DeliveryState, b.DeliveryCount = s, int16(c)
		out = append(out, b)
	}
	return out
}

func fmtBatches(bs []sharestate.Batch) string {
	parts := make([]string, len(bs))
	for i, b := range bs {
		parts[i] = fmt.Sprintf("%d-%d %s/%d", b.FirstOffset, b.LastOffset, stateName(b.DeliveryState), b.DeliveryCount)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func fmtKey(k sharestate.Key) string {
	return fmt.Sprintf("%s/t%d/%d", k.GroupID, k.TopicID[15], k.Partition)
}

func fmtErr(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		s := "error " + ke.Message
		if errors.Is(err, kerr.UnknownTopicOrPartition) && ke != kerr.UnknownTopicOrPartition {
			s += " (no state)"
		}
		return s
	}
	return "error " + err.Error()
}

// fmtRecord decodes a record as the log holds it.
func fmtRecord(t *testing.T, r coordinator.Record) string {
	typ, k, err := decodeKey(r.Key)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case typ == recordTypeSnapshot && r.Value == nil:
		return "tombstone " + fmtKey(k)
	case typ == recordTypeSnapshot:
		v, err := decodeSnapshot(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("snapshot %s snapshot-epoch=%d state-epoch=%d leader-epoch=%d start=%d complete=%d written=%d %s",
			fmtKey(k), v.SnapshotEpoch, v.StateEpoch, v.LeaderEpoch, v.StartOffset, v.DeliveryCompleteCount, v.WriteTimestamp, fmtBatches(v.Batches))
	default:
		v, err := decodeUpdate(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("update %s snapshot-epoch=%d leader-epoch=%d start=%d complete=%d %s",
			fmtKey(k), v.SnapshotEpoch, v.LeaderEpoch, v.StartOffset, v.DeliveryCompleteCount, fmtBatches(v.Batches))
	}
}

func (h *harness) apply(t *testing.T, out *strings.Builder, recs []coordinator.Record) {
	for _, r := range recs {
		h.log = append(h.log, r)
		if err := h.shard.Replay(int64(len(h.log)-1), r.Key, r.Value); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(out, "%s\n", fmtRecord(t, r))
	}
}

func (h *harness) run(t *testing.T, d *datadriven.TestData) string {
	var out strings.Builder
	k := h.key(t, d)
	switch d.Cmd {
	case "init":
		recs, err := h.shard.Initialize(k, int32(intArg(t, d, "state-epoch", 0)), intArg(t, d, "start", -1), h.now)
		if err != nil {
			return fmtErr(err) + "\n"
		}
		h.apply(t, &out, recs)
	case "write":
		u := sharestate.Update{
			StateEpoch: int32(intArg(t, d, "state-epoch", 0)), LeaderEpoch: int32(intArg(t, d, "leader-epoch", -1)),
			StartOffset: intArg(t, d, "start", -1), DeliveryCompleteCount: int32(intArg(t, d, "complete", -1)),
			Batches: batches(t, d.Input),
		}
		recs, err := h.shard.Write(k, u, h.now)
		if err != nil {
			return fmtErr(err) + "\n"
		}
		h.apply(t, &out, recs)
	case "read":
		st, recs, err := h.shard.Read(k, int32(intArg(t, d, "leader-epoch", -1)), h.now)
		if err != nil {
			return fmtErr(err) + "\n"
		}
		h.apply(t, &out, recs)
		fmt.Fprintf(&out, "state-epoch=%d leader-epoch=%d start=%d complete=%d %s\n", st.StateEpoch, st.LeaderEpoch, st.StartOffset, st.DeliveryCompleteCount, fmtBatches(st.Batches))
	case "summary":
		s, err := h.shard.ReadSummary(k)
		if err != nil {
			return fmtErr(err) + "\n"
		}
		fmt.Fprintf(&out, "state-epoch=%d leader-epoch=%d start=%d complete=%d\n", s.StateEpoch, s.LeaderEpoch, s.StartOffset, s.DeliveryCompleteCount)
	case "delete":
		recs, err := h.shard.Delete(k)
		if err != nil {
			return fmtErr(err) + "\n"
		}
		if len(recs) == 0 {
			out.WriteString("nothing written\n")
		}
		h.apply(t, &out, recs)
	case "reload":
		fresh := New(h.cfg)
		for i, r := range h.log[h.start:] {
			if err := fresh.Replay(h.start+int64(i), r.Key, r.Value); err != nil {
				t.Fatal(err)
			}
		}
		if !sameState(fresh, h.shard) {
			t.Fatalf("reloaded shard differs from the live one:\nlive %+v\nreloaded %+v", h.shard, fresh)
		}
		h.shard = fresh
		fmt.Fprintf(&out, "reloaded %d records from offset %d: equal to the live state\n", int64(len(h.log))-h.start, h.start)
	case "prune":
		// The pruning tick: cold snapshots, then records before the
		// redundant offset deleted.
		h.apply(t, &out, h.shard.OrphanTombstones())
		h.apply(t, &out, h.shard.ColdSnapshots(h.now, intArg(t, d, "cold-ms", 300000)))
		h.start = max(h.start, h.shard.RedundantOffset(int64(len(h.log))))
		fmt.Fprintf(&out, "log start offset %d of %d\n", h.start, len(h.log))
	case "delete-topic":
		h.deleted[k.TopicID[15]] = true
		return ""
	case "tick":
		h.now += intArg(t, d, "ms", 0)
		return ""
	case "state":
		keys := make([]sharestate.Key, 0, len(h.shard.states))
		for k := range h.shard.states {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return fmtKey(keys[i]) < fmtKey(keys[j]) })
		for _, k := range keys {
			s := h.shard.states[k]
			fmt.Fprintf(&out, "%s state-epoch=%d leader-epoch=%d start=%d complete=%d updates=%d %s\n",
				fmtKey(k), s.StateEpoch, s.LeaderEpoch, s.StartOffset, s.DeliveryCompleteCount, h.shard.updates[k], fmtBatches(s.Batches))
		}
	default:
		t.Fatalf("unknown command %q", d.Cmd)
	}
	return out.String()
}

// sameState compares two shards' state (not their configs: functions
// never compare equal).
func sameState(a, b *Shard) bool {
	return reflect.DeepEqual(a.states, b.states) && reflect.DeepEqual(a.leaderEpochs, b.leaderEpochs) &&
		reflect.DeepEqual(a.stateEpochs, b.stateEpochs) && reflect.DeepEqual(a.updates, b.updates) &&
		reflect.DeepEqual(a.since, b.since)
}
