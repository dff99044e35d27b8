package handlers

// Produce (key 0), v0-12. Like Kafka 4.0 the range starts at v0 although
// v0-2 are refused with UNSUPPORTED_VERSION on every partition
// (KAFKA-18659: librdkafka before 2.11.1 turns compression off against a
// broker whose Produce range does not start at 0); v12 is transactions v2
// (KIP-890 part 2, below), v13 (topic ids) is not served. Requests of one
// connection are appended in the order they were sent. Each partition's
// records are validated and appended by its leader (replica -> partition ->
// log). Batches from idempotent producers are checked against the
// partition's producer state there: a retried batch is answered with its
// original base offset and no error, a sequence gap with
// OUT_OF_ORDER_SEQUENCE_NUMBER, an older producer epoch with
// INVALID_PRODUCER_EPOCH, a plain batch from a producer whose transaction
// is open with INVALID_TXN_STATE; a transactional batch opens the producer's
// transaction on the partition, which holds the last stable offset back
// until the coordinator's marker. With transaction.partition.verification.enable
// (KIP-890 part 1) the first transactional batch of a producer on a
// partition is appended only once the transaction coordinator confirms the
// partition is in the producer's transaction (txn_verify.go): otherwise
// INVALID_TXN_STATE (TRANSACTION_ABORTABLE for v11+ producers, as Kafka),
// or NOT_ENOUGH_REPLICAS (retriable) while the coordinator cannot tell.
// A Produce v12+ while transaction.version is 2 is a transactions
// v2 producer, which sends no AddPartitionsToTxn: the partition leader asks
// the coordinator to add the partition to the transaction (whatever the
// verification setting) and appends once it has. acks must be -1, 0 or 1, else
// INVALID_REQUIRED_ACKS for every partition. With acks=0 nothing is answered; if any partition failed, the
// connection is closed, which is how Kafka tells an acks=0 producer that
// something went wrong.
//
// Client quotas (quotas.go): the request's size counts against
// producer_byte_rate and its handling time against request_percentage
// (not for acks=0); over a quota the records are still appended and the
// answer carries the throttle time (with acks=0 the connection is muted
// instead).
//
// A request holding a transactional batch but no transactional id is
// refused whole with TRANSACTIONAL_ID_AUTHORIZATION_FAILED, and one whose
// transactional batches name more than one producer with
// INVALID_PRODUCER_ID_MAPPING, as Kafka: no coordinator could verify or
// ever end such a transaction.
//
// Authorization (Kafka's): a request with a transactional id needs WRITE
// on it, else every partition gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
// each topic needs WRITE, else its partitions get
// TOPIC_AUTHORIZATION_FAILED and the others are served. Idempotence needs
// nothing more here (KIP-679: it was checked at InitProducerId).

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator/txn"
	"gregor/internal/network"
	"gregor/internal/record"
	"gregor/internal/replica"
)

var produceAPI = api{key: 0, min: 0, max: 12, handle: (*Handlers).produce}

// produceTV2Version is the first Produce version of transactions v2
// producers (KIP-890 part 2).
const produceTV2Version = 12

// produceMinUsable is the lowest Produce version actually served (KIP-896).
const produceMinUsable = 3

func (h *Handlers) produce(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.ProduceRequest)
	resp := r.ResponseKind().(*kmsg.ProduceResponse)
	validAcks := r.Acks == -1 || r.Acks == 0 || r.Acks == 1
	if rq := requestQuotaOf(ctx); rq != nil {
		// Client quotas are recorded once the request is answered (or
		// refused), as Kafka records them (quotas.go).
		defer rq.recordProduce(r.Acks)
	}
	var waits []replicationWait
	failed := 0
	switch producers := transactionalProducers(r); {
	case producers > 0 && r.TransactionID == nil:
		// Kafka's check: a transactional batch's partition is verified
		// against its transactional id's coordinator; without one nothing
		// would ever end the transaction, and the partition's last stable
		// offset would stay pinned.
		return h.produceRefused(req, r, kerr.TransactionalIDAuthorizationFailed.Code)
	case producers > 1:
		// The coordinator verifies one producer; another's batch riding
		// along would open a transaction it does not know (Kafka's
		// ReplicaManager refuses the request likewise).
		return h.produceRefused(req, r, kerr.InvalidProducerIDMapping.Code)
	}
	if r.TransactionID != nil && !h.authorized(ctx, req, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, *r.TransactionID) {
		return h.produceRefused(req, r, kerr.TransactionalIDAuthorizationFailed.Code)
	}
	writable := h.authorizedTopics(ctx, req, kmsg.ACLOperationWrite, produceTopics(r))
	verified := h.verifyTxnProduce(ctx, r, writable)
	for _, t := range r.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = -1, -1, -1
			if r.Version < produceMinUsable {
				rp.ErrorCode = kerr.UnsupportedVersion.Code
				failed++
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			if !validAcks {
				rp.ErrorCode = kerr.InvalidRequiredAcks.Code
				failed++
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			if !writable[t.Topic] {
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				failed++
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			if r.Version < 7 && usesZstd(p.Records) {
				// KIP-110: only clients that know zstd (produce v7+) may send it.
				rp.ErrorCode = kerr.UnsupportedCompressionType.Code
				failed++
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			var res replica.ProduceResult
			if v, ok := verified[txn.TopicPartition{Topic: t.Topic, Partition: p.Partition}]; !ok {
				res = h.d.Replica.Append(t.Topic, p.Partition, r.Acks, p.Records)
			} else if v.code != 0 {
				h.d.Logger.Debug("transactional produce not verified", "client", req.ClientAddr, "topic", t.Topic, "partition", p.Partition,
					"transactional_id", *r.TransactionID, "err", kerr.ErrorForCode(v.code), "message", v.msg)
				rp.ErrorCode = v.code
				if v.msg != "" {
					rp.ErrorMessage = kmsg.StringPtr(v.msg)
				}
				failed++
				rt.Partitions = append(rt.Partitions, rp)
				continue
			} else {
				res = h.d.Replica.AppendVerified(t.Topic, p.Partition, r.Acks, p.Records, v.guard)
			}
			if res.Err != nil {
				failed++
				h.d.Logger.Debug("produce failed", "client", req.ClientAddr, "topic", t.Topic, "partition", p.Partition, "err", res.Err)
				rp.ErrorCode = errorCode(res.Err)
				rp.ErrorMessage = errorMessage(res.Err)
				for _, re := range res.Info.RecordErrors {
					msg := re.Message
					rp.ErrorRecords = append(rp.ErrorRecords, kmsg.ProduceResponseTopicPartitionErrorRecord{RelativeOffset: re.BatchIndex, ErrorMessage: &msg})
				}
			} else {
				h.d.Metrics.Produced(t.Topic, int(res.Info.LastOffset-res.Info.FirstOffset+1), len(p.Records))
				rp.BaseOffset = res.Info.FirstOffset
				rp.LogAppendTime = res.Info.LogAppendTime
				rp.LogStartOffset = res.LogStartOffset
				if r.Acks == -1 {
					waits = append(waits, replicationWait{t.Topic, p.Partition, res.Info.LastOffset + 1, len(resp.Topics), len(rt.Partitions)})
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	// acks=all: answer once the ISR has every appended batch (Kafka's
	// DelayedProduce), or with the error when it cannot within the
	// request's timeout.
	if len(waits) > 0 {
		startWaiting(ctx)
		wctx, cancel := context.WithTimeout(ctx, time.Duration(max(r.TimeoutMillis, 0))*time.Millisecond)
		for _, w := range waits {
			if err := h.d.Replica.WaitReplicated(wctx, w.topic, w.partition, w.required); err != nil {
				rp := &resp.Topics[w.ti].Partitions[w.pi]
				rp.ErrorCode, rp.ErrorMessage = errorCode(err), errorMessage(err)
			}
		}
		cancel()
	}
	if r.Acks == 0 {
		if failed > 0 {
			return nil, fmt.Errorf("acks=0 produce from %s failed on %d partitions; closing the connection to tell the client", req.ClientAddr, failed)
		}
		return nil, nil
	}
	return resp, nil
}

func produceTopics(r *kmsg.ProduceRequest) []string {
	names := make([]string, len(r.Topics))
	for i, t := range r.Topics {
		names[i] = t.Topic
	}
	return names
}

// produceRefused answers a request refused as a whole: every partition gets
// code (with acks=0, the connection is closed).
func (h *Handlers) produceRefused(req *network.Request, r *kmsg.ProduceRequest, code int16) (kmsg.Response, error) {
	if r.Acks == 0 {
		return nil, fmt.Errorf("acks=0 produce from %s refused: %v; closing the connection to tell the client", req.ClientAddr, kerr.ErrorForCode(code))
	}
	resp := r.ResponseKind().(*kmsg.ProduceResponse)
	for _, t := range r.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = -1, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// replicationWait is an acks=all partition waiting for its ISR.
type replicationWait struct {
	topic     string
	partition int32
	required  int64 // the offset after the appended records
	ti, pi    int   // where its answer is in the response
}

// transactionalProducers counts the distinct producers (id and epoch) of
// the request's transactional batches: 0 when there are none (Kafka's
// RequestUtils.hasTransactionalRecords), more than 1 when they disagree.
func transactionalProducers(r *kmsg.ProduceRequest) int {
	type producer struct {
		id    int64
		epoch int16
	}
	var first producer
	n := 0
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			h, err := record.ParseHeader(p.Records)
			if err != nil || !h.IsTransactional() {
				continue
			}
			switch pr := (producer{h.ProducerID, h.ProducerEpoch}); {
			case n == 0:
				first, n = pr, 1
			case pr != first:
				return 2
			}
		}
	}
	return n
}

func usesZstd(records []byte) bool {
	h, err := record.ParseHeader(records)
	return err == nil && h.Compression() == record.CodecZstd
}
