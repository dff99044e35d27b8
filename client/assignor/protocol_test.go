package assignor

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"
)

// wire builds bytes the way Kafka's generated ConsumerProtocol* classes
// write them (non-flexible: int16 lengths for strings, int32 for arrays and
// bytes), to check the codec against the schema rather than against itself.
type wire struct{ bytes.Buffer }

func (w *wire) i16(v int16)   { binary.Write(&w.Buffer, binary.BigEndian, v) }
func (w *wire) i32(v int32)   { binary.Write(&w.Buffer, binary.BigEndian, v) }
func (w *wire) str(s string)  { w.i16(int16(len(s))); w.WriteString(s) }
func (w *wire) data(b []byte) { w.i32(int32(len(b))); w.Write(b) }
func (w *wire) topicParts(topic string, ps ...int32) {
	w.str(topic)
	w.i32(int32(len(ps)))
	for _, p := range ps {
		w.i32(p)
	}
}

func TestEncodeSubscriptionMatchesSchema(t *testing.T) {
	s := Subscription{
		Topics:          []string{"foo", "bar"}, // written sorted, as Kafka does
		UserData:        []byte("ud"),
		OwnedPartitions: []TopicPartition{{"foo", 1}, {"bar", 0}, {"foo", 0}},
		Generation:      7,
		Rack:            "rack-a",
	}
	for version := int16(0); version <= 4; version++ {
		var w wire
		w.i16(min(version, 3))
		w.i32(2)
		w.str("bar")
		w.str("foo")
		w.data([]byte("ud"))
		if version >= 1 {
			w.i32(2)
			w.topicParts("bar", 0)
			w.topicParts("foo", 0, 1)
		}
		if version >= 2 {
			w.i32(7)
		}
		if version >= 3 {
			w.str("rack-a")
		}
		got, err := EncodeSubscription(s, version)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, w.Bytes()) {
			t.Errorf("v%d:\n got %x\nwant %x", version, got, w.Bytes())
		}
	}
	if _, err := EncodeSubscription(s, -1); err == nil {
		t.Error("version -1 encoded")
	}
}

func TestSubscriptionRoundTripAllVersions(t *testing.T) {
	s := Subscription{
		Topics:          []string{"a", "b"},
		UserData:        []byte{1, 2, 3},
		OwnedPartitions: []TopicPartition{{"a", 0}, {"b", 2}},
		Generation:      3,
		Rack:            "r1",
	}
	for version := int16(0); version <= 3; version++ {
		b, err := EncodeSubscription(s, version)
		if err != nil {
			t.Fatal(err)
		}
		got, v, err := DecodeSubscription(b)
		if err != nil {
			t.Fatalf("v%d: %v", version, err)
		}
		want := Subscription{Topics: s.Topics, UserData: s.UserData, Generation: -1}
		if version >= 1 {
			want.OwnedPartitions = s.OwnedPartitions
		}
		if version >= 2 {
			want.Generation = s.Generation
		}
		if version >= 3 {
			want.Rack = s.Rack
		}
		if v != version || !slices.Equal(got.Topics, want.Topics) || !bytes.Equal(got.UserData, want.UserData) ||
			!slices.Equal(got.OwnedPartitions, want.OwnedPartitions) || got.Generation != want.Generation || got.Rack != want.Rack {
			t.Errorf("v%d: got %+v (version %d), want %+v", version, got, v, want)
		}
	}
}

func TestDecodeSubscriptionEdgeCases(t *testing.T) {
	// Null user data and an empty rack (which Kafka reads as no rack).
	var w wire
	w.i16(3)
	w.i32(1)
	w.str("t")
	w.i32(-1)
	w.i32(0)
	w.i32(-1)
	w.str("")
	got, _, err := DecodeSubscription(w.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if got.UserData != nil || got.Rack != "" || got.Generation != -1 || len(got.OwnedPartitions) != 0 {
		t.Errorf("got %+v", got)
	}

	// A future version is read with the newest known layout; its extra
	// trailing field is ignored (Kafka's deserializeFutureSubscriptionVersion).
	var f wire
	f.i16(99)
	f.i32(1)
	f.str("topic")
	f.i32(-1)
	f.i32(1)
	f.topicParts("topic", 1)
	f.i32(5)
	f.str("rack")
	f.i32(12345) // a field version 99 added
	got, v, err := DecodeSubscription(f.Bytes())
	if err != nil {
		t.Fatalf("future version: %v", err)
	}
	if v != 99 || got.Generation != 5 || got.Rack != "rack" || !slices.Equal(got.OwnedPartitions, []TopicPartition{{"topic", 1}}) {
		t.Errorf("future version: got %+v", got)
	}

	for name, b := range map[string][]byte{
		"empty":             nil,
		"header only":       {0, 0},
		"negative version":  {0xff, 0xff, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff},
		"truncated topics":  {0, 0, 0, 0, 0, 5, 0, 1, 'a'},
		"huge topics count": {0, 0, 0x7f, 0xff, 0xff, 0xff},
	} {
		if _, _, err := DecodeSubscription(b); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

func TestAssignmentCodec(t *testing.T) {
	tps := []TopicPartition{{"foo", 1}, {"bar", 0}, {"foo", 0}}
	for version := int16(0); version <= 3; version++ {
		var w wire
		w.i16(version)
		w.i32(2)
		w.topicParts("bar", 0)
		w.topicParts("foo", 0, 1)
		w.data([]byte("hello"))
		b, err := EncodeAssignment(tps, []byte("hello"), version)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, w.Bytes()) {
			t.Errorf("v%d:\n got %x\nwant %x", version, b, w.Bytes())
		}
		got, ud, v, err := DecodeAssignment(b)
		if err != nil || v != version || string(ud) != "hello" || formatPartitions(got) != "bar-0, foo-0, foo-1" {
			t.Errorf("v%d: decoded %v %q %d %v", version, got, ud, v, err)
		}
	}
	got, ud, _, err := DecodeAssignment(nil)
	if err != nil || len(got) != 0 || ud != nil {
		t.Errorf("empty assignment: %v %v %v", got, ud, err)
	}
	if _, _, _, err := DecodeAssignment([]byte{0, 0, 0, 0, 0, 9}); err == nil {
		t.Error("truncated assignment decoded")
	}
}

func TestStickyUserData(t *testing.T) {
	owned := []TopicPartition{{"t2", 1}, {"t1", 0}}
	// v1: the previous assignment then the generation.
	var w wire
	w.i32(2)
	w.topicParts("t1", 0)
	w.topicParts("t2", 1)
	w.i32(4)
	if got := (Sticky{}).UserData(owned, 4); !bytes.Equal(got, w.Bytes()) {
		t.Errorf("sticky user data v1:\n got %x\nwant %x", got, w.Bytes())
	}
	m := Member{ID: "m", Subscription: Subscription{UserData: w.Bytes()}}
	tps, gen := Sticky{}.memberData(&m)
	if gen != 4 || formatPartitions(tps) != "t1-0, t2-1" {
		t.Errorf("sticky member data: %v gen %d", tps, gen)
	}
	// v0 (no generation) from an old client, and garbage.
	var v0 wire
	v0.i32(1)
	v0.topicParts("t1", 0)
	m.UserData = v0.Bytes()
	if tps, gen = (Sticky{}).memberData(&m); gen != -1 || formatPartitions(tps) != "t1-0" {
		t.Errorf("sticky v0: %v gen %d", tps, gen)
	}
	m.UserData = []byte{1, 2, 3}
	if tps, gen = (Sticky{}).memberData(&m); gen != -1 || len(tps) != 0 {
		t.Errorf("garbage user data: %v gen %d", tps, gen)
	}
	// Kafka's testMemberDataWillHonorUserData: the eager assignor reads the
	// user data, not the subscription's owned partitions and generation.
	m = Member{ID: "m", Subscription: Subscription{UserData: (Sticky{}).UserData([]TopicPartition{{"topic1", 0}, {"topic2", 1}}, 0), Generation: 1}}
	if tps, gen = (Sticky{}).memberData(&m); gen != 0 || formatPartitions(tps) != "topic1-0, topic2-1" {
		t.Errorf("honor user data: %v gen %d", tps, gen)
	}
}

func TestCooperativeStickyUserData(t *testing.T) {
	c := CooperativeSticky{}
	// Kafka's testEncodeAndDecodeGeneration / testDecodeGeneration.
	if ud := c.UserData(nil, -1); !bytes.Equal(ud, []byte{0xff, 0xff, 0xff, 0xff}) {
		t.Errorf("default generation: %x", ud)
	}
	m := Member{ID: "m", Subscription: Subscription{UserData: c.UserData(nil, 10), Generation: -1}}
	if _, gen := c.memberData(&m); gen != 10 {
		t.Errorf("generation from user data: %d", gen)
	}
	m.UserData = nil
	if _, gen := c.memberData(&m); gen != -1 {
		t.Errorf("no user data: generation %d", gen)
	}
	// testMemberDataWithEmptyPartitionsAndHigherGeneration: the
	// subscription's generation and owned partitions win over user data.
	m = Member{ID: "m", Subscription: Subscription{UserData: c.UserData([]TopicPartition{{"topic1", 0}}, 0), Generation: 1}}
	if tps, gen := c.memberData(&m); gen != 1 || len(tps) != 0 {
		t.Errorf("subscription generation: %v %d", tps, gen)
	}
}

func FuzzDecodeSubscription(f *testing.F) {
	b, _ := EncodeSubscription(Subscription{Topics: []string{"a"}, OwnedPartitions: []TopicPartition{{"a", 1}}, Generation: 2, Rack: "r"}, 3)
	f.Add(b)
	f.Add([]byte{0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, v, err := DecodeSubscription(b)
		if err != nil {
			return
		}
		again, err := EncodeSubscription(s, v)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if _, _, err := DecodeSubscription(again); err != nil {
			t.Fatalf("decode of re-encoded: %v", err)
		}
	})
}

func FuzzDecodeAssignment(f *testing.F) {
	b, _ := EncodeAssignment([]TopicPartition{{"a", 1}}, []byte("x"), 3)
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		tps, ud, v, err := DecodeAssignment(b)
		if err != nil {
			return
		}
		again, err := EncodeAssignment(tps, ud, v)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if _, _, _, err := DecodeAssignment(again); err != nil {
			t.Fatalf("decode of re-encoded: %v", err)
		}
	})
}
