package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"
)

// NewBenchCommand returns `bench`, Gregor's kafka-producer-perf-test and
// kafka-consumer-perf-test.
func NewBenchCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure produce and consume throughput and latency (like the Kafka perf-test tools)",
	}
	cmd.AddCommand(newBenchProduceCommand(), newBenchConsumeCommand())
	return cmd
}

type benchProduceFlags struct {
	conn        connFlags
	topic       string
	numRecords  int64
	recordSize  int
	throughput  float64
	acks        string
	compression string
	batchSize   int32
	lingerMs    int
	props       []string
	json        bool
	// Transactions, as kafka-producer-perf-test's --transactional-id and
	// --transaction-duration-ms.
	txnID       string
	txnDuration int
}

func newBenchProduceCommand() *cobra.Command {
	f := &benchProduceFlags{}
	cmd := &cobra.Command{
		Use:   "produce --topic T --num-records N --record-size B [--throughput R] ...",
		Short: "Produce records as fast as allowed and report throughput and latency (like kafka-producer-perf-test)",
		Long: `Produce --num-records records of --record-size random bytes, at most --throughput
records per second (-1: no limit), and report records/s, MB/s (MiB, as Kafka's tool) and
the latency from send to acknowledgement: average, p50, p95, p99, p99.9 and max.
Percentiles come from up to 500,000 samples spread over the run, as Kafka's tool
takes them. --producer-props takes producer configs (acks, compression.type,
batch.size, linger.ms, ...). A live progress line is written to stderr when it is
a terminal; --json prints only a one-line summary.`,
		RunE: func(cmd *cobra.Command, args []string) error { return f.run(cmd) },
	}
	f.conn.register(cmd, cmd.Flags())
	fs := cmd.Flags()
	fs.StringVar(&f.topic, "topic", "", "topic to produce to")
	fs.Int64Var(&f.numRecords, "num-records", 0, "number of records to produce")
	fs.IntVar(&f.recordSize, "record-size", 100, "bytes per record value")
	fs.Float64Var(&f.throughput, "throughput", -1, "records per second at most; -1 for no limit")
	fs.StringVar(&f.acks, "acks", "all", "all (-1), 1 or 0")
	fs.StringVar(&f.compression, "compression", "none", "none, gzip, snappy, lz4 or zstd")
	fs.Int32Var(&f.batchSize, "batch-size", 0, "most bytes in one partition's batch (batch.size; default franz-go's 1 MB)")
	fs.IntVar(&f.lingerMs, "linger-ms", 5, "how long to wait to fill a batch (linger.ms; Kafka's default is 5)")
	fs.StringArrayVar(&f.props, "producer-props", nil, "producer config key=value (repeatable): acks, compression.type, batch.size, linger.ms, client.id, enable.idempotence, max.in.flight.requests.per.connection, buffer.memory, retries, delivery.timeout.ms, request.timeout.ms")
	fs.BoolVar(&f.json, "json", false, "print only a one-line JSON summary")
	fs.StringVar(&f.txnID, "transactional-id", "", "produce in transactions with this id (default performance-producer-default-transactional-id when --transaction-duration-ms is set)")
	fs.IntVar(&f.txnDuration, "transaction-duration-ms", 0, "commit a transaction every this many ms (default 3000 with --transactional-id; 0 without: no transactions)")
	return cmd
}

// producerOpts turns the flags and --producer-props into client options;
// --producer-props win over the flags, as later configs do in Kafka.
func (f *benchProduceFlags) producerOpts() ([]kgo.Opt, error) {
	acks, compression, batchSize, linger := f.acks, f.compression, f.batchSize, f.lingerMs
	var extra []kgo.Opt
	props, order, err := parseKeyValues("producer-props", f.props)
	if err != nil {
		return nil, err
	}
	for _, k := range order {
		v := props[k]
		bad := func() error { return fmt.Errorf("--producer-props %s=%q: not a valid value", k, v) }
		num := func() (int, error) {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return 0, bad()
			}
			return n, nil
		}
		switch k {
		case "acks":
			acks = v
		case "compression.type":
			compression = v
		case "batch.size":
			n, err := num()
			if err != nil {
				return nil, err
			}
			batchSize = int32(min(n, 1<<30))
		case "linger.ms":
			if linger, err = num(); err != nil {
				return nil, err
			}
		case "client.id":
			extra = append(extra, kgo.ClientID(v))
		case "enable.idempotence":
			switch v {
			case "false":
				extra = append(extra, kgo.DisableIdempotentWrite())
			case "true":
			default:
				return nil, bad()
			}
		case "max.in.flight.requests.per.connection":
			n, err := num()
			if err != nil || n == 0 {
				return nil, bad()
			}
			extra = append(extra, kgo.MaxProduceRequestsInflightPerBroker(n))
		case "buffer.memory":
			n, err := num()
			if err != nil || n == 0 {
				return nil, bad()
			}
			extra = append(extra, kgo.MaxBufferedBytes(n))
		case "retries":
			n, err := num()
			if err != nil {
				return nil, err
			}
			extra = append(extra, kgo.RecordRetries(n))
		case "delivery.timeout.ms":
			n, err := num()
			if err != nil {
				return nil, err
			}
			extra = append(extra, kgo.RecordDeliveryTimeout(time.Duration(n)*time.Millisecond))
		case "request.timeout.ms":
			n, err := num()
			if err != nil || n == 0 {
				return nil, bad()
			}
			extra = append(extra, kgo.ProduceRequestTimeout(time.Duration(n)*time.Millisecond))
		case "bootstrap.servers":
			f.conn.bootstrap = v
		default:
			return nil, fmt.Errorf("--producer-props %s: not a producer config this tool knows (acks, compression.type, batch.size, linger.ms, client.id, enable.idempotence, max.in.flight.requests.per.connection, buffer.memory, retries, delivery.timeout.ms, request.timeout.ms, bootstrap.servers)", k)
		}
	}
	ackOpts, err := parseAcks(acks)
	if err != nil {
		return nil, err
	}
	codec, err := parseCompression(compression)
	if err != nil {
		return nil, err
	}
	if batchSize < 0 {
		return nil, fmt.Errorf("--batch-size must not be negative, got %d", batchSize)
	}
	if linger < 0 {
		return nil, fmt.Errorf("--linger-ms must not be negative, got %d", linger)
	}
	opts := append(ackOpts, kgo.ProducerBatchCompression(codec), kgo.ProducerLinger(time.Duration(linger)*time.Millisecond))
	if batchSize > 0 {
		opts = append(opts, kgo.ProducerBatchMaxBytes(batchSize))
	}
	return append(opts, extra...), nil
}

func (f *benchProduceFlags) run(cmd *cobra.Command) error {
	if f.topic == "" {
		return errors.New("--topic is required")
	}
	if f.numRecords <= 0 {
		return fmt.Errorf("--num-records must be positive, got %d", f.numRecords)
	}
	if f.recordSize < 0 {
		return fmt.Errorf("--record-size must not be negative, got %d", f.recordSize)
	}
	if f.throughput == 0 || (f.throughput < 0 && f.throughput != -1) {
		return fmt.Errorf("--throughput must be positive or -1 (no limit), got %v", f.throughput)
	}
	if f.txnDuration < 0 {
		return fmt.Errorf("--transaction-duration-ms must not be negative, got %d", f.txnDuration)
	}
	switch {
	case f.txnID != "" && f.txnDuration == 0:
		f.txnDuration = 3000
	case f.txnID == "" && f.txnDuration > 0:
		f.txnID = "performance-producer-default-transactional-id"
	}
	opts, err := f.producerOpts()
	if err != nil {
		return err
	}
	if f.txnID != "" {
		opts = append(opts, kgo.TransactionalID(f.txnID))
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	throttles := &brokerThrottles{}
	opts = append(opts, kgo.DefaultProduceTopic(f.topic), kgo.AllowAutoTopicCreation(), kgo.UnknownTopicRetries(2),
		kgo.WithHooks(throttles))
	cl, err := f.conn.client(ctx, opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := checkProduceTopic(ctx, &f.conn, cl, f.topic, -1); err != nil {
		return err
	}

	// One random payload of capital letters, reused, as Kafka's tool does.
	payload := make([]byte, f.recordSize)
	for i := range payload {
		payload[i] = byte('A' + rand.IntN(26))
	}
	stats := newLatencyStats(f.numRecords)
	prog := newBenchProgress(cmd.ErrOrStderr(), f.numRecords, !f.json && isTerminal(cmd.ErrOrStderr()), "records sent")
	prog.start()
	var (
		errMu    sync.Mutex
		failed   int64
		firstErr error
	)
	// BeginTransaction fetches the producer id (Kafka's initTransactions)
	// before the clock starts.
	txns := benchTxns{cl: cl, every: time.Duration(f.txnDuration) * time.Millisecond}
	if err := txns.begin(); err != nil {
		return err
	}
	start := time.Now()
	throttle := newThrottler(f.throughput, start)
	var sent int64
	for ; sent < f.numRecords && ctx.Err() == nil; sent++ {
		if err := throttle.wait(ctx, sent); err != nil {
			break
		}
		if err := txns.maybeCommit(ctx); err != nil {
			return err
		}
		sendAt := time.Now()
		cl.Produce(ctx, &kgo.Record{Value: payload}, func(_ *kgo.Record, err error) {
			if err != nil {
				errMu.Lock()
				failed++
				if firstErr == nil {
					firstErr = err
				}
				errMu.Unlock()
				return
			}
			stats.record(time.Since(sendAt))
			prog.add(1, int64(len(payload)))
		})
	}
	// Flush waits for every record in flight, also after an interrupt.
	flushErr := cl.Flush(context.WithoutCancel(ctx))
	if flushErr == nil {
		flushErr = txns.end(context.WithoutCancel(ctx))
	}
	elapsed := time.Since(start)
	prog.finish()

	sum := stats.summary(elapsed, int64(f.recordSize))
	sum.ThrottledResponses, sum.ThrottleMs = throttles.summary()
	if f.json {
		sum.Errors = failed
		b, err := json.Marshal(sum)
		if err != nil {
			return fmt.Errorf("encode summary: %w", err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s\n", b)
	} else {
		printProduceSummary(cmd.OutOrStdout(), sum)
		printThrottles(cmd.OutOrStdout(), sum.ThrottledResponses, sum.ThrottleMs)
		if txns.every > 0 {
			fmt.Fprintf(cmd.OutOrStdout(), "%d transactions committed\n", txns.committed)
		}
	}
	switch {
	case firstErr != nil:
		return fmt.Errorf("%d of %d records failed: %w", failed, sent, firstErr)
	case flushErr != nil:
		return fmt.Errorf("flush: %w", flushErr)
	case ctx.Err() != nil && sent < f.numRecords:
		return fmt.Errorf("interrupted after %d of %d records", sent, f.numRecords)
	}
	return nil
}

// benchTxns commits the bench's records in transactions of a given
// duration (none when every is 0).
type benchTxns struct {
	cl        *kgo.Client
	every     time.Duration
	started   time.Time
	committed int
}

func (b *benchTxns) begin() error {
	if b.every == 0 {
		return nil
	}
	if err := b.cl.BeginTransaction(); err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	b.started = time.Now()
	return nil
}

// maybeCommit commits the open transaction once it has run its duration
// and begins the next.
func (b *benchTxns) maybeCommit(ctx context.Context) error {
	if b.every == 0 || time.Since(b.started) < b.every {
		return nil
	}
	if err := b.end(ctx); err != nil {
		return err
	}
	return b.begin()
}

// end flushes and commits the open transaction.
func (b *benchTxns) end(ctx context.Context) error {
	if b.every == 0 {
		return nil
	}
	if err := b.cl.Flush(ctx); err != nil {
		return fmt.Errorf("flush transaction: %w", err)
	}
	if err := b.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return fmt.Errorf("commit transaction: %w", err)
	}
	b.committed++
	return nil
}

// printProduceSummary prints kafka-producer-perf-test's final line, with
// latencies to two decimals (a local broker answers in well under a
// millisecond), then the same figures as a table.
func printProduceSummary(w io.Writer, s produceSummary) {
	l := s.LatencyMs
	fmt.Fprintf(w, "%d records sent, %.1f records/sec (%.2f MB/sec), %.2f ms avg latency, %.2f ms max latency, %.2f ms 50th, %.2f ms 95th, %.2f ms 99th, %.2f ms 99.9th.\n",
		s.Records, s.RecordsPerSec, s.MBPerSec, l.Avg, l.Max, l.P50, l.P95, l.P99, l.P999)
	fmt.Fprintf(w, "\n%-10s %12s %9s %9s %9s %9s %9s %9s %9s\n", "RECORDS", "RECORDS/S", "MB/S", "AVG(ms)", "P50", "P95", "P99", "P99.9", "MAX")
	fmt.Fprintf(w, "%-10d %12.1f %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f\n",
		s.Records, s.RecordsPerSec, s.MBPerSec, l.Avg, l.P50, l.P95, l.P99, l.P999, l.Max)
}

// throttler keeps the send rate at or below a target (Kafka's
// ThroughputThrottler): before record n it sleeps until n/rate seconds have
// passed since the start.
type throttler struct {
	perSecond float64
	start     time.Time
}

func newThrottler(perSecond float64, start time.Time) *throttler {
	return &throttler{perSecond: perSecond, start: start}
}

func (t *throttler) wait(ctx context.Context, sent int64) error {
	if t.perSecond <= 0 {
		return nil
	}
	due := t.start.Add(time.Duration(float64(sent) / t.perSecond * float64(time.Second)))
	d := time.Until(due)
	if d < time.Millisecond {
		return nil // sleeping less than the timer's grain costs more than it saves
	}
	if !sleepCtx(ctx, d) {
		return ctx.Err()
	}
	return nil
}
