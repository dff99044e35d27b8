package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

type consumeFlags struct {
	conn          connFlags
	topics        []string
	group         string
	fromBeginning bool
	offset        string
	partitions    []int32
	fromTimestamp string
	maxMessages   int
	timeoutMs     int
	isolation     string
	props         []string
	format        string
}

// NewConsumeCommand returns `consume`, Gregor's kafka-console-consumer (with
// kcat's format strings).
func NewConsumeCommand() *cobra.Command {
	f := &consumeFlags{}
	cmd := &cobra.Command{
		Use:   "consume TOPIC... [--from-beginning] [--group G] [--max-messages N] ...",
		Short: "Print records, one value per line (like kafka-console-consumer)",
		Long: `Print the records of one or more topics, one value per line by default.
Without --group it reads partitions directly, from the end unless --from-beginning,
--offset or --from-timestamp says otherwise; with --group it joins the consumer
group and commits what it printed. --consumer-property key=value passes one of
Kafka's consumer configs (group.id, auto.offset.reset, fetch.max.bytes,
enable.auto.commit, ...); a flag given on the command line wins over it. --format json prints one JSON object per
record; a format with % is kcat's: %t topic, %p partition, %o offset, %k key,
%v (or %s) value, %K/%S key/value length, %T timestamp, %h headers, \n \t.`,
		RunE: func(cmd *cobra.Command, args []string) error { return f.run(cmd, args) },
	}
	f.conn.register(cmd, cmd.Flags())
	fs := cmd.Flags()
	fs.StringArrayVar(&f.topics, "topic", nil, "topic to consume (repeatable)")
	fs.StringVar(&f.group, "group", "", "group.id: consume as this consumer group, committing offsets")
	fs.BoolVar(&f.fromBeginning, "from-beginning", false, "start at the earliest offset (for a group: when it has no committed offset)")
	fs.StringVar(&f.offset, "offset", "", "start offset: earliest, latest, or a number (not with --group)")
	fs.Int32SliceVar(&f.partitions, "partition", nil, "only these partitions (not with --group)")
	fs.StringVar(&f.fromTimestamp, "from-timestamp", "", "start at the first record at or after this time (ms since epoch or RFC 3339)")
	fs.IntVar(&f.maxMessages, "max-messages", -1, "exit after this many records")
	fs.IntVar(&f.timeoutMs, "timeout-ms", -1, "exit when no record arrives for this many milliseconds")
	fs.StringVar(&f.isolation, "isolation-level", "read_uncommitted", "isolation.level: read_uncommitted or read_committed")
	fs.StringArrayVar(&f.props, "property", nil, "output property key=value (repeatable): print.key, print.timestamp, print.partition, print.offset, print.headers, print.value, key.separator, line.separator, headers.separator, null.literal")
	fs.StringVar(&f.format, "format", "", "output: default, json, or a kcat-like format string ('%k %v %p %o %T\\n')")
	f.conn.registerClientConfigs(fs, consumerClient, "consumer-property",
		"a Kafka consumer config key=value (repeatable), e.g. fetch.max.bytes=104857600 or auto.offset.reset=earliest",
		flagKey{"group.id", []string{"group"}},
		flagKey{"isolation.level", []string{"isolation-level"}},
	)
	_ = cmd.RegisterFlagCompletionFunc("isolation-level", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"read_uncommitted", "read_committed"}, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// startOffset resolves --from-beginning, --offset and --from-timestamp,
// and else auto.offset.reset (latest by default).
func (f *consumeFlags) startOffset(autoOffsetReset string) (kgo.Offset, error) {
	if f.fromBeginning && autoOffsetReset == "latest" {
		// As kafka-console-consumer refuses it.
		return kgo.Offset{}, errors.New("--from-beginning and auto.offset.reset=latest cannot be used together")
	}
	given := 0
	for _, set := range []bool{f.fromBeginning, f.offset != "", f.fromTimestamp != ""} {
		if set {
			given++
		}
	}
	if given > 1 {
		return kgo.Offset{}, errors.New("give only one of --from-beginning, --offset and --from-timestamp")
	}
	switch {
	case f.fromBeginning:
		return kgo.NewOffset().AtStart(), nil
	case f.offset != "":
		switch f.offset {
		case "earliest":
			return kgo.NewOffset().AtStart(), nil
		case "latest":
			return kgo.NewOffset().AtEnd(), nil
		}
		n, err := strconv.ParseInt(f.offset, 10, 64)
		if err != nil || n < 0 {
			return kgo.Offset{}, fmt.Errorf("--offset %q: want earliest, latest or a non-negative number", f.offset)
		}
		return kgo.NewOffset().At(n), nil
	case f.fromTimestamp != "":
		ms, err := parseTime(f.fromTimestamp)
		if err != nil {
			return kgo.Offset{}, fmt.Errorf("--from-timestamp: %w", err)
		}
		return kgo.NewOffset().AfterMilli(ms), nil
	case autoOffsetReset == "earliest":
		return kgo.NewOffset().AtStart(), nil
	}
	return kgo.NewOffset().AtEnd(), nil
}

// parseTime takes milliseconds since the epoch, RFC 3339, or Kafka's
// kafka-consumer-groups format YYYY-MM-DDTHH:mm:SS[.sss] (local time).
func parseTime(s string) (int64, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return ms, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UnixMilli(), nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05.000Z07:00", "2006-01-02T15:04:05.000", "2006-01-02T15:04:05"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, fmt.Errorf("%q: want milliseconds since the epoch, RFC 3339, or YYYY-MM-DDTHH:mm:SS[.sss]", s)
}

func (f *consumeFlags) run(cmd *cobra.Command, args []string) error {
	topics := topicArgs(args, f.topics)
	if len(topics) == 0 {
		return errors.New("no topic given (as an argument or with --topic)")
	}
	if f.maxMessages == 0 || f.maxMessages < -1 {
		return fmt.Errorf("--max-messages must be positive, got %d", f.maxMessages)
	}
	if f.timeoutMs == 0 || f.timeoutMs < -1 {
		return fmt.Errorf("--timeout-ms must be positive, got %d", f.timeoutMs)
	}
	settings, err := f.conn.clientSettings()
	if err != nil {
		return err
	}
	f.group = settings.groupID // --group, else group.id
	commit := f.group != "" && !settings.noAutoCommit
	if f.group != "" && (f.offset != "" || len(f.partitions) > 0) {
		return errors.New("--offset and --partition cannot be used with --group (reset a group's offsets with `gregor group reset-offsets`)")
	}
	if len(f.partitions) > 0 && len(topics) > 1 {
		return errors.New("--partition needs exactly one topic")
	}
	if f.offset != "" && len(f.partitions) == 0 {
		// As kafka-console-consumer: an offset is the offset of a partition.
		return errors.New("--offset needs --partition")
	}
	start, err := f.startOffset(settings.autoOffsetReset)
	if err != nil {
		return err
	}
	formatter, err := newRecordFormatter(f.format, f.props)
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// fetch.max.wait.ms as Kafka's consumer has it (kgo's default is 5 s), so
	// an exit does not leave a long poll waiting on the broker.
	// isolation.level and the other consumer configs apply over these.
	opts := []kgo.Opt{kgo.FetchMaxWait(500 * time.Millisecond)}
	switch {
	case f.group != "":
		opts = append(opts, kgo.ConsumerGroup(f.group), kgo.ConsumeTopics(topics...), kgo.ConsumeResetOffset(start))
		if commit {
			opts = append(opts, kgo.AutoCommitMarks())
		} else {
			opts = append(opts, kgo.DisableAutoCommit()) // enable.auto.commit=false
		}
	case len(f.partitions) > 0:
		ps := map[int32]kgo.Offset{}
		for _, p := range f.partitions {
			ps[p] = start
		}
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topics[0]: ps}))
	default:
		opts = append(opts, kgo.ConsumeTopics(topics...), kgo.ConsumeResetOffset(start))
	}
	cl, err := f.conn.client(ctx, opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := checkConsumeTopics(ctx, &f.conn, cl, topics, f.partitions); err != nil {
		return err
	}

	out := bufio.NewWriterSize(cmd.OutOrStdout(), 64<<10)
	count, err := consoleLoop{
		maxMessages: f.maxMessages, timeoutMs: f.timeoutMs, maxPoll: settings.maxPollRecords,
		format: formatter, fetchErr: fetchError,
		printed: func(rs []*kgo.Record) {
			if commit {
				cl.MarkCommitRecords(rs...)
			}
		},
	}.run(ctx, cl, out)
	if ferr := out.Flush(); err == nil && ferr != nil {
		err = fmt.Errorf("write output: %w", ferr)
	}
	if f.group != "" {
		// Commit what was printed, then leave the group, within the timeout
		// even after an interrupt.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.conn.timeout)
		defer cancel()
		if commit {
			if cerr := cl.CommitMarkedOffsets(cctx); cerr != nil && err == nil {
				err = fmt.Errorf("commit offsets of group %q: %w", f.group, cerr)
			}
		}
		if lerr := cl.LeaveGroupContext(cctx); lerr != nil && err == nil {
			err = fmt.Errorf("leave group %q: %w", f.group, lerr)
		}
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "Processed a total of %d messages\n", count)
	return err
}

// consoleLoop is a console consumer's loop: poll, print, hand the printed
// records on (to commit or acknowledge them), until --max-messages,
// --timeout-ms without a record, or an interrupt.
type consoleLoop struct {
	maxMessages int // -1: no limit
	timeoutMs   int // -1: no limit
	maxPoll     int // max.poll.records; 0: any number a poll
	format      recordFormatter
	fetchErr    func(topic string, partition int32, err error) error // names what failed
	printed     func([]*kgo.Record)
}

// run returns how many records it printed.
func (l consoleLoop) run(ctx context.Context, cl *kgo.Client, out *bufio.Writer) (int, error) {
	count := 0
	var buf []byte
	for l.maxMessages < 0 || count < l.maxMessages {
		pctx, cancel := ctx, context.CancelFunc(func() {})
		if l.timeoutMs > 0 {
			pctx, cancel = context.WithTimeout(ctx, time.Duration(l.timeoutMs)*time.Millisecond)
		}
		want := -1
		if l.maxMessages > 0 {
			want = l.maxMessages - count
		}
		if l.maxPoll > 0 && (want < 0 || want > l.maxPoll) {
			want = l.maxPoll
		}
		fs := cl.PollRecords(pctx, want)
		cancel()
		if ctx.Err() != nil || fs.IsClientClosed() {
			return count, nil
		}
		var fetchErr error
		fs.EachError(func(t string, p int32, err error) {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				return
			}
			if fetchErr == nil {
				fetchErr = l.fetchErr(t, p, err)
			}
		})
		if fetchErr != nil {
			return count, fetchErr
		}
		if fs.NumRecords() == 0 && pctx.Err() != nil {
			return count, nil // --timeout-ms passed without a record, as Kafka ends
		}
		var printed []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			if l.maxMessages > 0 && count >= l.maxMessages {
				return
			}
			buf = l.format(buf[:0], r)
			out.Write(buf)
			printed = append(printed, r)
			count++
		})
		if err := out.Flush(); err != nil {
			return count, fmt.Errorf("write output: %w", err)
		}
		l.printed(printed)
	}
	return count, nil
}

// checkConsumeTopics fails fast on a topic or partition that does not exist;
// a consumer would otherwise wait for it forever.
func checkConsumeTopics(ctx context.Context, conn *connFlags, cl *kgo.Client, topics []string, partitions []int32) error {
	mctx, cancel := context.WithTimeout(ctx, conn.timeout)
	defer cancel()
	md, err := kadm.NewClient(cl).Metadata(mctx, topics...)
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	for _, t := range topics {
		td, ok := md.Topics[t]
		if !ok {
			return topicErr(t, nil)
		}
		if td.Err != nil {
			return topicErr(t, td.Err)
		}
		var missing []string
		for _, p := range partitions {
			if _, ok := td.Partitions[p]; !ok {
				missing = append(missing, strconv.Itoa(int(p)))
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("topic %q has %d partitions; no partition %s", t, len(td.Partitions), strings.Join(missing, ", "))
		}
	}
	return nil
}

// fetchError names the partition a fetch error is about; an error of the
// client itself (joining the group, say) comes with no topic.
func fetchError(topic string, partition int32, err error) error {
	if topic == "" {
		return fmt.Errorf("consume: %w", err)
	}
	return fmt.Errorf("fetch %s-%d: %w", topic, partition, err)
}
