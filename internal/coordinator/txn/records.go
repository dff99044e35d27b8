package txn

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// __transaction_state records are Kafka's TransactionLogKey (key version
// 0, which is also the coordinator record type) and TransactionLogValue:
// v0 for transaction.version 0, v1 (flexible, with tagged fields
// PreviousProducerId, NextProducerId, ClientTransactionVersion) from
// transaction.version 1, so Kafka's tools read Gregor's records.
const (
	txnKeyVersion = 0
	maxValueVer   = 1
)

// Key is the __transaction_state key of a transactional id.
func Key(transactionalID string) []byte {
	k := kmsg.NewTxnMetadataKey()
	k.Version, k.TransactionalID = txnKeyVersion, transactionalID
	return k.AppendTo(nil)
}

// Value encodes a transactional id's state as a TransactionLogValue of the
// given version (0 or 1). An Empty transaction carries a null partition
// list, as Kafka writes it.
func Value(m Metadata, version int16) []byte {
	v := kmsg.NewTxnMetadataValue()
	v.Version = version
	v.ProducerID, v.ProducerEpoch, v.TimeoutMillis = m.ProducerID, m.ProducerEpoch, m.TimeoutMs
	v.State = kmsg.TransactionState(m.State)
	v.LastUpdateTimestamp, v.StartTimestamp = m.LastUpdateTimestamp, m.TxnStartTimestamp
	if m.State != Empty {
		v.Topics = []kmsg.TxnMetadataValueTopic{}
		for _, tp := range m.Partitions {
			if n := len(v.Topics); n == 0 || v.Topics[n-1].Topic != tp.Topic {
				v.Topics = append(v.Topics, kmsg.TxnMetadataValueTopic{Topic: tp.Topic, Partitions: []int32{}})
			}
			last := &v.Topics[len(v.Topics)-1]
			last.Partitions = append(last.Partitions, tp.Partition)
		}
	}
	if version >= 1 {
		v.PreviousProducerID, v.NextProducerID = m.PrevProducerID, m.NextProducerID
		v.ClientTransactionVersion = m.ClientTransactionVersion
	}
	return v.AppendTo(nil)
}

// ErrUnknownRecord is returned by Decode for a key or value version this
// coordinator does not know; loading skips such records, as Kafka does.
var ErrUnknownRecord = errors.New("unknown __transaction_state record version")

// Decode reads a __transaction_state record. A tombstone (nil value) gives
// the transactional id and tombstone true. LastProducerEpoch is -1: it is
// not in the record.
func Decode(key, value []byte) (m Metadata, tombstone bool, err error) {
	if len(key) < 2 {
		return Metadata{}, false, fmt.Errorf("__transaction_state key of %d bytes", len(key))
	}
	if v := int16(binary.BigEndian.Uint16(key)); v != txnKeyVersion {
		return Metadata{}, false, fmt.Errorf("%w: key version %d", ErrUnknownRecord, v)
	}
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(key); err != nil {
		return Metadata{}, false, fmt.Errorf("read __transaction_state key: %w", err)
	}
	if value == nil {
		return Metadata{TransactionalID: k.TransactionalID}, true, nil
	}
	if len(value) < 2 {
		return Metadata{}, false, fmt.Errorf("__transaction_state value of %s: %d bytes", k.TransactionalID, len(value))
	}
	if v := int16(binary.BigEndian.Uint16(value)); v < 0 || v > maxValueVer {
		return Metadata{}, false, fmt.Errorf("%w: value version %d of %s", ErrUnknownRecord, v, k.TransactionalID)
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(value); err != nil {
		return Metadata{}, false, fmt.Errorf("read __transaction_state value of %s: %w", k.TransactionalID, err)
	}
	state := State(v.State)
	if state < Empty || state > PrepareEpochFence {
		return Metadata{}, false, fmt.Errorf("__transaction_state value of %s: unknown state %d", k.TransactionalID, v.State)
	}
	m = Metadata{
		TransactionalID: k.TransactionalID, ProducerID: v.ProducerID, PrevProducerID: v.PreviousProducerID,
		NextProducerID: v.NextProducerID, ProducerEpoch: v.ProducerEpoch, LastProducerEpoch: noProducerEpoch,
		TimeoutMs: v.TimeoutMillis, State: state, TxnStartTimestamp: v.StartTimestamp,
		LastUpdateTimestamp: v.LastUpdateTimestamp, ClientTransactionVersion: v.ClientTransactionVersion,
		Partitions: []TopicPartition{},
	}
	if state != Empty {
		for _, t := range v.Topics {
			for _, p := range t.Partitions {
				m.Partitions = append(m.Partitions, TopicPartition{Topic: t.Topic, Partition: p})
			}
		}
		sortPartitions(m.Partitions)
	}
	return m, false, nil
}

// valueVersion is the TransactionLogValue version the cluster's
// transaction.version writes.
func (s *Shard) valueVersion() int16 {
	if s.transactionVersion() >= 1 {
		return 1
	}
	return 0
}

// record is the record that persists next for a transactional id.
func (s *Shard) record(id string, next txnState) Record {
	m := (&txnMetadata{id: id, txnState: next}).snapshot()
	return Record{Key: Key(id), Value: Value(m, s.valueVersion())}
}

// Replay applies one record while the shard loads: the last record of a
// transactional id is its state, a tombstone removes it. Records of
// unknown versions are skipped, as Kafka skips them.
func (s *Shard) Replay(key, value []byte) error {
	m, tombstone, err := Decode(key, value)
	if errors.Is(err, ErrUnknownRecord) {
		return nil
	}
	if err != nil {
		return err
	}
	if tombstone {
		delete(s.txns, m.TransactionalID)
		return nil
	}
	t := &txnMetadata{id: m.TransactionalID, txnState: txnState{
		producerID: m.ProducerID, prevProducerID: m.PrevProducerID, nextProducerID: m.NextProducerID,
		producerEpoch: m.ProducerEpoch, lastProducerEpoch: noProducerEpoch, timeoutMs: m.TimeoutMs, state: m.State,
		partitions: map[TopicPartition]struct{}{}, startTs: m.TxnStartTimestamp, updateTs: m.LastUpdateTimestamp,
		tv: m.ClientTransactionVersion,
	}}
	for _, tp := range m.Partitions {
		t.partitions[tp] = struct{}{}
	}
	s.txns[m.TransactionalID] = t
	return nil
}
