// Package txn is the transaction coordinator's state machine (Kafka's
// TransactionCoordinator, TransactionStateManager and TransactionMetadata)
// for one shard: the transactional ids whose partition of
// __transaction_state this shard owns.
//
// It is pure: no goroutines, sockets or clocks. The driver passes the time
// (milliseconds) into every call. Each operation returns a Result: the
// driver writes Result.Records to the partition as one batch (acks=-1),
// then calls Result.Finish with the write's error, which applies the change
// (as Kafka's completeTransitionTo does after the append) and returns the
// Outcome: the answer for the client and the WriteTxnMarkers to send.
// Partition leaders' answers to the markers come back through
// MarkerWritten; when the last partition of a transaction is marked the
// coordinator writes CompleteCommit / CompleteAbort. Tick aborts timed-out
// transactions, expires idle transactional ids and retries failed
// completion writes; loading a shard replays the partition through Replay.
//
// Like Kafka, a transition is first "pending" (prepared, not yet written);
// while a transition is pending, other operations on the same transactional
// id answer CONCURRENT_TRANSACTIONS.
package txn

import (
	"math"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
)

// State is a transaction's state; the values are the ids Kafka writes in
// TransactionLogValue.TransactionStatus.
type State int8

// The transaction states (Kafka's TransactionState).
const (
	Empty State = iota
	Ongoing
	PrepareCommit
	PrepareAbort
	CompleteCommit
	CompleteAbort
	Dead
	PrepareEpochFence
)

var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

// String is Kafka's name of the state, as DescribeTransactions and
// ListTransactions show it.
func (s State) String() string {
	if s < 0 || int(s) >= len(stateNames) {
		return "Unknown"
	}
	return stateNames[s]
}

// ParseState is the state of a Kafka state name.
func ParseState(name string) (State, bool) {
	for i, n := range stateNames {
		if n == name {
			return State(i), true
		}
	}
	return 0, false
}

// validPrevious lists the states a state may be entered from (Kafka's
// validPreviousStates). PrepareAbort is reachable from Empty and the
// Complete states because a transaction version 2 client may abort a
// transaction it never added a partition to.
var validPrevious = [...][]State{
	Empty:             {Empty, CompleteCommit, CompleteAbort},
	Ongoing:           {Ongoing, Empty, CompleteCommit, CompleteAbort},
	PrepareCommit:     {Ongoing},
	PrepareAbort:      {Ongoing, PrepareEpochFence, Empty, CompleteCommit, CompleteAbort},
	CompleteCommit:    {PrepareCommit},
	CompleteAbort:     {PrepareAbort},
	Dead:              {Empty, CompleteAbort, CompleteCommit},
	PrepareEpochFence: {Ongoing},
}

// expirationAllowed: only a transactional id with no transaction in flight
// may expire (transactional.id.expiration.ms).
func (s State) expirationAllowed() bool {
	return s == Empty || s == CompleteCommit || s == CompleteAbort
}

// Kafka's RecordBatch.NO_PRODUCER_ID / NO_PRODUCER_EPOCH.
const (
	noProducerID    int64 = -1
	noProducerEpoch int16 = -1
)

// epochExhausted: the coordinator keeps Short.MaxValue for itself so it can
// always fence the current producer once more (Kafka's isEpochExhausted).
func epochExhausted(epoch int16) bool { return epoch >= math.MaxInt16-1 }

// TopicPartition names a partition in a transaction.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func sortPartitions(tps []TopicPartition) {
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
}

// Metadata is a snapshot of one transactional id's state.
type Metadata struct {
	TransactionalID string
	ProducerID      int64
	// PrevProducerID is the producer id before the last transition
	// (Kafka's previousProducerId); NextProducerID is the id a
	// transaction version 2 producer moves to when its epoch runs out.
	PrevProducerID, NextProducerID int64
	ProducerEpoch                  int16
	// LastProducerEpoch is the epoch before the last bump, kept so that a
	// retried InitProducerId (KIP-360) is recognised. Like Kafka, it is not
	// written to the log: a loaded transaction has -1.
	LastProducerEpoch   int16
	TimeoutMs           int32
	State               State
	Partitions          []TopicPartition // sorted
	TxnStartTimestamp   int64            // -1 while no transaction has started
	LastUpdateTimestamp int64
	// ClientTransactionVersion is the transaction version (0-2) the client
	// used for the last transition; 2 bumps the epoch on every EndTxn.
	ClientTransactionVersion int16
}

// ProducerIDs hands out new producer ids (producerid.Manager).
type ProducerIDs interface {
	Generate() (int64, error)
}

// Config holds the broker settings a shard obeys, with Kafka's names.
type Config struct {
	// CoordinatorEpoch is the leader epoch of the __transaction_state
	// partition; markers carry it so partition leaders drop markers from a
	// deposed coordinator.
	CoordinatorEpoch int32
	// TransactionMaxTimeoutMs is transaction.max.timeout.ms (900000).
	TransactionMaxTimeoutMs int32
	// TransactionalIDExpirationMs is transactional.id.expiration.ms (604800000).
	TransactionalIDExpirationMs int64
	// AbortTimedOutTransactionsIntervalMs is
	// transaction.abort.timed.out.transaction.cleanup.interval.ms (10000).
	AbortTimedOutTransactionsIntervalMs int64
	// RemoveExpiredTransactionalIDsIntervalMs is
	// transaction.remove.expired.transaction.cleanup.interval.ms (3600000).
	RemoveExpiredTransactionalIDsIntervalMs int64
	// TransactionVersion returns the cluster's finalized
	// transaction.version feature level (nil: 0). It is read at each use,
	// since the level changes while the shard lives: 1+ writes
	// TransactionLogValue v1 (flexible, tagged fields), and it is the
	// version of the aborts the coordinator starts itself (timeouts,
	// fencing), as Kafka's transactionVersionLevel.
	TransactionVersion func() int16
	// OffsetsTopicPartitions is offsets.topic.num.partitions, to find the
	// __consumer_offsets partition AddOffsetsToTxn adds.
	OffsetsTopicPartitions int32
	// ProducerIDs allocates producer ids.
	ProducerIDs ProducerIDs
}

// transactionVersion is the finalized transaction.version now.
func (s *Shard) transactionVersion() int16 {
	if s.cfg.TransactionVersion == nil {
		return 0
	}
	return s.cfg.TransactionVersion()
}

// Kafka's defaults for the Config durations.
const (
	DefaultTransactionMaxTimeoutMs                 = 900000
	DefaultTransactionalIDExpirationMs             = 604800000
	DefaultAbortTimedOutTransactionsIntervalMs     = 10000
	DefaultRemoveExpiredTransactionalIDsIntervalMs = 3600000
)

// completionRetryBackoffMs spaces retries of a failed CompleteCommit /
// CompleteAbort write (Kafka's marker channel retries on its next poll).
const completionRetryBackoffMs = 100

// ConsumerOffsetsTopic is the topic AddOffsetsToTxn adds a partition of.
const ConsumerOffsetsTopic = "__consumer_offsets"

// Shard is the transaction state of one __transaction_state partition.
type Shard struct {
	cfg  Config
	txns map[string]*txnMetadata

	// started is false until the first Tick, which sends the markers of
	// transactions loaded in a Prepare state and starts the schedules.
	started          bool
	nextAbortCheckMs int64
	nextExpireMs     int64
	// completions holds transactions whose markers are all written and
	// whose Complete record is still to be written, with the time due.
	completions map[string]int64
}

// New returns an empty shard; Replay loads it.
func New(cfg Config) *Shard {
	if cfg.TransactionMaxTimeoutMs <= 0 {
		cfg.TransactionMaxTimeoutMs = DefaultTransactionMaxTimeoutMs
	}
	if cfg.TransactionalIDExpirationMs <= 0 {
		cfg.TransactionalIDExpirationMs = DefaultTransactionalIDExpirationMs
	}
	if cfg.AbortTimedOutTransactionsIntervalMs <= 0 {
		cfg.AbortTimedOutTransactionsIntervalMs = DefaultAbortTimedOutTransactionsIntervalMs
	}
	if cfg.RemoveExpiredTransactionalIDsIntervalMs <= 0 {
		cfg.RemoveExpiredTransactionalIDsIntervalMs = DefaultRemoveExpiredTransactionalIDsIntervalMs
	}
	if cfg.OffsetsTopicPartitions <= 0 {
		cfg.OffsetsTopicPartitions = 50
	}
	return &Shard{cfg: cfg, txns: map[string]*txnMetadata{}, completions: map[string]int64{}}
}

// Get returns the state of a transactional id.
func (s *Shard) Get(transactionalID string) (Metadata, bool) {
	t := s.txns[transactionalID]
	if t == nil {
		return Metadata{}, false
	}
	return t.snapshot(), true
}

// Snapshot returns every transactional id's state, sorted by id.
func (s *Shard) Snapshot() []Metadata {
	out := make([]Metadata, 0, len(s.txns))
	for _, id := range s.sortedIDs() {
		out = append(out, s.txns[id].snapshot())
	}
	return out
}

func (s *Shard) sortedIDs() []string {
	ids := make([]string, 0, len(s.txns))
	for id := range s.txns {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Record is one key/value record of __transaction_state; nil Value is a
// tombstone.
type Record struct {
	Key, Value []byte
}

// Markers is one WriteTxnMarkers entry to send: the partitions' leaders
// append a commit or abort control record for the producer. The driver
// reports each partition done with MarkerWritten.
type Markers struct {
	TransactionalID    string
	ProducerID         int64
	ProducerEpoch      int16
	Commit             bool
	CoordinatorEpoch   int32
	TransactionVersion int16
	Partitions         []TopicPartition
}

// Outcome is what an operation leads to once its records are written (or
// failed to be): the answer for the client and the markers to send.
type Outcome struct {
	ErrorCode     int16
	ProducerID    int64
	ProducerEpoch int16
	Markers       []Markers
}

// Result is one step of the state machine: write Records (if any) as one
// batch, then call Finish exactly once with the write's error (nil when
// there was nothing to write).
type Result struct {
	Records []Record
	outcome Outcome
	finish  func(writeErr error) Outcome
}

// Finish applies the write's outcome and returns what follows from it.
func (r Result) Finish(writeErr error) Outcome {
	if r.finish == nil {
		return r.outcome
	}
	return r.finish(writeErr)
}

// answer is a Result with nothing to write.
func answer(code int16, pid int64, epoch int16) Result {
	return Result{outcome: Outcome{ErrorCode: code, ProducerID: pid, ProducerEpoch: epoch}}
}

func errAnswer(err *kerr.Error) Result { return answer(err.Code, noProducerID, noProducerEpoch) }
