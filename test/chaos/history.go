// Package chaos is Gregor's fault suite (issue 13): a three-node cluster of
// real processes, each in a network namespace of its own, a nemesis that
// kills, pauses, partitions and fills the disk of its nodes, workloads that
// record every operation they attempt in a History, and a Checker that
// reads the History and the cluster's final state and reports each
// anomaly: an acknowledged write lost, a record duplicated or reordered, a
// read of aborted or uncommitted data, positions or committed offsets that
// go backwards; and a share-group checker (share_checker.go): each record
// accepted once or archived at the delivery limit, none lost.
//
// The checkers (this file, checker.go, share_checker.go) build without tags and is unit
// tested by `go test ./...`; the cluster, nemesis and workloads are tests
// behind the `chaos` build tag, run by test/chaos/run.sh.
package chaos

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"
)

// Outcome is what an operation's caller learned: it happened (ok), it
// certainly did not (fail), or it may or may not have (info: a timeout, a
// lost connection, an error after which the write may still land).
type Outcome string

const (
	OK   Outcome = "ok"
	Fail Outcome = "fail"
	Info Outcome = "info"
)

// Operation kinds (Op.F).
const (
	// FSend produces Value to Topic/Partition; ok carries the Offset the
	// broker acknowledged.
	FSend = "send"
	// FRead is one record a consumer returned: Topic/Partition/Offset/Value,
	// Group set for a group member, Committed for a read_committed reader.
	FRead = "read"
	// FCommit commits Offset (the next offset to read) for
	// Group/Topic/Partition.
	FCommit = "commit"
	// FFetchOffsets is an OffsetFetch that answered Offset (-1: none) for
	// Group/Topic/Partition.
	FFetchOffsets = "fetch-offsets"
	// FTxn is a transaction of the read-process-write workload: Values are
	// the input values it copied; ok means End reported it committed.
	FTxn = "txn"
	// FFault is a fault the nemesis injected (Value: its kind, Err: where).
	FFault = "fault"
	// FShareDeliver is one record a share-group consumer was handed:
	// Group/Topic/Partition/Offset/Value, Delivery its delivery count.
	FShareDeliver = "share-deliver"
	// FShareAck is a share-group consumer's acknowledgement of one record
	// it was handed (Ack: accept or release): ok when the broker answered
	// no error for the record's partition, info otherwise (the
	// acknowledgement may or may not have been applied).
	FShareAck = "share-ack"
)

// Op is one operation: who attempted it, when it was invoked and when it
// completed (nanoseconds since the history began), and its outcome.
type Op struct {
	Index     int           `json:"index"`
	Process   string        `json:"process"`
	F         string        `json:"f"`
	Outcome   Outcome       `json:"outcome"`
	Invoke    time.Duration `json:"invoke"`
	Complete  time.Duration `json:"complete"`
	Topic     string        `json:"topic,omitempty"`
	Partition int32         `json:"partition"`
	Offset    int64         `json:"offset"`
	Value     string        `json:"value,omitempty"`
	Values    []string      `json:"values,omitempty"`
	Group     string        `json:"group,omitempty"`
	Committed bool          `json:"committed,omitempty"` // a read_committed read
	Delivery  int32         `json:"delivery,omitempty"`  // a share delivery's delivery count
	Ack       string        `json:"ack,omitempty"`       // a share acknowledgement's type
	Err       string        `json:"err,omitempty"`
}

// History is the ordered record of every operation of a run. It is safe
// for concurrent use.
type History struct {
	mu    sync.Mutex
	start time.Time
	ops   []Op
}

func NewHistory() *History { return &History{start: time.Now()} }

// Now is the time since the history began, for Op.Invoke and Op.Complete.
func (h *History) Now() time.Duration { return time.Since(h.start) }

// Add appends a completed operation; its Complete is set now if zero.
func (h *History) Add(op Op) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if op.Complete == 0 {
		op.Complete = time.Since(h.start)
	}
	op.Index = len(h.ops)
	h.ops = append(h.ops, op)
}

// Ops is a copy of the operations so far.
func (h *History) Ops() []Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Op(nil), h.ops...)
}

// WriteJSON writes one operation per line, for a failed run's artifacts.
func (h *History) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	for _, op := range h.Ops() {
		if err := enc.Encode(op); err != nil {
			return fmt.Errorf("write history: %w", err)
		}
	}
	return nil
}
