//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The workloads. Each runs until its context ends and records every
// operation in the history: sends with their acknowledged offsets, every
// record a consumer returns, every commit and OffsetFetch, every
// transaction.

// workloads is what runs during a chaos run, and how to stop it.
type workloads struct {
	c *cluster
	h *History

	produceStop context.CancelFunc // the producers (stopped first, so the consumers can catch up)
	consumeStop context.CancelFunc // everything else
	producers   sync.WaitGroup
	consumers   sync.WaitGroup
}

const (
	queueTopic = "queue"
	txnIn      = "txn-in"
	txnOut     = "txn-out"
	etlGroup   = "etl"
)

var queueGroups = []string{"g0", "g1", "g2"}

func (w *workloads) client(opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(w.c.seeds()...),
		kgo.DialTimeout(3 * time.Second), kgo.RetryTimeout(30 * time.Second)}, opts...)...)
}

func startWorkloads(c *cluster, h *History, seed uint64) *workloads {
	w := &workloads{c: c, h: h}
	pctx, pstop := context.WithCancel(context.Background())
	cctx, cstop := context.WithCancel(context.Background())
	w.produceStop, w.consumeStop = pstop, cstop
	goGroup := func(wg *sync.WaitGroup, f func()) {
		wg.Add(1)
		go func() { defer wg.Done(); f() }()
	}
	for id := range 2 {
		goGroup(&w.producers, func() { w.produce(pctx, fmt.Sprintf("producer-%d", id), queueTopic, 6, 8*time.Millisecond) })
	}
	goGroup(&w.producers, func() { w.produce(pctx, "txn-in-producer", txnIn, 3, 20*time.Millisecond) })
	goGroup(&w.consumers, func() { w.read(cctx, "queue-reader", queueTopic, 6, false) })
	goGroup(&w.consumers, func() { w.read(cctx, "txn-out-reader", txnOut, 3, true) })
	for i, g := range queueGroups {
		goGroup(&w.consumers, func() { w.groupMember(cctx, g, rand.New(rand.NewPCG(seed, uint64(i)))) })
	}
	for id := range 2 {
		goGroup(&w.consumers, func() {
			for s := 1; cctx.Err() == nil; s++ {
				w.etlSession(cctx, fmt.Sprintf("etl-%d/s%d", id, s), fmt.Sprintf("etl-%d", id))
			}
		})
	}
	goGroup(&w.consumers, func() { w.watchOffsets(cctx, append([]string{etlGroup}, queueGroups...)) })
	return w
}

// produce is an idempotent acks=all producer of unique values, spread
// over the partitions in turn, one every interval.
func (w *workloads) produce(ctx context.Context, process, topic string, partitions int32, interval time.Duration) {
	cl, err := w.client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(20*time.Second),
		kgo.ProducerLinger(2*time.Millisecond), kgo.MaxBufferedRecords(2000))
	if err != nil {
		panic(err)
	}
	defer cl.Close()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for seq := 0; ; seq++ {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			cl.Flush(fctx)
			cancel()
			return
		case <-tick.C:
		}
		p := int32(seq) % partitions
		value := fmt.Sprintf("%s-%d", process, seq)
		invoke := w.h.Now()
		cl.Produce(context.Background(), &kgo.Record{Partition: p, Value: []byte(value)}, func(r *kgo.Record, err error) {
			op := Op{Process: process, F: FSend, Invoke: invoke, Topic: topic, Partition: p, Value: value, Outcome: OK, Offset: r.Offset}
			if err != nil {
				op.Outcome, op.Offset, op.Err = Info, -1, err.Error()
			}
			w.h.Add(op)
		})
	}
}

// read consumes every partition of topic from the start, outside any
// group, and records each record it returns.
func (w *workloads) read(ctx context.Context, process, topic string, partitions int32, readCommitted bool) {
	parts := map[int32]kgo.Offset{}
	for p := range partitions {
		parts[p] = kgo.NewOffset().AtStart()
	}
	level := kgo.ReadUncommitted()
	if readCommitted {
		level = kgo.ReadCommitted()
	}
	cl, err := w.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}),
		kgo.FetchIsolationLevel(level), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		panic(err)
	}
	defer cl.Close()
	for ctx.Err() == nil {
		invoke := w.h.Now()
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			w.h.Add(Op{Process: process, F: FRead, Outcome: OK, Invoke: invoke, Topic: r.Topic, Partition: r.Partition,
				Offset: r.Offset, Value: string(r.Value), Committed: readCommitted})
		})
	}
}

// groupMember runs one member of group at a time: each session joins,
// polls and commits what it polled (synchronously) for a few seconds, and
// leaves; the next session starts from the committed offsets.
func (w *workloads) groupMember(ctx context.Context, group string, rng *rand.Rand) {
	for s := 1; ctx.Err() == nil; s++ {
		process := fmt.Sprintf("%s/s%d", group, s)
		cl, err := w.client(kgo.ConsumerGroup(group), kgo.ConsumeTopics(queueTopic), kgo.DisableAutoCommit(),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.SessionTimeout(8*time.Second),
			kgo.FetchMaxWait(500*time.Millisecond))
		if err != nil {
			panic(err)
		}
		end := time.Now().Add(3*time.Second + time.Duration(rng.IntN(7000))*time.Millisecond)
		for time.Now().Before(end) && ctx.Err() == nil {
			// At most four polls (and commits) a second: the point is
			// many commits across faults, not load.
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
			pctx, cancel := context.WithTimeout(ctx, time.Second)
			invoke := w.h.Now()
			fs := cl.PollFetches(pctx)
			cancel()
			next := map[int32]kgo.EpochOffset{}
			fs.EachRecord(func(r *kgo.Record) {
				w.h.Add(Op{Process: process, F: FRead, Outcome: OK, Invoke: invoke, Group: group, Topic: r.Topic,
					Partition: r.Partition, Offset: r.Offset, Value: string(r.Value)})
				next[r.Partition] = kgo.EpochOffset{Epoch: r.LeaderEpoch, Offset: r.Offset + 1}
			})
			if len(next) == 0 {
				continue
			}
			w.commit(cl, process, group, next)
		}
		cl.Close()
	}
}

// commit commits offsets synchronously and records each partition's
// outcome: ok only when the coordinator answered no error for it.
func (w *workloads) commit(cl *kgo.Client, process, group string, next map[int32]kgo.EpochOffset) {
	invoke := w.h.Now()
	cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	answered := map[int32]error{}
	var reqErr error
	cl.CommitOffsetsSync(cctx, map[string]map[int32]kgo.EpochOffset{queueTopic: next},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			reqErr = err
			if resp == nil {
				return
			}
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					answered[p.Partition] = kerr.ErrorForCode(p.ErrorCode)
				}
			}
		})
	for p, o := range next {
		op := Op{Process: process, F: FCommit, Outcome: OK, Invoke: invoke, Group: group, Topic: queueTopic, Partition: p, Offset: o.Offset}
		perr, ok := answered[p]
		switch {
		case reqErr != nil:
			op.Outcome, op.Err = Info, reqErr.Error()
		case !ok:
			op.Outcome, op.Err = Info, "no answer for the partition"
		case perr != nil:
			op.Outcome, op.Err = Info, perr.Error()
		}
		w.h.Add(op)
	}
}

// etlSession is one member of the read-process-write workload: each poll
// of txn-in is copied to txn-out in a transaction that also commits the
// group's offsets. A session ends on an error from End, as a restarted
// process would.
func (w *workloads) etlSession(ctx context.Context, process, txnID string) {
	s, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(w.c.seeds()...), kgo.DialTimeout(3*time.Second),
		kgo.TransactionalID(txnID), kgo.TransactionTimeout(20*time.Second),
		kgo.ConsumerGroup(etlGroup), kgo.ConsumeTopics(txnIn),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RequireStableFetchOffsets(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(10*time.Second), kgo.RetryTimeout(30*time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic(txnOut),
		kgo.ProducerLinger(2*time.Millisecond), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		panic(err)
	}
	defer s.Close()
	for ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		invoke := w.h.Now()
		fs := s.PollRecords(pctx, 200)
		cancel()
		var recs []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			recs = append(recs, r)
			w.h.Add(Op{Process: process, F: FRead, Outcome: OK, Invoke: invoke, Group: etlGroup, Committed: true,
				Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Value: string(r.Value)})
		})
		if len(recs) == 0 {
			continue
		}
		txnInvoke := w.h.Now()
		if err := s.Begin(); err != nil {
			w.h.Add(Op{Process: process, F: FTxn, Outcome: Fail, Invoke: txnInvoke, Err: "begin: " + err.Error()})
			return
		}
		next := map[int32]int64{}
		var values []string
		for _, r := range recs {
			values = append(values, string(r.Value))
			next[r.Partition] = r.Offset + 1
			s.Produce(ctx, &kgo.Record{Partition: r.Partition, Key: r.Key, Value: r.Value}, nil)
		}
		ectx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		committed, err := s.End(ectx, kgo.TryCommit)
		cancel()
		op := Op{Process: process, F: FTxn, Invoke: txnInvoke, Values: values}
		switch {
		case err != nil:
			op.Outcome, op.Err = Info, err.Error()
		case committed:
			op.Outcome = OK
		default:
			op.Outcome, op.Err = Fail, "aborted"
		}
		w.h.Add(op)
		if op.Outcome == OK {
			for p, o := range next {
				w.h.Add(Op{Process: process, F: FCommit, Outcome: OK, Invoke: txnInvoke, Group: etlGroup, Topic: txnIn, Partition: p, Offset: o})
			}
		}
		if err != nil {
			return
		}
	}
}

// watchOffsets asks for every group's committed offsets about once a
// second, each time through a new client (one that has not cached a dead
// coordinator), and records each answer.
func (w *workloads) watchOffsets(ctx context.Context, groups []string) {
	for ctx.Err() == nil {
		for _, g := range groups {
			w.fetchOffsets("offset-watcher", g)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// fetchOffsets records one OffsetFetch of group's offsets; false if it
// failed.
func (w *workloads) fetchOffsets(process, group string) (map[TP]int64, bool) {
	cl, err := w.client()
	if err != nil {
		panic(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(kadm.RequireStable(context.Background()), 10*time.Second)
	defer cancel()
	invoke := w.h.Now()
	resp, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		w.h.Add(Op{Process: process, F: FFetchOffsets, Outcome: Fail, Invoke: invoke, Group: group, Err: err.Error()})
		return nil, false
	}
	got := map[TP]int64{}
	resp.Each(func(o kadm.OffsetResponse) {
		if o.Err != nil {
			w.h.Add(Op{Process: process, F: FFetchOffsets, Outcome: Fail, Invoke: invoke, Group: group, Topic: o.Topic, Partition: o.Partition, Err: o.Err.Error()})
			return
		}
		got[TP{o.Topic, o.Partition}] = o.At
		w.h.Add(Op{Process: process, F: FFetchOffsets, Outcome: OK, Invoke: invoke, Group: group, Topic: o.Topic, Partition: o.Partition, Offset: o.At})
	})
	return got, true
}

// stop ends the producers, waits until the read-process-write group has
// committed past all of txn-in (or the deadline), then ends the rest.
func (w *workloads) stop(catchUp func() error) error {
	w.produceStop()
	w.producers.Wait()
	err := poll(180*time.Second, catchUp)
	w.consumeStop()
	w.consumers.Wait()
	return err
}
