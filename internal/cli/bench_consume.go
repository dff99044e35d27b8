package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"
)

type benchConsumeFlags struct {
	conn       connFlags
	topic      string
	messages   int64
	group      string
	fromLatest bool
	fetchSize  int32
	clientID   string
	json       bool
}

func newBenchConsumeCommand() *cobra.Command {
	f := &benchConsumeFlags{}
	cmd := &cobra.Command{
		Use:   "consume --topic T --messages N [--group G] [--from-latest]",
		Short: "Consume records as fast as possible and report throughput (like kafka-consumer-perf-test)",
		Long: `Consume --messages records of --topic and report MB/s (MiB, as Kafka's tool),
records/s and the time to the first record, in kafka-consumer-perf-test's columns
(plus first.record.ms). Without --group it reads every partition directly; with
--group it joins that consumer group (rebalance.time.ms is the wait for its first
assignment) and commits what it read. It starts at the earliest offset, or with
--from-latest at the end (for a group: only where it has no committed offset).
When no record arrives for --timeout, it stops early with a warning, as Kafka's
tool does. --json prints only a one-line summary.`,
		RunE: func(cmd *cobra.Command, args []string) error { return f.run(cmd) },
	}
	f.conn.register(cmd, cmd.Flags())
	fs := cmd.Flags()
	fs.StringVar(&f.topic, "topic", "", "topic to consume")
	fs.Int64Var(&f.messages, "messages", 0, "number of records to consume")
	fs.StringVar(&f.group, "group", "", "consume as this consumer group (default: no group, every partition directly)")
	fs.BoolVar(&f.fromLatest, "from-latest", false, "start at the end of the log instead of the beginning")
	fs.Int32Var(&f.fetchSize, "fetch-size", 0, "most bytes per fetch response (fetch.max.bytes; default franz-go's 50 MB)")
	fs.StringVar(&f.clientID, "client-id", "", "the consumer's client.id (default the CLI's, gregor-cli), e.g. to be under a client-id quota")
	fs.BoolVar(&f.json, "json", false, "print only a one-line JSON summary")
	return cmd
}

// consumeSummary is what `bench consume` reports; its JSON form is the
// --json line.
type consumeSummary struct {
	Records       int64   `json:"records"`
	Bytes         int64   `json:"bytes"`
	ElapsedMs     float64 `json:"elapsed_ms"`
	RecordsPerSec float64 `json:"records_per_sec"`
	MBPerSec      float64 `json:"mb_per_sec"`
	FirstRecordMs float64 `json:"first_record_ms"` // -1: no record
	RebalanceMs   float64 `json:"rebalance_ms"`
	FetchMs       float64 `json:"fetch_ms"`
	// ThrottledResponses and ThrottleMs are the brokers' client-quota
	// throttling of the run.
	ThrottledResponses int64   `json:"throttled_responses"`
	ThrottleMs         float64 `json:"throttle_ms"`
	start, end         time.Time
}

func (f *benchConsumeFlags) run(cmd *cobra.Command) error {
	if f.topic == "" {
		return errors.New("--topic is required")
	}
	if f.messages <= 0 {
		return fmt.Errorf("--messages must be positive, got %d", f.messages)
	}
	if f.fetchSize < 0 {
		return fmt.Errorf("--fetch-size must not be negative, got %d", f.fetchSize)
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := kgo.NewOffset().AtStart()
	if f.fromLatest {
		start = kgo.NewOffset().AtEnd()
	}
	var (
		assignedMu sync.Mutex
		assignedAt time.Time
	)
	throttles := &brokerThrottles{}
	opts := []kgo.Opt{kgo.ConsumeTopics(f.topic), kgo.ConsumeResetOffset(start), kgo.FetchMaxWait(500 * time.Millisecond),
		kgo.WithHooks(throttles)}
	if f.clientID != "" {
		opts = append(opts, kgo.ClientID(f.clientID))
	}
	if f.fetchSize > 0 {
		opts = append(opts, kgo.FetchMaxBytes(f.fetchSize))
	}
	if f.group != "" {
		opts = append(opts, kgo.ConsumerGroup(f.group), kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {
			assignedMu.Lock()
			if assignedAt.IsZero() {
				assignedAt = time.Now()
			}
			assignedMu.Unlock()
		}))
	}
	began := time.Now()
	cl, err := f.conn.client(ctx, opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := checkConsumeTopics(ctx, &f.conn, cl, []string{f.topic}, nil); err != nil {
		return err
	}

	prog := newBenchProgress(cmd.ErrOrStderr(), f.messages, !f.json && isTerminal(cmd.ErrOrStderr()), "records consumed")
	prog.start()
	var (
		count, bytes int64
		firstAt      time.Time
		timedOut     bool
		fetchErr     error
	)
	for count < f.messages && ctx.Err() == nil {
		// --timeout bounds the wait for the next records, as Kafka's tool's
		// --timeout does.
		pctx, cancel := context.WithTimeout(ctx, f.conn.timeout)
		fs := cl.PollRecords(pctx, int(min(f.messages-count, 1<<20)))
		idle := pctx.Err() != nil
		cancel()
		if fs.IsClientClosed() || ctx.Err() != nil {
			break
		}
		fs.EachError(func(t string, p int32, err error) {
			if fetchErr == nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				fetchErr = fetchError(t, p, err)
			}
		})
		if fetchErr != nil {
			break
		}
		n := fs.NumRecords()
		if n == 0 && idle {
			timedOut = true
			break
		}
		if n > 0 && firstAt.IsZero() {
			firstAt = time.Now()
		}
		var b int64
		fs.EachRecord(func(r *kgo.Record) { b += int64(len(r.Key) + len(r.Value)) })
		count += int64(n)
		bytes += b
		prog.add(int64(n), b)
	}
	end := time.Now()
	prog.finish()

	if f.group != "" {
		// Commit what was read, then leave, within the timeout even after an
		// interrupt (kgo commits on leave when autocommitting).
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.conn.timeout)
		defer cancel()
		if err := cl.CommitUncommittedOffsets(cctx); err != nil && fetchErr == nil {
			fetchErr = fmt.Errorf("commit offsets of group %q: %w", f.group, err)
		}
	}
	if timedOut {
		fmt.Fprintf(cmd.ErrOrStderr(), "WARNING: Exiting before consuming the expected number of messages: timeout (%s) exceeded. You can use the --timeout option to increase the timeout.\n", f.conn.timeout)
	}
	sum := consumeSummary{
		Records: count, Bytes: bytes, start: began, end: end,
		ElapsedMs:     ms(end.Sub(began)),
		RecordsPerSec: rate(count, end.Sub(began)),
		MBPerSec:      rate(bytes, end.Sub(began)) / mib,
		FirstRecordMs: -1,
	}
	if !firstAt.IsZero() {
		sum.FirstRecordMs = ms(firstAt.Sub(began))
	}
	assignedMu.Lock()
	if !assignedAt.IsZero() {
		sum.RebalanceMs = ms(assignedAt.Sub(began))
	}
	assignedMu.Unlock()
	sum.FetchMs = sum.ElapsedMs - sum.RebalanceMs
	sum.ThrottledResponses, sum.ThrottleMs = throttles.summary()
	if f.json {
		b, err := json.Marshal(sum)
		if err != nil {
			return fmt.Errorf("encode summary: %w", err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s\n", b)
	} else {
		printConsumeSummary(cmd.OutOrStdout(), sum)
		printThrottles(cmd.OutOrStdout(), sum.ThrottledResponses, sum.ThrottleMs)
	}
	return fetchErr
}

// printConsumeSummary prints kafka-consumer-perf-test's header and line,
// with first.record.ms added as a last column.
func printConsumeSummary(w io.Writer, s consumeSummary) {
	mb := float64(s.Bytes) / mib
	fetchMBPerSec, fetchRecsPerSec := 0.0, 0.0
	if s.FetchMs > 0 {
		fetchMBPerSec = mb / (s.FetchMs / 1000)
		fetchRecsPerSec = float64(s.Records) / (s.FetchMs / 1000)
	}
	fmt.Fprintln(w, "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec, first.record.ms")
	fmt.Fprintf(w, "%s, %s, %.4f, %.4f, %d, %.4f, %.0f, %.0f, %.4f, %.4f, %.1f\n",
		kafkaTime(s.start), kafkaTime(s.end), mb, s.MBPerSec, s.Records, s.RecordsPerSec,
		s.RebalanceMs, s.FetchMs, fetchMBPerSec, fetchRecsPerSec, s.FirstRecordMs)
}

// kafkaTime is Kafka's perf-test date format, yyyy-MM-dd HH:mm:ss:SSS.
func kafkaTime(t time.Time) string {
	return fmt.Sprintf("%s:%03d", t.Format("2006-01-02 15:04:05"), t.Nanosecond()/int(time.Millisecond))
}
