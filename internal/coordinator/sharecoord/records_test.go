package sharecoord

import (
	"encoding/hex"
	"math/rand"
	"reflect"
	"testing"

	"gregor/internal/sharestate"
)

// TestRecordBytes pins the encoding of a key and values to Kafka's frame:
// record type, int16-length group id, 16-byte topic id, partition; value
// version 0 with compact arrays and DeliveryCompleteCount as tag 0.
func TestRecordBytes(t *testing.T) {
	k := sharestate.Key{GroupID: "g", Partition: 2}
	k.TopicID[15] = 7
	if got, want := hex.EncodeToString(encodeKey(recordTypeUpdate, k)), "0001"+"000167"+"00000000000000000000000000000007"+"00000002"; got != want {
		t.Errorf("update key %s, want %s", got, want)
	}
	u := update{SnapshotEpoch: 1, LeaderEpoch: 2, StartOffset: 3, DeliveryCompleteCount: 4,
		Batches: []sharestate.Batch{{FirstOffset: 5, LastOffset: 6, DeliveryState: sharestate.Acknowledged, DeliveryCount: 1}}}
	want := "0000" + "00000001" + "00000002" + "0000000000000003" +
		"02" + "0000000000000005" + "0000000000000006" + "02" + "0001" + "00" +
		"01" + "00" + "04" + "00000004"
	if got := hex.EncodeToString(encodeUpdate(u)); got != want {
		t.Errorf("update value %s, want %s", got, want)
	}
	// -1 is the count's default: no tagged field.
	u.DeliveryCompleteCount = -1
	if got, want := hex.EncodeToString(encodeUpdate(u)), want[:len(want)-len("01000400000004")]+"00"; got != want {
		t.Errorf("update value without a count %s, want %s", got, want)
	}
}

func TestRecordRoundTrip(t *testing.T) {
	k := sharestate.Key{GroupID: "group-ü", TopicID: [16]byte{1, 2, 3}, Partition: 9}
	for _, typ := range []int16{recordTypeSnapshot, recordTypeUpdate} {
		gotType, gotKey, err := decodeKey(encodeKey(typ, k))
		if err != nil || gotType != typ || gotKey != k {
			t.Fatalf("key type %d: got %d %+v %v", typ, gotType, gotKey, err)
		}
	}
	s := snapshot{SnapshotEpoch: 3, StateEpoch: 4, LeaderEpoch: 5, StartOffset: 6, DeliveryCompleteCount: 7, CreateTimestamp: 8, WriteTimestamp: 9,
		Batches: []sharestate.Batch{{FirstOffset: 6, LastOffset: 8, DeliveryState: sharestate.Archived, DeliveryCount: 5}}}
	if got, err := decodeSnapshot(encodeSnapshot(s)); err != nil || !reflect.DeepEqual(got, s) {
		t.Fatalf("snapshot: got %+v %v", got, err)
	}
	s.Batches = []sharestate.Batch{}
	s.DeliveryCompleteCount = -1
	if got, err := decodeSnapshot(encodeSnapshot(s)); err != nil || !reflect.DeepEqual(got, s) {
		t.Fatalf("snapshot without batches: got %+v %v", got, err)
	}
	if _, _, err := decodeKey(encodeKey(5, k)); !isUnknown(err) {
		t.Fatalf("key type 5: %v, want an unknown record", err)
	}
}

// FuzzDecode feeds arbitrary bytes to the decoders of __share_group_state
// records: an error, never a panic or a huge allocation.
func FuzzDecode(f *testing.F) {
	k := sharestate.Key{GroupID: "g", Partition: 1}
	f.Add(encodeKey(recordTypeSnapshot, k))
	f.Add(encodeSnapshot(snapshot{Batches: []sharestate.Batch{{LastOffset: 3}}, DeliveryCompleteCount: 2}))
	f.Add(encodeUpdate(update{Batches: []sharestate.Batch{{LastOffset: 3}}, DeliveryCompleteCount: -1}))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _, _ = decodeKey(b)
		_, _ = decodeSnapshot(b)
		_, _ = decodeUpdate(b)
		s := New(Config{})
		_ = s.Replay(0, encodeKey(recordTypeUpdate, k), b)
		_ = s.Replay(1, b, b)
	})
}

// TestCombineBatchesModel checks the merge against a per-offset model:
// each offset keeps the most advanced (delivery count, then state) of the
// batches covering it; offsets below the start offset are dropped; the
// result is sorted, disjoint and joins equal neighbours.
func TestCombineBatchesModel(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	states := []sharestate.DeliveryState{sharestate.Available, sharestate.Acknowledged, sharestate.Archived}
	random := func(n int) []sharestate.Batch {
		var out []sharestate.Batch
		for range n {
			first := int64(rng.Intn(40))
			out = append(out, sharestate.Batch{FirstOffset: first, LastOffset: first + int64(rng.Intn(8)),
				DeliveryState: states[rng.Intn(3)], DeliveryCount: int16(rng.Intn(3))})
		}
		return out
	}
	for i := range 2000 {
		old := combineBatches(nil, random(rng.Intn(6)), -1)
		newer := random(rng.Intn(6))
		start := int64(rng.Intn(50)) - 5
		if start < 0 {
			start = -1
		}
		model := map[int64]sharestate.Batch{}
		for _, b := range append(append([]sharestate.Batch(nil), old...), newer...) {
			for o := b.FirstOffset; o <= b.LastOffset; o++ {
				if cur, ok := model[o]; !ok || !behind(b, cur) {
					model[o] = b
				}
			}
		}
		got := combineBatches(old, newer, start)
		seen := 0
		for j, b := range got {
			if b.FirstOffset > b.LastOffset || j > 0 && got[j-1].LastOffset >= b.FirstOffset {
				t.Fatalf("case %d: not sorted and disjoint: %v", i, got)
			}
			if j > 0 && got[j-1].LastOffset+1 == b.FirstOffset && got[j-1].DeliveryState == b.DeliveryState && got[j-1].DeliveryCount == b.DeliveryCount {
				t.Fatalf("case %d: equal neighbours not joined: %v", i, got)
			}
			for o := b.FirstOffset; o <= b.LastOffset; o++ {
				m, ok := model[o]
				if !ok || start >= 0 && o < start || m.DeliveryState != b.DeliveryState || m.DeliveryCount != b.DeliveryCount {
					t.Fatalf("case %d: offset %d is %v, model %v (ok %v), start %d\nold %v\nnew %v\ngot %v", i, o, b, m, ok, start, old, newer, got)
				}
				seen++
			}
		}
		want := 0
		for o := range model {
			if start < 0 || o >= start {
				want++
			}
		}
		if seen != want {
			t.Fatalf("case %d: %d offsets covered, model %d", i, seen, want)
		}
	}
}
