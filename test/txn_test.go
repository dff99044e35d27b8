//go:build e2e

package test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The exactly-once suites (issue 7): consume-transform-produce with
// franz-go's GroupTransactSession across a kill -9, zombie fencing, a hung
// transaction aborted by its timeout, and an idempotent producer whose
// connections are cut. Third-party transactional clients are in
// txn_clients_test.go.

// etl is a consume-transform-produce pipeline: members GroupTransactSessions
// in one group copy every record of in to out, each poll in one
// transaction that also commits the group's offsets.
type etl struct {
	t       *testing.T
	seeds   []string
	in, out string
	group   string

	mu           sync.Mutex
	committed    int            // input records processed in committed transactions
	seen         map[string]int // input value -> committed transactions that processed it
	aborts       int            // transactions End did not commit
	endErrs      []string       // errors End returned (each ends a session; the member starts a new one)
	produceErrs  int            // produce promises failing with something other than ErrAborting
	lastProdErr  string
	sessionsMade int

	// The first member whose transaction starts after pauseAt input
	// records were committed stops with its records in the log (flushed)
	// and the transaction open: it reports its id on paused and waits for
	// resume before ending the transaction; pausedEnd is how that ended.
	pauseAt   int
	paused    chan int
	resume    chan struct{}
	pauseOnce sync.Once
	pausedEnd string

	logger kgo.Logger // nil: none

	// Committed offsets of the group as OffsetFetch answers them, polled
	// throughout: they may only grow (each commit is beyond the last, an
	// abort changes nothing); a fall means a coordinator served offsets
	// that lost commits.
	lastOffsets map[int32]int64
	regressions []string
	starts      []string // "member m session s: partition p from offset o", the first record each session read of each partition

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func startETL(t *testing.T, seeds []string, in, out, group string, members, pauseAt int, logger kgo.Logger) *etl {
	ctx, cancel := context.WithCancel(context.Background())
	e := &etl{t: t, seeds: seeds, in: in, out: out, group: group, seen: map[string]int{}, cancel: cancel,
		pauseAt: pauseAt, paused: make(chan int, 1), resume: make(chan struct{}), logger: logger,
		lastOffsets: map[int32]int64{}}
	adm := kadm.NewClient(kgoSeeds(t, seeds))
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		e.watchOffsets(ctx, adm)
	}()
	for id := range members {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			for ctx.Err() == nil {
				e.session(ctx, id)
			}
		}()
	}
	t.Cleanup(e.stop)
	return e
}

// watchOffsets polls the group's committed offsets until ctx ends and
// records every fall.
func (e *etl) watchOffsets(ctx context.Context, adm *kadm.Client) {
	start := time.Now()
	for ctx.Err() == nil {
		fctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		offs, err := adm.FetchOffsets(fctx, e.group)
		cancel()
		if err == nil {
			e.mu.Lock()
			for p, last := range e.lastOffsets {
				o, ok := offs.Lookup(e.in, p)
				switch {
				case !ok || o.Err != nil:
					e.regressions = append(e.regressions, fmt.Sprintf("%v: partition %d had offset %d, now none (%v)",
						time.Since(start).Round(time.Millisecond), p, last, o.Err))
				case o.At < last:
					e.regressions = append(e.regressions, fmt.Sprintf("%v: partition %d fell from %d to %d",
						time.Since(start).Round(time.Millisecond), p, last, o.At))
				}
			}
			offs.Each(func(o kadm.OffsetResponse) {
				if o.Topic == e.in && o.Err == nil {
					e.lastOffsets[o.Partition] = o.At
				}
			})
			e.mu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop ends every member and waits for them.
func (e *etl) stop() {
	e.cancel()
	e.wg.Wait()
}

func (e *etl) session(ctx context.Context, id int) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(e.seeds...),
		kgo.TransactionalID(fmt.Sprintf("%s-%d", e.group, id)),
		// Long enough that no transaction times out while the broker
		// restarts: this test is about the clients' recovery.
		kgo.TransactionTimeout(30 * time.Second),
		kgo.ConsumerGroup(e.group),
		kgo.ConsumeTopics(e.in),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.SessionTimeout(10 * time.Second),
		kgo.RetryTimeout(60 * time.Second),
		kgo.ProducerLinger(2 * time.Millisecond),
	}
	if e.logger != nil {
		opts = append(opts, kgo.WithLogger(e.logger), kgo.ClientID(fmt.Sprintf("%s-member-%d", e.group, id)))
	}
	s, err := kgo.NewGroupTransactSession(opts...)
	if err != nil {
		e.mu.Lock()
		e.endErrs = append(e.endErrs, fmt.Sprintf("member %d: new session: %v", id, err))
		e.mu.Unlock()
		return
	}
	e.mu.Lock()
	e.sessionsMade++
	session := e.sessionsMade
	e.mu.Unlock()
	defer s.Close()
	started := map[int32]bool{}
	for ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		fetches := s.PollRecords(pctx, 500)
		cancel()
		var recs []*kgo.Record
		fetches.EachRecord(func(r *kgo.Record) { recs = append(recs, r) })
		if len(recs) == 0 {
			continue
		}
		e.mu.Lock()
		for _, r := range recs {
			if !started[r.Partition] {
				started[r.Partition] = true
				e.starts = append(e.starts, fmt.Sprintf("member %d session %d: partition %d from offset %d", id, session, r.Partition, r.Offset))
			}
		}
		e.mu.Unlock()
		if err := s.Begin(); err != nil {
			e.mu.Lock()
			e.endErrs = append(e.endErrs, fmt.Sprintf("member %d: begin: %v", id, err))
			e.mu.Unlock()
			return
		}
		for _, r := range recs {
			s.Produce(ctx, &kgo.Record{Topic: e.out, Key: r.Key, Value: r.Value}, func(_ *kgo.Record, err error) {
				if err != nil && !errors.Is(err, kgo.ErrAborting) {
					e.mu.Lock()
					e.produceErrs++
					e.lastProdErr = err.Error()
					e.mu.Unlock()
				}
			})
		}
		pausing := false
		if e.pauseAt > 0 && e.committedCount() >= e.pauseAt {
			e.pauseOnce.Do(func() { pausing = true })
		}
		if pausing {
			fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			ferr := s.Client().Flush(fctx)
			cancel()
			e.mu.Lock()
			e.pausedEnd = fmt.Sprintf("member %d paused with %d records flushed (flush error %v)", id, len(recs), ferr)
			e.mu.Unlock()
			e.paused <- id
			select {
			case <-e.resume:
			case <-ctx.Done():
			}
		}
		ectx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		committed, err := s.End(ectx, kgo.TryCommit)
		cancel()
		e.mu.Lock()
		if pausing {
			e.pausedEnd += fmt.Sprintf("; then End: committed %v, err %v", committed, err)
		}
		switch {
		case err != nil:
			e.endErrs = append(e.endErrs, fmt.Sprintf("member %d: end: %v", id, err))
		case committed:
			e.committed += len(recs)
			for _, r := range recs {
				e.seen[string(r.Value)]++
			}
		default:
			e.aborts++
		}
		e.mu.Unlock()
		if err != nil {
			return // a new session, as a restarted process would
		}
	}
}

func (e *etl) committedCount() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.committed
}

// waitPaused waits until a member paused mid-transaction and returns its id.
func (e *etl) waitPaused(timeout time.Duration, logs func() string) int {
	e.t.Helper()
	select {
	case id := <-e.paused:
		return id
	case <-time.After(timeout):
		e.t.Fatalf("ETL did not commit %d records within %v: %s\n%s\n%s", e.pauseAt, timeout, e.summary(), e.diagnose(), logs())
	}
	return -1
}

// diagnose describes the members' transactions and asks their
// coordinators, as a partition leader does before a transactional append
// (AddPartitionsToTxn v4, verify only, KIP-890), whether the output
// partitions are in them: what a stuck ETL's produce requests wait on.
func (e *etl) diagnose() string {
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.seeds...))
	if err != nil {
		return err.Error()
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var b strings.Builder
	adm := kadm.NewClient(cl)
	for id := range 2 {
		txnID := fmt.Sprintf("%s-%d", e.group, id)
		described, err := adm.DescribeTransactions(ctx, txnID)
		d, derr := described.On(txnID, nil)
		fmt.Fprintf(&b, "%s: %+v (errors %v %v)\n", txnID, d, err, derr)
		if err != nil || derr != nil {
			continue
		}
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.Version = 4
		tr := kmsg.NewAddPartitionsToTxnRequestTransaction()
		tr.TransactionalID, tr.ProducerID, tr.ProducerEpoch, tr.VerifyOnly = txnID, d.ProducerID, d.ProducerEpoch, true
		tr.Topics = []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: e.out, Partitions: []int32{0, 1, 2}}}
		req.Transactions = append(req.Transactions, tr)
		for _, shard := range cl.RequestSharded(ctx, req) {
			if shard.Err != nil {
				fmt.Fprintf(&b, "  verify-only AddPartitionsToTxn via broker %d: %v\n", shard.Meta.NodeID, shard.Err)
				continue
			}
			resp := shard.Resp.(*kmsg.AddPartitionsToTxnResponse)
			fmt.Fprintf(&b, "  verify-only AddPartitionsToTxn via broker %d: top-level %v", shard.Meta.NodeID, kerr.ErrorForCode(resp.ErrorCode))
			for _, rt := range resp.Transactions {
				for _, t := range rt.Topics {
					for _, p := range t.Partitions {
						fmt.Fprintf(&b, "; %s/%d %v", t.Topic, p.Partition, kerr.ErrorForCode(p.ErrorCode))
					}
				}
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

func (e *etl) summary() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return fmt.Sprintf("committed %d input records, %d aborted transactions, %d sessions, %d produce errors (last %q), End errors %v; %s; sessions read %v",
		e.committed, e.aborts, e.sessionsMade, e.produceErrs, e.lastProdErr, e.endErrs, e.pausedEnd, e.starts)
}

// waitDone polls the group's committed offsets until they equal the end of
// every input partition.
func (e *etl) waitDone(adm *kadm.Client, inputEnd map[int32]int64, timeout time.Duration, logs func() string) {
	t := e.t
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		offs, err := adm.FetchOffsets(ctx, e.group)
		cancel()
		if err == nil {
			done := true
			got := map[int32]int64{}
			for p, end := range inputEnd {
				o, ok := offs.Lookup(e.in, p)
				got[p] = o.At
				done = done && ok && o.Err == nil && o.At == end
			}
			if done {
				return
			}
			last = fmt.Sprintf("committed offsets %v, input ends %v", got, inputEnd)
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			t.Fatalf("ETL not done within %v: %s; %s\n%s\n%s", timeout, last, e.summary(), e.diagnose(), logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// watcher is a read_committed consumer of every partition of a topic
// that runs for the whole ETL (across the kill) and keeps all it reads.
type watcher struct {
	mu   sync.Mutex
	recs map[int32][]*kgo.Record
	errs int
	stop context.CancelFunc
	done chan struct{}
}

func startWatcher(t *testing.T, seeds []string, topic string, partitions int32) *watcher {
	parts := map[int32]kgo.Offset{}
	for p := range partitions {
		parts[p] = kgo.NewOffset().At(0)
	}
	cl := kgoSeeds(t, seeds, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(), kgo.FetchMaxWait(200*time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	w := &watcher{recs: map[int32][]*kgo.Record{}, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			fetches := cl.PollFetches(ctx)
			w.mu.Lock()
			fetches.EachError(func(string, int32, error) { w.errs++ })
			fetches.EachRecord(func(r *kgo.Record) { w.recs[r.Partition] = append(w.recs[r.Partition], r) })
			w.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); <-w.done })
	return w
}

// waitReached waits until the watcher has read up to (excluding) end on
// every partition, then stops it.
func (w *watcher) waitReached(t *testing.T, end map[int32]int64, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		w.mu.Lock()
		reached := true
		got := map[int32]int64{}
		for p, e := range end {
			rs := w.recs[p]
			last := int64(-1)
			if len(rs) > 0 {
				last = rs[len(rs)-1].Offset
			}
			got[p] = last
			reached = reached && last >= e-1
		}
		w.mu.Unlock()
		if reached {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("read_committed watcher: last offsets %v within %v, want the ends %v", got, timeout, end)
		}
		time.Sleep(50 * time.Millisecond)
	}
	w.stop()
	<-w.done
}

// etlInput writes n records "v%05d" keyed "k%02d" (i%50) to in with the
// default (key hash) partitioner and returns the end offsets.
func etlInput(t *testing.T, seeds []string, in string, n int) map[int32]int64 {
	t.Helper()
	cl := kgoSeeds(t, seeds, kgo.RequiredAcks(kgo.AllISRAcks()))
	recs := make([]*kgo.Record, 0, n)
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: in, Key: fmt.Appendf(nil, "k%02d", i%50), Value: fmt.Appendf(nil, "v%05d", i)})
	}
	if err := cl.ProduceSync(ctxT(t, 60*time.Second), recs...).FirstErr(); err != nil {
		t.Fatalf("produce input: %v", err)
	}
	cl.Close()
	end := map[int32]int64{}
	listed, err := kadm.NewClient(kgoSeeds(t, seeds)).ListEndOffsets(ctxT(t, 20*time.Second), in)
	if err != nil {
		t.Fatal(err)
	}
	listed.Each(func(o kadm.ListedOffset) { end[o.Partition] = o.Offset })
	return end
}

// checkETLOutput reads out back both ways and fails unless the committed
// records are exactly the n input values, each once, each key's values in
// input order; a read_committed read returns exactly those; the watcher
// (read_committed across the fault) saw nothing else; no transaction is left
// open.
func checkETLOutput(t *testing.T, seeds []string, out string, n int, w *watcher) {
	t.Helper()
	all, end := readBack(t, seeds, out, kgo.ReadUncommitted())
	view := classify(t, all)
	counts := make([]int, n)
	copies := make([][]string, n) // where each committed copy is: "p@offset producer/epoch"
	lastOfKey := map[string]int{}
	var committed, aborted, commits, abortMarkers int
	for p, v := range view {
		if len(v.open) > 0 {
			t.Errorf("%s/%d: %d records of a transaction with no marker: %s", out, p, len(v.open), describeOffsets(v.open))
		}
		for _, m := range v.markers {
			if m.commit {
				commits++
			} else {
				abortMarkers++
			}
		}
		aborted += len(v.aborted)
		for _, r := range v.committed {
			committed++
			i, err := strconv.Atoi(strings.TrimPrefix(string(r.Value), "v"))
			if err != nil || i < 0 || i >= n {
				t.Fatalf("%s/%d@%d: unexpected value %q", out, p, r.Offset, r.Value)
			}
			counts[i]++
			copies[i] = append(copies[i], fmt.Sprintf("%d@%d pid %d/%d", p, r.Offset, r.ProducerID, r.ProducerEpoch))
			if prev, ok := lastOfKey[string(r.Key)]; ok && i < prev {
				t.Errorf("%s/%d@%d: key %s has value %d after %d (out of input order)", out, p, r.Offset, r.Key, i, prev)
			}
			lastOfKey[string(r.Key)] = i
		}
	}
	t.Logf("%s: log end offsets %v; %d committed records, %d aborted records, %d COMMIT and %d ABORT markers",
		out, end, committed, aborted, commits, abortMarkers)
	if t.Failed() {
		t.Logf("transactions and producers now:\n%s", describeTxnState(seeds, out))
	}
	var missing, dup []int
	for i, c := range counts {
		switch {
		case c == 0:
			missing = append(missing, i)
		case c > 1:
			dup = append(dup, i)
		}
	}
	if len(missing) > 0 || len(dup) > 0 {
		var where []string
		for _, i := range head(dup) {
			where = append(where, fmt.Sprintf("v%05d at %v", i, copies[i]))
		}
		t.Errorf("%s: committed output is not the input exactly once: %d values missing (first %v), %d duplicated (first %v): %s",
			out, len(missing), head(missing), len(dup), head(dup), strings.Join(where, "; "))
	}

	rc, _ := readBack(t, seeds, out, kgo.ReadCommitted())
	checkReadCommitted(t, out, rc, view)

	if w != nil {
		w.waitReached(t, end, 30*time.Second)
		w.mu.Lock()
		defer w.mu.Unlock()
		checkReadCommitted(t, out+" (watcher across the fault)", w.recs, view)
	}
}

func head(s []int) []int {
	if len(s) > 10 {
		return s[:10]
	}
	return s
}

// TestTxnETLKill9: two GroupTransactSessions copy 20000 records from a
// 3-partition topic to another, offsets committed in each transaction. A
// third of the way through, one member stops with a transaction open and
// its records flushed to the log; the single broker is killed with SIGKILL
// and restarted on the same data dir, and the member ends its transaction.
// The committed output is the input exactly once (per key in input order),
// the group's committed offsets never fall, and read_committed (a consumer
// running throughout, and one after) never returns an aborted record.
func TestTxnETLKill9(t *testing.T) {
	t.Parallel()
	const n = 20000
	b := startBroker(t, "group.initial.rebalance.delay.ms=0")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("broker log:\n%s", b.log())
		}
	})
	seeds := []string{b.addr()}
	const in, out, group = "etl-in", "etl-out", "etl"
	setup := newKgo(t, b)
	createTopic(t, setup, in, 3, nil)
	createTopic(t, setup, out, 3, nil)
	inputEnd := etlInput(t, seeds, in, n)

	logger, clientLog := etlLogger(t)
	keepLogsOnFailure(t, func() map[string]string {
		return map[string]string{"broker.log": b.logPath, "clients.log": clientLog}
	})
	w := startWatcher(t, seeds, out, 3)
	e := startETL(t, seeds, in, out, group, 2, n/3, logger)
	member := e.waitPaused(40*time.Second, b.log)
	b.kill9()
	t.Logf("killed the broker with SIGKILL while member %d's transaction was open: %s", member, e.summary())
	b.start()
	close(e.resume)

	e.waitDone(kadm.NewClient(kgoSeeds(t, seeds)), inputEnd, 60*time.Second, b.log)
	e.stop()
	t.Logf("ETL done: %s", e.summary())
	checkETLSessions(t, e, n, b.addr())
	checkETLOutput(t, seeds, out, n, w)
	checkTxnStates(t, kadm.NewClient(kgoSeeds(t, seeds)), group, 2)
}

// checkETLSessions: as the sessions saw it, every input record went through
// exactly one committed transaction.
// deadBroker is the address of a broker a test killed: franz-go gives up
// dialling it after a few tries and fails the session's End with "unable to
// dial"; the transaction is aborted and its records processed again, so
// exactly-once still holds (checked above) and the error is expected.
func checkETLSessions(t *testing.T, e *etl, n int, deadBroker string) {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	var dup []string
	for v, c := range e.seen {
		if c > 1 {
			dup = append(dup, v)
		}
	}
	if len(dup) > 0 || len(e.seen) != n {
		t.Errorf("sessions: %d distinct input values in committed transactions (want %d), %d processed in more than one committed transaction (e.g. %v)",
			len(e.seen), n, len(dup), dup[:min(len(dup), 5)])
	}
	if len(e.regressions) > 0 {
		t.Errorf("OffsetFetch answered committed offsets below earlier answers (a coordinator lost commits): %v", e.regressions)
	}
	var unexpected []string
	for _, err := range e.endErrs {
		if deadBroker != "" && strings.Contains(err, "unable to dial") && strings.Contains(err, deadBroker) {
			t.Logf("End failed while its coordinator was down (aborted, then redone): %s", err)
			continue
		}
		unexpected = append(unexpected, err)
	}
	if len(unexpected) > 0 {
		t.Errorf("GroupTransactSession.End returned errors (franz-go: none is retryable; the broker should not cause them): %v", unexpected)
	}
}

// checkTxnStates: DescribeTransactions and ListTransactions know the ETL's
// transactional ids and none is left open.
func checkTxnStates(t *testing.T, adm *kadm.Client, group string, members int) {
	t.Helper()
	var ids []string
	for id := range members {
		ids = append(ids, fmt.Sprintf("%s-%d", group, id))
	}
	for _, id := range ids {
		d := waitTxnState(t, adm, id, 10*time.Second, "CompleteCommit", "CompleteAbort", "Empty")
		t.Logf("transaction %s: %s, producer %d epoch %d", id, d.State, d.ProducerID, d.ProducerEpoch)
	}
	listed, err := adm.ListTransactions(ctxT(t, 10*time.Second), nil, nil)
	if err != nil {
		t.Errorf("list transactions: %v", err)
		return
	}
	got := listed.TransactionalIDs()
	for _, id := range ids {
		found := false
		for _, g := range got {
			found = found || g == id
		}
		if !found {
			t.Errorf("ListTransactions: %v, missing %s", got, id)
		}
	}
	ongoing, err := adm.ListTransactions(ctxT(t, 10*time.Second), nil, []string{"Ongoing", "PrepareCommit", "PrepareAbort"})
	if err != nil {
		t.Errorf("list transactions by state: %v", err)
	} else if ids := ongoing.TransactionalIDs(); len(ids) > 0 {
		t.Errorf("ListTransactions(Ongoing, PrepareCommit, PrepareAbort) after the ETL: %v", ids)
	}
}

// TestTxnETLClusterCoordinatorKill: the ETL of TestTxnETLKill9 (10000
// records) on 3 controllers and 3 brokers, topics with 3 replicas and
// min.insync.replicas=2. When a member stops with its transaction open, the
// broker coordinating that member's transactional id is killed with
// SIGKILL; the member then ends its transaction through the new
// coordinator, the ETL must go on without the broker, and, once it is back,
// finish with the same guarantees.
func TestTxnETLClusterCoordinatorKill(t *testing.T) {
	if testing.Short() {
		t.Skip("six processes")
	}
	const n = 10000
	c := startCluster(t, 3, 3, "group.initial.rebalance.delay.ms=0", "min.insync.replicas=2")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("cluster logs:\n%s", c.logs())
		}
	})
	seeds := c.bootstrap()
	const in, out, group = "cetl-in", "cetl-out", "cetl"
	adm := kadm.NewClient(c.client())
	for _, topic := range []string{in, out} {
		c.eventually("create "+topic, 30*time.Second, func() error {
			resp, err := adm.CreateTopic(ctxT(t, 10*time.Second), 3, 3, nil, topic)
			if err == nil && resp.Err != nil && !errors.Is(resp.Err, kerr.TopicAlreadyExists) {
				err = resp.Err
			}
			return err
		})
	}
	inputEnd := etlInput(t, seeds, in, n)
	logger, clientLog := etlLogger(t)
	keepLogsOnFailure(t, func() map[string]string {
		logs := map[string]string{"clients.log": clientLog}
		for _, n := range append(slices.Clone(c.controllers), c.brokers...) {
			logs[fmt.Sprintf("node-%d.log", n.id)] = n.logPath
		}
		// The members' __transaction_state partitions on every broker.
		for id := range 2 {
			p := kafkaPartition(fmt.Sprintf("%s-%d", group, id), 50)
			for _, n := range c.brokers {
				logs[fmt.Sprintf("node-%d-__transaction_state-%d", n.id, p)] = filepath.Join(n.dataDir, fmt.Sprintf("__transaction_state-%d", p))
			}
		}
		return logs
	})
	w := startWatcher(t, seeds, out, 3)
	e := startETL(t, seeds, in, out, group, 2, n/3, logger)
	member := e.waitPaused(40*time.Second, c.logs)
	txnID := fmt.Sprintf("%s-%d", group, member)
	coord, ok := adm.FindTxnCoordinators(ctxT(t, 10*time.Second), txnID)[txnID]
	if err := coord.Err; !ok || err != nil {
		t.Fatalf("find transaction coordinator of %s: %v", txnID, err)
	}
	var victim *node
	for _, b := range c.brokers {
		if b.id == coord.NodeID {
			victim = b
		}
	}
	if victim == nil {
		t.Fatalf("transaction coordinator %d is not one of the brokers", coord.NodeID)
	}
	at := e.committedCount()
	victim.kill9()
	t.Logf("killed broker %d (transaction coordinator of %s, whose transaction is open) with SIGKILL at %s", victim.id, txnID, e.summary())
	close(e.resume)
	// The ETL must make progress on the two others.
	deadline := time.Now().Add(30 * time.Second)
	for e.committedCount() < min(at+n/6, n) {
		if time.Now().After(deadline) {
			t.Errorf("no progress without broker %d: %d committed at the kill, %s", victim.id, at, e.summary())
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("restarting broker %d at %s", victim.id, e.summary())
	victim.start()
	e.waitDone(kadm.NewClient(c.client()), inputEnd, 60*time.Second, c.logs)
	e.stop()
	t.Logf("ETL done: %s", e.summary())
	checkETLSessions(t, e, n, victim.addr())
	checkETLOutput(t, c.bootstrap(), out, n, w)
	checkTxnStates(t, kadm.NewClient(c.client()), group, 2)
}

// kafkaPartition is the partition of an internal topic with n partitions
// that Kafka's coordinators use for key: abs(Java String.hashCode) % n.
func kafkaPartition(key string, n int32) int32 {
	var h int32
	for _, c := range key {
		h = 31*h + c
	}
	if h < 0 {
		h = -h
	}
	return h % n
}

// isFenced reports whether err is one of Kafka's answers to a zombie
// producer.
func isFenced(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch)
}

// TestTxnZombieFenced: a second producer with the same transactional id
// fences the first; the first's open transaction is aborted, and its next
// produce and EndTxn fail with PRODUCER_FENCED or INVALID_PRODUCER_EPOCH
// and write nothing.
func TestTxnZombieFenced(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("broker log:\n%s", b.log())
		}
	})
	seeds := []string{b.addr()}
	const topic, id = "txn-zombie", "zombie"
	createTopic(t, newKgo(t, b), topic, 1, nil)
	adm := kadm.NewClient(kgoSeeds(t, seeds))

	zombie := txnProducer(t, seeds, id)
	if err := zombie.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	r1, err := zombie.ProduceSync(ctxT(t, 30*time.Second), &kgo.Record{Topic: topic, Value: []byte("zombie-1")}).First()
	if err != nil {
		t.Fatalf("first producer's produce: %v", err)
	}
	d := waitTxnState(t, adm, id, 10*time.Second, "Ongoing")
	if d.ProducerID != r1.ProducerID || d.ProducerEpoch != r1.ProducerEpoch {
		t.Errorf("DescribeTransactions: producer %d epoch %d, the record was written by %d epoch %d", d.ProducerID, d.ProducerEpoch, r1.ProducerID, r1.ProducerEpoch)
	}
	if _, ok := d.Topics[topic][0]; !ok {
		t.Errorf("DescribeTransactions of the ongoing transaction: partitions %v, want %s/0", d.Topics, topic)
	}

	fresh := txnProducer(t, seeds, id)
	if err := fresh.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	r2, err := fresh.ProduceSync(ctxT(t, 30*time.Second), &kgo.Record{Topic: topic, Value: []byte("fresh-1")}).First()
	if err != nil {
		t.Fatalf("second producer's produce: %v", err)
	}
	if r2.ProducerID != r1.ProducerID || r2.ProducerEpoch <= r1.ProducerEpoch {
		t.Errorf("second producer: id %d epoch %d; want the same id %d with an epoch above %d", r2.ProducerID, r2.ProducerEpoch, r1.ProducerID, r1.ProducerEpoch)
	}
	if err := fresh.EndTransaction(ctxT(t, 30*time.Second), kgo.TryCommit); err != nil {
		t.Fatalf("second producer's commit: %v", err)
	}

	// The zombie carries on with its old epoch.
	_, perr := zombie.ProduceSync(ctxT(t, 30*time.Second), &kgo.Record{Topic: topic, Value: []byte("zombie-2")}).First()
	eerr := zombie.EndTransaction(ctxT(t, 30*time.Second), kgo.TryCommit)
	t.Logf("zombie: produce %v; EndTransaction(commit) %v", perr, eerr)
	if !isFenced(perr) {
		t.Errorf("zombie's produce: %v, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", perr)
	}
	if eerr == nil {
		t.Errorf("zombie's EndTransaction(commit) succeeded, want an error")
	}

	// franz-go does not send a commit once its producer id failed
	// (OPERATION_NOT_ATTEMPTED); the coordinator's own answer to the
	// zombie's EndTxn, with its old epoch, must be a fencing error.
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = id, r1.ProducerID, r1.ProducerEpoch, true
	if resp, err := end.RequestWith(ctxT(t, 10*time.Second), kgoSeeds(t, seeds)); err != nil {
		t.Errorf("zombie's EndTxn: %v", err)
	} else if err := kerr.ErrorForCode(resp.ErrorCode); !isFenced(err) {
		t.Errorf("zombie's EndTxn(commit) with epoch %d: %v, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", r1.ProducerEpoch, err)
	} else {
		t.Logf("zombie's EndTxn v%d (commit) with epoch %d: %v", end.Version, r1.ProducerEpoch, err)
	}

	d = waitTxnState(t, adm, id, 10*time.Second, "CompleteCommit")
	if d.ProducerEpoch < r2.ProducerEpoch {
		t.Errorf("DescribeTransactions after the commit: epoch %d, below the second producer's %d", d.ProducerEpoch, r2.ProducerEpoch)
	}

	all, _ := readBack(t, seeds, topic, kgo.ReadUncommitted())
	view := classify(t, all)[0]
	var vals []string
	for _, r := range dataOnly(all[0]) {
		vals = append(vals, string(r.Value))
	}
	if got := fmt.Sprint(vals); got != "[zombie-1 fresh-1]" {
		t.Errorf("log holds %v, want [zombie-1 fresh-1] (zombie-2 must be refused)", got)
	}
	if len(view.aborted) != 1 || string(view.aborted[0].Value) != "zombie-1" ||
		len(view.committed) != 1 || string(view.committed[0].Value) != "fresh-1" {
		t.Errorf("markers: aborted [%s], committed [%s], markers %+v; want zombie-1 aborted, fresh-1 committed",
			describeOffsets(view.aborted), describeOffsets(view.committed), view.markers)
	}
	rc, _ := readBack(t, seeds, topic, kgo.ReadCommitted())
	checkReadCommitted(t, topic, rc, map[int32]*txnView{0: view})
}

// TestTxnHungAborted: a transaction with transaction.timeout.ms=2000 that
// its producer never ends holds the last stable offset at its first record,
// so read_committed sees nothing of the transaction committed after it;
// the coordinator aborts it (cleanup every 500 ms), bumping the epoch, the
// last stable offset reaches the log end, read_committed returns the later
// committed records, and the hung producer cannot commit any more.
func TestTxnHungAborted(t *testing.T) {
	t.Parallel()
	b := startBroker(t, "transaction.abort.timed.out.transaction.cleanup.interval.ms=500")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("broker log:\n%s", b.log())
		}
	})
	seeds := []string{b.addr()}
	const topic = "txn-hung"
	createTopic(t, newKgo(t, b), topic, 1, nil)
	adm := kadm.NewClient(kgoSeeds(t, seeds))

	hung := txnProducer(t, seeds, "hung", kgo.TransactionTimeout(2*time.Second))
	// Warm up: InitProducerId and the first metadata before the clock starts.
	if err := hung.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var hungRecs []*kgo.Record
	for i := range 5 {
		hungRecs = append(hungRecs, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "hung-%d", i)})
	}
	if err := hung.ProduceSync(ctxT(t, 30*time.Second), hungRecs...).FirstErr(); err != nil {
		t.Fatalf("hung producer's produce: %v", err)
	}
	hungEpoch := hungRecs[0].ProducerEpoch

	later := txnProducer(t, seeds, "later")
	if err := later.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	var laterRecs []*kgo.Record
	for i := range 5 {
		laterRecs = append(laterRecs, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "later-%d", i)})
	}
	if err := later.ProduceSync(ctxT(t, 30*time.Second), laterRecs...).FirstErr(); err != nil {
		t.Fatalf("later producer's produce: %v", err)
	}
	if err := later.EndTransaction(ctxT(t, 30*time.Second), kgo.TryCommit); err != nil {
		t.Fatalf("later producer's commit: %v", err)
	}
	lso, err := adm.ListCommittedOffsets(ctxT(t, 5*time.Second), topic)
	if elapsed := time.Since(start); err == nil && elapsed < 1500*time.Millisecond {
		o, _ := lso.Lookup(topic, 0)
		if o.Err != nil || o.Offset != 0 {
			t.Errorf("last stable offset %d (%v) %v into the hung transaction, want 0 (its first offset)", o.Offset, o.Err, elapsed)
		}
		d := waitTxnState(t, adm, "hung", time.Second, "Ongoing")
		t.Logf("hung transaction before its timeout: %+v", d)
	} else {
		t.Logf("last stable offset not checked before the timeout (%v elapsed, err %v)", elapsed, err)
	}

	d := waitTxnState(t, adm, "hung", 15*time.Second, "CompleteAbort")
	elapsed := time.Since(start)
	t.Logf("hung transaction aborted within %v: %+v", elapsed, d)
	if elapsed < 2*time.Second {
		t.Errorf("hung transaction aborted after %v, before its timeout of 2s", elapsed)
	}
	if d.ProducerEpoch <= hungEpoch {
		t.Errorf("epoch after the timeout abort %d, want above the hung producer's %d (Kafka fences it)", d.ProducerEpoch, hungEpoch)
	}
	end := endOffsets(t, newKgo(t, b), topic)[0]
	if end != 12 {
		t.Errorf("log end offset %d, want 12 (5 hung, 5 later, COMMIT, ABORT)", end)
	}
	waitLSO(t, adm, topic, 0, end, 10*time.Second)

	all, _ := readBack(t, seeds, topic, kgo.ReadUncommitted())
	view := classify(t, all)[0]
	if fmt.Sprint(values(view.aborted)) != "[hung-0 hung-1 hung-2 hung-3 hung-4]" ||
		fmt.Sprint(values(view.committed)) != "[later-0 later-1 later-2 later-3 later-4]" {
		t.Errorf("aborted %v, committed %v; markers %+v", values(view.aborted), values(view.committed), view.markers)
	}
	rc, _ := readBack(t, seeds, topic, kgo.ReadCommitted())
	checkReadCommitted(t, topic, rc, map[int32]*txnView{0: view})

	if err := hung.EndTransaction(ctxT(t, 30*time.Second), kgo.TryCommit); err == nil {
		t.Errorf("the hung producer committed after its transaction was aborted by the coordinator")
	} else {
		t.Logf("hung producer's commit after the timeout: %v", err)
	}
	all, _ = readBack(t, seeds, topic, kgo.ReadUncommitted())
	if got := len(dataOnly(all[0])); got != 10 {
		t.Errorf("%d data records after the hung producer's late commit, want 10", got)
	}
}

func values(rs []*kgo.Record) []string {
	var out []string
	for _, r := range rs {
		out = append(out, string(r.Value))
	}
	return out
}

// connCutter is a franz-go dialer whose connections are cut at every
// every-th Produce request, up to max cuts, alternately in the middle of the
// request (half of it sent) and right after it (the broker gets it, the
// client never reads the answer).
type connCutter struct {
	every, max int

	mu       sync.Mutex
	produces int // Produce requests written (or begun)
	halfCuts int // produce requests cut halfway through
	lostAcks int // produce requests sent in full, connection closed before the answer
}

func (c *connCutter) dial(ctx context.Context, network, host string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, host)
	if err != nil {
		return nil, err
	}
	return &cutConn{Conn: conn, c: c}, nil
}

type cutConn struct {
	net.Conn
	c *connCutter
}

// Write sends a request (franz-go writes each in one call) and cuts the
// connection at the chosen Produce requests (api key 0).
func (cc *cutConn) Write(p []byte) (int, error) {
	c := cc.c
	c.mu.Lock()
	cut, half := false, false
	if len(p) > 6 && binary.BigEndian.Uint16(p[4:6]) == 0 {
		c.produces++
		if c.produces%c.every == 0 && c.halfCuts+c.lostAcks < c.max {
			cut, half = true, c.halfCuts <= c.lostAcks
			if half {
				c.halfCuts++
			} else {
				c.lostAcks++
			}
		}
	}
	c.mu.Unlock()
	if !cut {
		return cc.Conn.Write(p)
	}
	if half {
		n, _ := cc.Conn.Write(p[:len(p)/2])
		cc.Conn.Close()
		return n, errors.New("cut halfway through a produce request")
	}
	n, err := cc.Conn.Write(p)
	cc.Conn.Close()
	return n, err
}

// TestTxnIdempotentConnCut: an idempotent producer (acks=all, up to five
// requests in flight) writes 20000 records while its Produce requests'
// connections are cut at every fifth Produce request, sixteen times, half of
// them after the broker got the whole request; the retries must not duplicate or reorder anything.
// (idempotence_test.go has no connection-cut test.)
func TestTxnIdempotentConnCut(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	const topic, n = "idempotent-cut", 20000
	createTopic(t, newKgo(t, b), topic, 3, nil)
	cutter := &connCutter{every: 5, max: 16}
	cl := kgoSeeds(t, []string{b.addr()}, kgo.Dialer(cutter.dial), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(time.Millisecond), kgo.MaxBufferedRecords(3000),
		kgo.ProducerBatchMaxBytes(1024),         // small requests (20000 records need about 150), so all 16 cuts happen
		kgo.MetadataMinAge(50*time.Millisecond)) // a cut triggers a metadata refresh; do not wait 5s for it
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		errs    int
		lastErr error
	)
	ctx := ctxT(t, 60*time.Second)
	start := time.Now()
	for i := range n {
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: int32(i % 3), Value: fmt.Appendf(nil, "cut-%d", i)}, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				mu.Lock()
				errs++
				lastErr = err
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	cutter.mu.Lock()
	t.Logf("%d records in %v; %d produce requests, %d cut halfway, %d cut after sending them",
		n, time.Since(start), cutter.produces, cutter.halfCuts, cutter.lostAcks)
	if cutter.lostAcks+cutter.halfCuts < cutter.max {
		t.Errorf("only %d cuts of %d", cutter.lostAcks+cutter.halfCuts, cutter.max)
	}
	cutter.mu.Unlock()
	if errs > 0 {
		t.Fatalf("%d records failed, last: %v", errs, lastErr)
	}
	checkExactlyOnce(t, b, topic, "cut", n)
}
