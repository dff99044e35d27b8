//go:build e2e

package test

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// TestTxnBatchUnverified: a transactional batch the transaction coordinator
// never heard of must not open a transaction on the partition, or the last
// stable offset stays pinned and every read_committed consumer stalls. Kafka
// refuses a request holding transactional batches without a transactional
// id with TRANSACTIONAL_ID_AUTHORIZATION_FAILED (KafkaApis), and a
// transactional batch for a partition that was never added to the
// transaction with INVALID_TXN_STATE (KIP-890 verification).
func TestTxnBatchUnverified(t *testing.T) {
	b := startBroker(t)
	cl := newKgo(t, b)
	const topic = "txn-unverified"
	createTopic(t, cl, topic, 1, nil)
	rc := dialRaw(t, b)

	// A producer without a transactional id: an idempotent producer id.
	pid, epoch := initProducerID(t, rc, nil)
	resp := rc.roundTrip(produceRequest(topic, 0, -1, txnBatch(t, pid, epoch, 0, "orphan"))).(*kmsg.ProduceResponse)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Errorf("transactional batch without a transactional id: error %v, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
	}

	// A transactional producer that never added the partition.
	txnID := "never-added"
	tpid, tepoch := initProducerID(t, rc, &txnID)
	req := produceRequest(topic, 0, -1, txnBatch(t, tpid, tepoch, 0, "not-added"))
	req.TransactionID = &txnID
	resp = rc.roundTrip(req).(*kmsg.ProduceResponse)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.InvalidTxnState.Code {
		t.Errorf("transactional batch for a partition not in the transaction: error %v, want INVALID_TXN_STATE", kerr.ErrorForCode(code))
	}

	// Plain records after them are readable at read_committed: nothing
	// pins the last stable offset.
	p := produceRaw(t, rc, topic, buildBatch(t, batchOpts{values: []string{"after"}}))
	if p.ErrorCode != 0 {
		t.Fatalf("plain produce: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	end := listEndOffset(t, rc, topic)
	if lso := listStableOffset(t, rc, topic); lso != end {
		t.Errorf("last stable offset %d, log end %d: an unverified transaction pins it", lso, end)
	}
	consumer := newKgo(t, b, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := ctxT(t, 30*time.Second)
	for got := false; !got; {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read_committed consumer did not receive the plain record within 30s")
		}
		fs.EachRecord(func(r *kgo.Record) { got = got || string(r.Value) == "after" })
	}
}

// TestWriteTxnMarkersClusterActionOnly: WriteTxnMarkers is how a
// coordinator ends a transaction on a partition; a plain client sending it
// could commit or abort other producers' transactions. With an authorizer
// it needs CLUSTER_ACTION (as Kafka); without one it is served only on the
// inter-broker listener.
func TestWriteTxnMarkersClusterActionOnly(t *testing.T) {
	t.Run("no authorizer", func(t *testing.T) {
		b := &broker{t: t, dataDir: t.TempDir(), port: freePort(t)}
		internal := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		ctrl := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		b.args = []string{
			fmt.Sprintf("listeners=PLAINTEXT://%s,INTERNAL://%s,CONTROLLER://%s", b.addr(), internal, ctrl),
			"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
			"controller.quorum.voters=1@" + ctrl,
			"inter.broker.listener.name=INTERNAL",
		}
		b.start()
		t.Cleanup(b.stop)
		const topic = "markers"
		createTopic(t, newKgo(t, b), topic, 1, nil)

		client := dialRaw(t, b)
		before := listEndOffset(t, client, topic)
		if code := writeAbortMarker(t, client, topic); code != kerr.ClusterAuthorizationFailed.Code {
			t.Errorf("WriteTxnMarkers on the client listener: error %v, want CLUSTER_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
		}
		if end := listEndOffset(t, client, topic); end != before {
			t.Errorf("log end moved from %d to %d: a client's marker was written", before, end)
		}

		inter := dialRaw(t, &broker{port: portOf(t, internal)})
		if code := writeAbortMarker(t, inter, topic); code != 0 {
			t.Errorf("WriteTxnMarkers on the inter-broker listener: error %v", kerr.ErrorForCode(code))
		}
		if end := listEndOffset(t, client, topic); end != before+1 {
			t.Errorf("log end %d after the inter-broker marker, want %d", end, before+1)
		}
	})
	t.Run("authorizer", func(t *testing.T) {
		ab := startACLBroker(t, false)
		const topic = "markers"
		createTopic(t, newKgo(t, ab.broker), topic, 1, nil)
		alice := kgoSeeds(t, []string{ab.sasl}, kgo.SASL(plain.Auth{User: "alice", Pass: aclPassword("alice")}.AsMechanism()))
		// Straight to the broker: alice may not describe the topic, which
		// the client's routing by partition leader would need.
		meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctxT(t, 20*time.Second), alice)
		if err != nil || len(meta.Brokers) != 1 {
			t.Fatalf("Metadata: %v %+v", err, meta)
		}
		raw, err := alice.Broker(int(meta.Brokers[0].NodeID)).Request(ctxT(t, 20*time.Second), abortMarkerRequest(topic))
		if err != nil {
			t.Fatalf("WriteTxnMarkers: %v", err)
		}
		kresp := raw.(*kmsg.WriteTxnMarkersResponse)
		if code := kresp.Markers[0].Topics[0].Partitions[0].ErrorCode; code != kerr.ClusterAuthorizationFailed.Code {
			t.Errorf("WriteTxnMarkers from a user without CLUSTER_ACTION: error %v, want CLUSTER_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
		}
	})
}

// portOf is the port of a host:port address.
func portOf(t *testing.T, addr string) int {
	t.Helper()
	var port int
	if _, err := fmt.Sscanf(addr, "127.0.0.1:%d", &port); err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	return port
}

// abortMarkerRequest is a coordinator's abort marker for an unknown
// producer on partition 0 of topic.
func abortMarkerRequest(topic string) *kmsg.WriteTxnMarkersRequest {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = 1
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed = 4242, 0, false
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = topic, []int32{0}
	m.Topics = append(m.Topics, mt)
	req.Markers = append(req.Markers, m)
	return req
}

func writeAbortMarker(t *testing.T, rc *rawConn, topic string) int16 {
	t.Helper()
	resp := rc.roundTrip(abortMarkerRequest(topic)).(*kmsg.WriteTxnMarkersResponse)
	if len(resp.Markers) != 1 || len(resp.Markers[0].Topics) != 1 || len(resp.Markers[0].Topics[0].Partitions) != 1 {
		t.Fatalf("WriteTxnMarkers: unexpected response shape %+v", resp)
	}
	return resp.Markers[0].Topics[0].Partitions[0].ErrorCode
}

// initProducerID asks for a producer id, transactional when txnID is set.
func initProducerID(t *testing.T, rc *rawConn, txnID *string) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = 4
	req.TransactionalID = txnID
	req.TransactionTimeoutMillis = 60000
	req.ProducerID, req.ProducerEpoch = -1, -1
	deadline := time.Now().Add(30 * time.Second)
	if txnID != nil {
		// The transaction state topic is created by the first lookup.
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.Version = 3
		fc.CoordinatorType = 1
		fc.CoordinatorKey = *txnID
		for {
			resp := rc.roundTrip(fc).(*kmsg.FindCoordinatorResponse)
			if resp.ErrorCode == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("FindCoordinator: %v", kerr.ErrorForCode(resp.ErrorCode))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	for {
		resp := rc.roundTrip(req).(*kmsg.InitProducerIDResponse)
		if resp.ErrorCode == 0 {
			return resp.ProducerID, resp.ProducerEpoch
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); !kerr.IsRetriable(err) || time.Now().After(deadline) {
			t.Fatalf("InitProducerId: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// txnBatch is a one-record transactional batch of producer pid.
func txnBatch(t *testing.T, pid int64, epoch int16, seq int32, value string) []byte {
	t.Helper()
	r := kmsg.Record{Value: []byte(value)}
	body := r.AppendTo(nil)
	r.Length = int32(len(body) - 1)
	ts := time.Now().UnixMilli()
	rb := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           0x10, // transactional
		FirstTimestamp:       ts,
		MaxTimestamp:         ts,
		ProducerID:           pid,
		ProducerEpoch:        epoch,
		FirstSequence:        seq,
		NumRecords:           1,
		Records:              r.AppendTo(nil),
	}
	raw := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

// listStableOffset asks ListOffsets v7 at read_committed for the last
// stable offset of partition 0.
func listStableOffset(t *testing.T, rc *rawConn, topic string) int64 {
	t.Helper()
	return listLatestOffset(t, rc, topic, 1)
}

// TestTxnBatchMixedProducers: a Produce whose transactional batches carry
// different producer ids is refused whole with INVALID_PRODUCER_ID_MAPPING,
// as Kafka's ReplicaManager: the coordinator verifies one producer per
// request, so a second producer's batch riding along with a verified one
// would open a transaction no coordinator knows, pinning the partition's
// last stable offset.
func TestTxnBatchMixedProducers(t *testing.T) {
	b := startBroker(t)
	cl := newKgo(t, b)
	const topic = "txn-mixed"
	createTopic(t, cl, topic, 2, nil)
	rc := dialRaw(t, b)

	txnID := "mixed"
	pid, epoch := initProducerID(t, rc, &txnID)
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.Version = 3
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = txnID, pid, epoch
	add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: topic, Partitions: []int32{0, 1}}}
	addResp := rc.roundTrip(add).(*kmsg.AddPartitionsToTxnResponse)
	for _, rt := range addResp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				t.Fatalf("AddPartitionsToTxn %s/%d: %v", rt.Topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
			}
		}
	}
	other, otherEpoch := initProducerID(t, rc, nil)

	req := produceRequest(topic, 0, -1, txnBatch(t, other, otherEpoch, 0, "stowaway"))
	req.TransactionID = &txnID
	p1 := kmsg.NewProduceRequestTopicPartition()
	p1.Partition, p1.Records = 1, txnBatch(t, pid, epoch, 0, "verified")
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, p1)
	resp := rc.roundTrip(req).(*kmsg.ProduceResponse)
	for _, rp := range resp.Topics[0].Partitions {
		if rp.ErrorCode != kerr.InvalidProducerIDMapping.Code {
			t.Errorf("partition %d: error %v, want INVALID_PRODUCER_ID_MAPPING", rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
		}
	}

	end := kmsg.NewPtrEndTxnRequest()
	end.Version = 3
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = txnID, pid, epoch, false
	if code := rc.roundTrip(end).(*kmsg.EndTxnResponse).ErrorCode; code != 0 {
		t.Fatalf("EndTxn: %v", kerr.ErrorForCode(code))
	}
	// Once the coordinator's markers are written nothing pins partition 0.
	p := produceRaw(t, rc, topic, buildBatch(t, batchOpts{values: []string{"after"}}))
	if p.ErrorCode != 0 {
		t.Fatalf("plain produce: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	// The coordinator writes its abort marker after answering EndTxn, so
	// the log end is read again each time.
	deadline := time.Now().Add(30 * time.Second)
	for {
		lso, endOffset := listStableOffset(t, rc, topic), listEndOffset(t, rc, topic)
		if lso == endOffset {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("partition 0: last stable offset %d, log end %d: a transaction no coordinator knows pins it", lso, endOffset)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
