package share

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/internal/sharestate"
)

// RecordState is an in-flight record's state, with Kafka's wire values
// (RecordState): Acquired is the only state that is never persisted.
type RecordState int8

const (
	Available    RecordState = 0
	Acquired     RecordState = 1
	Acknowledged RecordState = 2
	Archived     RecordState = 4
)

func (s RecordState) String() string {
	switch s {
	case Available:
		return "available"
	case Acquired:
		return "acquired"
	case Acknowledged:
		return "acknowledged"
	case Archived:
		return "archived"
	}
	return fmt.Sprintf("state(%d)", int8(s))
}

// AckType is an acknowledgement's type, Kafka's AcknowledgeType values.
type AckType int8

const (
	// AckGap marks offsets with no record (compacted away): archived.
	AckGap AckType = 0
	// AckAccept: processed, Acknowledged.
	AckAccept AckType = 1
	// AckRelease: back to Available for another delivery (Archived once the
	// delivery count reached the limit).
	AckRelease AckType = 2
	// AckReject: unprocessable, Archived.
	AckReject AckType = 3
	// AckRenew (KIP-1222, v2): keeps the records acquired with a new lock.
	AckRenew AckType = 4
)

// PartitionConfig is what the state machine needs of its group's configs.
type PartitionConfig struct {
	// RecordLockDurationMs is the acquisition lock (record.lock.duration.ms).
	RecordLockDurationMs int64
	// DeliveryCountLimit archives a record released or timed out after this
	// many deliveries (delivery.count.limit).
	DeliveryCountLimit int16
	// MaxRecordLocks bounds the in-flight records, SPSO to SPEO
	// (partition.max.record.locks): no new records are acquired beyond it.
	MaxRecordLocks int64
}

// inFlight is a run of offsets [first, last] in one state. Acquired runs
// carry their member and lock deadline. The runs of a Partition cover
// [start, end) without gaps, sorted; adjacent runs may be alike (they are
// merged only where that is cheap), which changes nothing.
type inFlight struct {
	first, last   int64
	state         RecordState
	deliveryCount int16
	member        string
	lockDeadline  int64
	// batch is the size of the in-flight batch the run belongs to (the
	// records acquired together for the first time, or a persisted
	// batch), which throttled redelivery halves.
	batch int64
}

func (r inFlight) count() int64 { return r.last - r.first + 1 }

// LogBatch is what acquisition needs of one record batch read from the log:
// its offsets and whether it must never be delivered (a control batch, or,
// for read_committed, a batch of an aborted transaction).
type LogBatch struct {
	FirstOffset, LastOffset int64
	Skip                    bool
}

// AcquiredRange is a run of offsets handed to a member, Kafka's
// AcquiredRecords.
type AcquiredRange struct {
	FirstOffset, LastOffset int64
	DeliveryCount           int16
}

// AckBatch is one acknowledgement batch of a request: one type for the
// whole range, or one per offset.
type AckBatch struct {
	FirstOffset, LastOffset int64
	Types                   []AckType
}

// Partition is one share-partition's in-flight state (Kafka's
// SharePartition): the share-partition start offset (SPSO), the end of the
// records read from the log (SPEO + 1), and the state of every offset
// between them. It is a pure state machine: no goroutines, no I/O, times in
// milliseconds passed in. Invariants: start <= end; the runs cover exactly
// [start, end); the first run is neither Acknowledged nor Archived (SPSO
// advances past such a prefix); an Available run's delivery count is below
// the delivery limit (a record that reaches it is Archived instead).
type Partition struct {
	cfg        PartitionConfig
	stateEpoch int32
	start, end int64
	runs       []inFlight
}

// NewPartition builds a share-partition from its persisted state, whose
// StartOffset is already decided (not -1). Offsets between the persisted
// batches were never delivered: they are Available with no deliveries.
func NewPartition(cfg PartitionConfig, st sharestate.State) *Partition {
	p := &Partition{cfg: cfg, stateEpoch: st.StateEpoch, start: st.StartOffset, end: st.StartOffset}
	batches := slices.Clone(st.Batches)
	slices.SortFunc(batches, func(a, b sharestate.Batch) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })
	for _, b := range batches {
		first := max(b.FirstOffset, p.end)
		if b.LastOffset < first {
			continue
		}
		if first > p.end {
			p.runs = append(p.runs, inFlight{first: p.end, last: first - 1, state: Available, batch: first - p.end})
		}
		r := inFlight{first: first, last: b.LastOffset, state: RecordState(b.DeliveryState), deliveryCount: b.DeliveryCount, batch: b.LastOffset - first + 1}
		if r.state != Acknowledged && r.state != Archived {
			r.state = Available
			if r.deliveryCount >= cfg.DeliveryCountLimit {
				r.state = Archived
			}
		}
		p.runs = append(p.runs, r)
		p.end = b.LastOffset + 1
	}
	p.advance()
	return p
}

// Clone returns an independent copy: a change is made on a clone, written to
// the persister, and kept only once the write succeeded.
func (p *Partition) Clone() *Partition {
	c := *p
	c.runs = slices.Clone(p.runs)
	return &c
}

// SetConfig applies a group's changed configs to later operations.
func (p *Partition) SetConfig(cfg PartitionConfig) { p.cfg = cfg }

// StartOffset is the SPSO; EndOffset the offset after the last in-flight
// record (SPEO + 1).
func (p *Partition) StartOffset() int64 { return p.start }
func (p *Partition) EndOffset() int64   { return p.end }

// NextFetchOffset is where acquisition reads the log from: the first
// Available offset at or after from, else the end of the in-flight records
// if there is room for more; -1 when nothing can be acquired at or after
// from without reading past the in-flight limit.
func (p *Partition) NextFetchOffset(from int64) int64 {
	for _, r := range p.runs {
		if r.last < from || r.state != Available {
			continue
		}
		return max(r.first, from)
	}
	if p.end-p.start >= p.cfg.MaxRecordLocks {
		return -1
	}
	return max(p.end, from)
}

// ArchiveBefore archives every offset below the log start offset (records
// deleted from the log) and moves SPSO to it.
func (p *Partition) ArchiveBefore(logStartOffset int64) {
	if logStartOffset <= p.start {
		return
	}
	i := 0
	for i < len(p.runs) && p.runs[i].last < logStartOffset {
		i++
	}
	p.runs = p.runs[i:]
	if len(p.runs) > 0 && p.runs[0].first < logStartOffset {
		p.runs[0].first = logStartOffset
	}
	p.start = logStartOffset
	p.end = max(p.end, logStartOffset)
	p.advance()
}

// Acquire hands records of the batches read from the log (in offset order,
// read from offset from) to member, until the request holds maxRecords
// (taken of them acquired already, by earlier reads of the same request):
// Available in-flight records, and records past the in-flight end as new
// in-flight records while the in-flight limit allows. With strict false
// acquisition stops on a batch boundary (a batch is taken whole, as Kafka's
// batch-optimized mode); with strict it stops at exactly maxRecords
// (record-limit mode). Records of skipped batches and offsets with no batch
// between from and the last batch are archived, never delivered.
//
// Records delivered often are throttled, as Kafka 4.2 does so that one bad
// record does not use up the deliveries of a whole batch: a record
// delivered at least ceil(limit/2) times (2 at least) is acquired only by a
// request that has nothing else, in a chunk of its in-flight batch's size
// halved for each delivery past that mark, and a record on its last
// delivery (limit above 2) alone. Acquisition ends after a throttled chunk.
//
// It returns the acquired ranges, the last offset it looked at (-1: none)
// and whether the request must acquire nothing more.
func (p *Partition) Acquire(member string, nowMs int64, from int64, batches []LogBatch, maxRecords, taken int64, strict bool) ([]AcquiredRange, int64, bool) {
	a := acquisition{p: p, member: member, nowMs: nowMs, max: maxRecords, taken: taken, strict: strict, scanned: -1}
	next := max(from, p.start) // offsets below next are accounted for
	newFirst, newLast := int64(-1), int64(-1)
	for _, b := range batches {
		if a.stop || a.taken >= a.max {
			break
		}
		if b.LastOffset < next {
			continue
		}
		first := max(b.FirstOffset, next)
		if first > next {
			// No record in [next, first): compacted away or past a gap.
			p.settle(next, first-1, Archived)
		}
		if b.Skip {
			p.settle(first, b.LastOffset, Archived)
			next, a.scanned = b.LastOffset+1, b.LastOffset
			continue
		}
		if first >= p.end && p.end-p.start >= p.cfg.MaxRecordLocks {
			break // no room for new records
		}
		if b.LastOffset >= p.end {
			if newFirst < 0 {
				newFirst = max(first, p.end)
			}
			newLast = b.LastOffset
		}
		p.extendTo(b.LastOffset)
		next = a.acquire(first, b.LastOffset)
		a.scanned = next - 1
	}
	if newFirst >= 0 {
		// The new records of one request form one in-flight batch, whose
		// size throttling halves.
		p.forEach(newFirst, newLast, func(r *inFlight) { r.batch = newLast - newFirst + 1 })
	}
	p.advance()
	return a.out, a.scanned, a.stop
}

// acquisition is one Acquire's progress.
type acquisition struct {
	p          *Partition
	member     string
	nowMs      int64
	max, taken int64
	strict     bool
	stop       bool
	scanned    int64
	out        []AcquiredRange
}

// throttleFrom is the delivery count from which acquisition is throttled
// (Kafka's throttleRecordsDeliveryLimit): half the limit rounded up, 2 at
// least.
func (p *Partition) throttleFrom() int16 {
	return max(2, (p.cfg.DeliveryCountLimit+1)/2)
}

// acquire acquires the Available offsets of [first, last] (in flight) and
// returns the offset after the last one it looked at.
func (a *acquisition) acquire(first, last int64) int64 {
	p := a.p
	o := first
	for o <= last && !a.stop && a.taken < a.max {
		i := p.runAt(o)
		r := p.runs[i]
		end := min(r.last, last)
		if r.state != Available {
			o = end + 1
			continue
		}
		n := end - o + 1
		if r.deliveryCount >= p.throttleFrom() {
			if a.taken > 0 {
				a.stop = true // delivered later, in a request of its own
				break
			}
			chunk := max(1, r.batch>>(r.deliveryCount-p.throttleFrom()+1))
			if p.cfg.DeliveryCountLimit > 2 && r.deliveryCount == p.cfg.DeliveryCountLimit-1 {
				chunk = 1 // the last delivery: alone
			}
			n = min(n, chunk)
			a.stop = true
		}
		if a.strict {
			n = min(n, a.max-a.taken)
		}
		p.forEach(o, o+n-1, func(r *inFlight) {
			r.state = Acquired
			r.deliveryCount++
			r.member = a.member
			r.lockDeadline = a.nowMs + p.cfg.RecordLockDurationMs
			a.out = appendMerged(a.out, []AcquiredRange{{FirstOffset: r.first, LastOffset: r.last, DeliveryCount: r.deliveryCount}})
		})
		a.taken += n
		o += n
	}
	return o
}

// runAt is the index of the run holding offset o (in flight).
func (p *Partition) runAt(o int64) int {
	i, found := slices.BinarySearchFunc(p.runs, o, func(r inFlight, o int64) int { return cmp.Compare(r.first, o) })
	if found {
		return i
	}
	return i - 1
}

// settle puts the offsets [first, last] that are Available (or past the
// end) into state s, as the log showed they hold nothing to deliver.
func (p *Partition) settle(first, last int64, s RecordState) {
	p.extendTo(last)
	p.forEach(first, last, func(r *inFlight) {
		if r.state == Available {
			r.state = s
		}
	})
}

func appendMerged(out, add []AcquiredRange) []AcquiredRange {
	for _, a := range add {
		if n := len(out); n > 0 && out[n-1].LastOffset+1 == a.FirstOffset && out[n-1].DeliveryCount == a.DeliveryCount {
			out[n-1].LastOffset = a.LastOffset
			continue
		}
		out = append(out, a)
	}
	return out
}

// extendTo makes offsets up to last in-flight, Available with no
// deliveries.
func (p *Partition) extendTo(last int64) {
	if last < p.end {
		return
	}
	if n := len(p.runs); n > 0 && p.runs[n-1].state == Available && p.runs[n-1].deliveryCount == 0 {
		p.runs[n-1].last = last
	} else {
		p.runs = append(p.runs, inFlight{first: p.end, last: last, state: Available})
	}
	p.end = last + 1
}

// forEach calls f on the runs covering [first, last] (within the in-flight
// range), split so that each run passed lies inside it.
func (p *Partition) forEach(first, last int64, f func(*inFlight)) {
	first, last = max(first, p.start), min(last, p.end-1)
	if first > last {
		return
	}
	p.split(first)
	p.split(last + 1)
	i, _ := slices.BinarySearchFunc(p.runs, first, func(r inFlight, o int64) int { return cmp.Compare(r.first, o) })
	for ; i < len(p.runs) && p.runs[i].first <= last; i++ {
		f(&p.runs[i])
	}
	p.merge()
}

// split makes offset o start a run (if it lies inside one).
func (p *Partition) split(o int64) {
	i, found := slices.BinarySearchFunc(p.runs, o, func(r inFlight, o int64) int { return cmp.Compare(r.first, o) })
	if found || i == 0 {
		return
	}
	r := p.runs[i-1]
	if o > r.last {
		return
	}
	left, right := r, r
	left.last, right.first = o-1, o
	p.runs[i-1] = left
	p.runs = slices.Insert(p.runs, i, right)
}

// merge joins adjacent runs alike in every field.
func (p *Partition) merge() {
	out := p.runs[:0]
	for _, r := range p.runs {
		if n := len(out); n > 0 {
			l := &out[n-1]
			if alike(*l, r) {
				l.last = r.last
				continue
			}
		}
		out = append(out, r)
	}
	p.runs = out
}

// alike reports whether run r follows run l and is alike in every field,
// so that the two are one run.
func alike(l, r inFlight) bool {
	return l.last+1 == r.first && l.state == r.state && l.deliveryCount == r.deliveryCount &&
		l.member == r.member && l.lockDeadline == r.lockDeadline && l.batch == r.batch
}

// advance moves SPSO past the prefix of Acknowledged and Archived records.
func (p *Partition) advance() {
	i := 0
	for i < len(p.runs) && (p.runs[i].state == Acknowledged || p.runs[i].state == Archived) {
		i++
	}
	if i == 0 {
		return
	}
	p.start = p.runs[i-1].last + 1
	p.runs = slices.Delete(p.runs, 0, i)
}

// release puts an acquired run back: Available for another delivery, or
// Archived once it was delivered the limit times.
func (p *Partition) release(r *inFlight) {
	r.state = Available
	if r.deliveryCount >= p.cfg.DeliveryCountLimit {
		r.state = Archived
	}
	r.member, r.lockDeadline = "", 0
}

// ExpireLocks releases the records whose acquisition lock ended at nowMs.
// It reports whether any was released.
func (p *Partition) ExpireLocks(nowMs int64) bool {
	changed := false
	for i := range p.runs {
		if r := &p.runs[i]; r.state == Acquired && r.lockDeadline <= nowMs {
			p.release(r)
			changed = true
		}
	}
	if changed {
		p.merge()
		p.advance()
	}
	return changed
}

// TimedOutRecords counts the records whose acquisition lock ended at nowMs:
// those ExpireLocks(nowMs) releases.
func (p *Partition) TimedOutRecords(nowMs int64) int64 {
	var n int64
	for _, r := range p.runs {
		if r.state == Acquired && r.lockDeadline <= nowMs {
			n += r.count()
		}
	}
	return n
}

// NextLockDeadline is the earliest acquisition lock deadline, -1 with none.
func (p *Partition) NextLockDeadline() int64 {
	next := int64(-1)
	for _, r := range p.runs {
		if r.state == Acquired && (next < 0 || r.lockDeadline < next) {
			next = r.lockDeadline
		}
	}
	return next
}

// ReleaseMember releases every record member holds (a member that left the
// group, or closed its share session). It reports whether any was held.
func (p *Partition) ReleaseMember(member string) bool {
	changed := false
	for i := range p.runs {
		if r := &p.runs[i]; r.state == Acquired && r.member == member {
			p.release(r)
			changed = true
		}
	}
	if changed {
		p.merge()
		p.advance()
	}
	return changed
}

// ValidateAckBatches checks a request's acknowledgement batches as Kafka's
// KafkaApis does before they reach a share-partition: each range ordered,
// batches in offset order without overlap, one type or one per offset,
// each type known (AckRenew only when renew is allowed). Errors are
// INVALID_REQUEST.
func ValidateAckBatches(batches []AckBatch, renew bool) error {
	prevLast := int64(-1)
	for i, b := range batches {
		n := b.LastOffset - b.FirstOffset + 1
		switch {
		case b.FirstOffset < 0 || n <= 0:
			return fmt.Errorf("acknowledgement batch %d..%d: %w", b.FirstOffset, b.LastOffset, kerr.InvalidRequest)
		case i > 0 && b.FirstOffset <= prevLast:
			return fmt.Errorf("acknowledgement batches overlap at %d: %w", b.FirstOffset, kerr.InvalidRequest)
		case len(b.Types) != 1 && int64(len(b.Types)) != n:
			return fmt.Errorf("acknowledgement batch %d..%d has %d types: %w", b.FirstOffset, b.LastOffset, len(b.Types), kerr.InvalidRequest)
		}
		for _, t := range b.Types {
			if t < AckGap || t > AckRenew || (t == AckRenew && !renew) {
				return fmt.Errorf("acknowledge type %d: %w", t, kerr.InvalidRequest)
			}
		}
		prevLast = b.LastOffset
	}
	return nil
}

// Acknowledge applies a member's acknowledgements at nowMs, as Kafka's
// SharePartition.acknowledge: offsets below SPSO are skipped (they are
// acknowledged or archived already), offsets past the in-flight records are
// INVALID_REQUEST, and every other offset must be acquired by member with
// its lock alive, else INVALID_RECORD_STATE. On an error nothing changes.
// The batches must have passed ValidateAckBatches.
func (p *Partition) Acknowledge(member string, nowMs int64, batches []AckBatch) error {
	for _, b := range batches {
		if b.LastOffset >= p.end {
			return fmt.Errorf("acknowledgement of %d..%d past the records acquired (to %d): %w", b.FirstOffset, b.LastOffset, p.end-1, kerr.InvalidRequest)
		}
		// Offsets below SPSO are done with; Kafka skips them.
		for _, r := range p.runs {
			if r.last < b.FirstOffset || r.first > b.LastOffset {
				continue
			}
			if r.state != Acquired || r.member != member || r.lockDeadline <= nowMs {
				return fmt.Errorf("acknowledgement of %d..%d: offsets %d..%d are %s, not acquired by this member: %w",
					b.FirstOffset, b.LastOffset, max(r.first, b.FirstOffset), min(r.last, b.LastOffset), r.state, kerr.InvalidRecordState)
			}
		}
	}
	for _, b := range batches {
		for i, t := range b.Types {
			first, last := b.FirstOffset, b.LastOffset
			if len(b.Types) > 1 {
				first = b.FirstOffset + int64(i)
				last = first
			}
			p.forEach(first, last, func(r *inFlight) {
				switch t {
				case AckGap, AckReject:
					r.state, r.member, r.lockDeadline = Archived, "", 0
				case AckAccept:
					r.state, r.member, r.lockDeadline = Acknowledged, "", 0
				case AckRelease:
					p.release(r)
				case AckRenew:
					r.lockDeadline = nowMs + p.cfg.RecordLockDurationMs
				}
			})
		}
	}
	p.merge()
	p.advance()
	return nil
}

// Persisted is the state as the persister keeps it: Acquired records are
// written as Available (their locks die with this leader), with the
// delivery count they reached.
func (p *Partition) Persisted(leaderEpoch int32) sharestate.Update {
	u := sharestate.Update{StateEpoch: p.stateEpoch, LeaderEpoch: leaderEpoch, StartOffset: p.start, Batches: []sharestate.Batch{}}
	for _, r := range p.runs {
		s := sharestate.DeliveryState(r.state)
		if r.state == Acquired {
			s = sharestate.Available
		}
		if r.state == Acknowledged || r.state == Archived {
			u.DeliveryCompleteCount += int32(r.count())
		}
		if n := len(u.Batches); n > 0 && u.Batches[n-1].DeliveryState == s && u.Batches[n-1].DeliveryCount == r.deliveryCount {
			u.Batches[n-1].LastOffset = r.last
			continue
		}
		u.Batches = append(u.Batches, sharestate.Batch{FirstOffset: r.first, LastOffset: r.last, DeliveryState: s, DeliveryCount: r.deliveryCount})
	}
	return u
}

// InFlightRecords counts the records from SPSO to SPEO.
func (p *Partition) InFlightRecords() int64 { return p.end - p.start }

// InFlightBatches counts the in-flight batches from SPSO to SPEO: the runs
// of offsets that share a state, delivery count and, when acquired, member
// and lock (Kafka's in-flight batches of its cached state).
func (p *Partition) InFlightBatches() int {
	n := 0
	for i, r := range p.runs {
		if i == 0 || !alike(p.runs[i-1], r) {
			n++
		}
	}
	return n
}
