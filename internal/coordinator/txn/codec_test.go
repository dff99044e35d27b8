package txn

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// unhex reads hex with spaces and newlines, one field per group.
func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The expected bytes are laid out by hand from Kafka's TransactionLogKey.json
// and TransactionLogValue.json: int16 version prefix, then the fields in
// schema order; v0 uses int16-length strings and int32-length arrays (-1 for
// null), v1 is flexible: uvarint length+1 compact strings and arrays (0 for
// null), an empty tag section after each struct, and the top-level tagged
// fields (tag, size, value) in tag order at the end.

func TestKeyLayout(t *testing.T) {
	want := unhex(t, "0000 0002 7431") // version 0, "t1"
	if got := Key("t1"); !bytes.Equal(got, want) {
		t.Fatalf("key = %x, want %x", got, want)
	}
}

var ongoing = Metadata{
	TransactionalID: "t1", ProducerID: 1000, PrevProducerID: 999, NextProducerID: -1, ProducerEpoch: 2,
	LastProducerEpoch: -1, TimeoutMs: 60000, State: Ongoing,
	Partitions:        []TopicPartition{{"bar", 3}, {"foo", 0}, {"foo", 1}},
	TxnStartTimestamp: 4000, LastUpdateTimestamp: 5000, ClientTransactionVersion: 2,
}

func TestValueV0Layout(t *testing.T) {
	// version 0, producer id 1000, epoch 2, timeout 60000, Ongoing, 2 topics:
	// "bar" [3], "foo" [0 1], last update 5000, start 4000
	want := unhex(t, "0000 00000000000003e8 0002 0000ea60 01 00000002 0003626172 00000001 00000003 0003666f6f 00000002 00000000 00000001 0000000000001388 0000000000000fa0")
	got := Value(ongoing, 0)
	if !bytes.Equal(got, want) {
		t.Fatalf("value v0 =\n%x, want\n%x", got, want)
	}
	m, tombstone, err := Decode(Key("t1"), want)
	if err != nil || tombstone {
		t.Fatal(err, tombstone)
	}
	// v0 carries no previous/next producer id nor client transaction version.
	exp := ongoing
	exp.PrevProducerID, exp.ClientTransactionVersion = -1, 0
	if !reflect.DeepEqual(m, exp) {
		t.Fatalf("decoded %+v, want %+v", m, exp)
	}
}

func TestValueV1Layout(t *testing.T) {
	want := unhex(t, "0001 00000000000003e8 0002 0000ea60 01"+
		" 03"+ // 2 topics
		" 04626172 02 00000003 00"+ // "bar" [3], no tags
		" 04666f6f 03 00000000 00000001 00"+ // "foo" [0 1], no tags
		" 0000000000001388 0000000000000fa0"+
		" 02"+ // 2 tagged fields: NextProducerId is -1, its default
		" 00 08 00000000000003e7"+ // tag 0 PreviousProducerId 999
		" 02 02 0002") // tag 2 ClientTransactionVersion 2
	got := Value(ongoing, 1)
	if !bytes.Equal(got, want) {
		t.Fatalf("value v1 =\n%x, want\n%x", got, want)
	}
	m, _, err := Decode(Key("t1"), want)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m, ongoing) {
		t.Fatalf("decoded %+v, want %+v", m, ongoing)
	}
}

func TestEmptyValueHasNullPartitions(t *testing.T) {
	empty := Metadata{TransactionalID: "x", ProducerID: 7, PrevProducerID: -1, NextProducerID: 8, ProducerEpoch: 0,
		LastProducerEpoch: -1, TimeoutMs: 1000, State: Empty, Partitions: []TopicPartition{}, TxnStartTimestamp: -1, LastUpdateTimestamp: 9}
	v0 := unhex(t, "0000 0000000000000007 0000 000003e8 00 ffffffff 0000000000000009 ffffffffffffffff")
	if got := Value(empty, 0); !bytes.Equal(got, v0) {
		t.Fatalf("empty v0 = %x, want %x", got, v0)
	}
	v1 := unhex(t, "0001 0000000000000007 0000 000003e8 00 00 0000000000000009 ffffffffffffffff 01 01 08 0000000000000008")
	if got := Value(empty, 1); !bytes.Equal(got, v1) {
		t.Fatalf("empty v1 = %x, want %x", got, v1)
	}
	for _, b := range [][]byte{v0, v1} {
		m, _, err := Decode(Key("x"), b)
		if err != nil {
			t.Fatal(err)
		}
		if m.State != Empty || len(m.Partitions) != 0 || m.ProducerID != 7 || m.LastUpdateTimestamp != 9 {
			t.Fatalf("decoded %+v", m)
		}
	}
}

func TestDecodeTombstoneAndUnknown(t *testing.T) {
	m, tombstone, err := Decode(Key("gone"), nil)
	if err != nil || !tombstone || m.TransactionalID != "gone" {
		t.Fatalf("tombstone: %+v %v %v", m, tombstone, err)
	}
	if _, _, err := Decode(unhex(t, "0001 0001 61"), nil); !errors.Is(err, ErrUnknownRecord) {
		t.Fatalf("unknown key version: %v", err)
	}
	if _, _, err := Decode(Key("a"), unhex(t, "0002 00")); !errors.Is(err, ErrUnknownRecord) {
		t.Fatalf("unknown value version: %v", err)
	}
	if _, _, err := Decode(Key("a"), unhex(t, "0000 0000")); err == nil || errors.Is(err, ErrUnknownRecord) {
		t.Fatalf("truncated value: %v", err)
	}
	bad := Value(Metadata{TransactionalID: "a", State: Empty}, 0)
	bad[2+8+2+4] = 9 // no state 9
	if _, _, err := Decode(Key("a"), bad); err == nil {
		t.Fatal("state 9 decoded")
	}
	// Replay skips unknown versions and fails on garbage.
	s := New(Config{})
	if err := s.Replay(unhex(t, "0005 00"), []byte{1}); err != nil {
		t.Fatal(err)
	}
	if err := s.Replay(Key("a"), []byte{0, 0, 1}); err == nil {
		t.Fatal("garbage value replayed")
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(Key("t1"), Value(ongoing, 1))
	f.Add(Key("t1"), Value(ongoing, 0))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		m, tombstone, err := Decode(key, value)
		if err != nil || tombstone {
			return
		}
		// What decodes re-encodes to something that decodes the same.
		m2, _, err := Decode(Key(m.TransactionalID), Value(m, 1))
		if err != nil {
			t.Fatal(err)
		}
		m.ClientTransactionVersion, m2.ClientTransactionVersion = 0, 0
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("%+v != %+v", m, m2)
		}
	})
}
