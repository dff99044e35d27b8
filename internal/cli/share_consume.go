package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// defaultShareGroup is kafka-console-share-consumer's group when none is given.
const defaultShareGroup = "console-share-consumer"

type shareConsumeFlags struct {
	conn        connFlags
	topics      []string
	group       string
	maxMessages int
	timeoutMs   int
	reject      bool
	release     bool
	props       []string
	format      string
}

// NewShareConsumeCommand returns `share-consume`, Gregor's
// kafka-console-share-consumer: a member of a share group (KIP-932) that
// prints the records the broker delivers to it and acknowledges each one.
func NewShareConsumeCommand() *cobra.Command {
	f := &shareConsumeFlags{}
	cmd := &cobra.Command{
		Use:   "share-consume TOPIC... [--group G] [--reject | --release] [--max-messages N] ...",
		Short: "Print records as a share group member, acknowledging each (like kafka-console-share-consumer)",
		Long: `Join a share group (KIP-932) and print the records its share-partitions
deliver to this member, as ` + "`gregor consume`" + ` prints them. Members of one group
split the records of a partition between them. Each printed record is
acknowledged: accepted (the default), or with --reject archived (never
delivered again), or with --release handed back for delivery to a member
(its delivery count goes up). Records not acknowledged, because the process
died, are delivered again: at once when the broker sees the connection
close, else after the group's share.record.lock.duration.ms.
A new share group starts at the partitions' ends (share.auto.offset.reset=latest):
` + "`gregor share-group reset-offsets G --topic T --to-earliest --execute`" + ` first reads
what is already there. --consumer-property takes group.id, max.poll.records
(records one fetch acquires, 500 by default), share.acquire.mode (batch_optimized:
whole batches, so a fetch may take more than max.poll.records; record_limit: at
most max.poll.records), fetch.* and client.* configs.`,
		RunE: func(cmd *cobra.Command, args []string) error { return f.run(cmd, args) },
	}
	f.conn.register(cmd, cmd.Flags())
	fs := cmd.Flags()
	fs.StringArrayVar(&f.topics, "topic", nil, "topic to consume (repeatable)")
	fs.StringVar(&f.group, "group", defaultShareGroup, "group.id: the share group to join")
	fs.IntVar(&f.maxMessages, "max-messages", -1, "exit after this many records")
	fs.IntVar(&f.timeoutMs, "timeout-ms", -1, "exit when no record arrives for this many milliseconds")
	fs.BoolVar(&f.reject, "reject", false, "acknowledge every record as rejected: archived, not delivered again")
	fs.BoolVar(&f.release, "release", false, "acknowledge every record as released: delivered again, to any member")
	fs.StringArrayVar(&f.props, "property", nil, "output property key=value (repeatable), as gregor consume takes")
	fs.StringVar(&f.format, "format", "", "output: default, json, or a kcat-like format string ('%k %v %p %o %T\\n')")
	f.conn.registerClientConfigs(fs, shareConsumerClient, "consumer-property",
		"a Kafka share consumer config key=value (repeatable), e.g. max.poll.records=10",
		flagKey{"group.id", []string{"group"}},
	)
	return cmd
}

// ackStatus is how every printed record is acknowledged.
func (f *shareConsumeFlags) ackStatus() (kgo.AckStatus, error) {
	switch {
	case f.reject && f.release:
		return 0, errors.New("give only one of --reject and --release")
	case f.reject:
		return kgo.AckReject, nil
	case f.release:
		return kgo.AckRelease, nil
	}
	return kgo.AckAccept, nil
}

// ackErrors keeps the first acknowledgement the broker refused; franz-go
// reports them to a callback, from its own goroutine.
type ackErrors struct {
	mu    sync.Mutex
	first error
	count int
}

func (a *ackErrors) record(_ *kgo.Client, results kgo.ShareAckResults) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, r := range results {
		if r.Err == nil {
			continue
		}
		a.count++
		if a.first == nil {
			a.first = fmt.Errorf("acknowledge %s-%d: %w", r.Topic, r.Partition, r.Err)
		}
	}
}

func (a *ackErrors) err() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.count > 1 {
		return fmt.Errorf("%w (and %d more refused acknowledgements)", a.first, a.count-1)
	}
	return a.first
}

func (f *shareConsumeFlags) run(cmd *cobra.Command, args []string) error {
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
	status, err := f.ackStatus()
	if err != nil {
		return err
	}
	settings, err := f.conn.clientSettings()
	if err != nil {
		return err
	}
	f.group = settings.groupID // --group, else group.id, else the default
	if f.group == "" {
		return errors.New("--group must not be empty")
	}
	formatter, err := newRecordFormatter(f.format, f.props)
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	acks := &ackErrors{}
	// fetch.max.wait.ms as Kafka's consumer has it (kgo's default is 5 s), so
	// an exit does not wait on a long poll; the consumer configs apply over it.
	opts := []kgo.Opt{
		kgo.FetchMaxWait(500 * time.Millisecond),
		kgo.ShareGroup(f.group), kgo.ConsumeTopics(topics...),
		kgo.ShareAckCallback(acks.record),
	}
	if settings.maxPollRecords > 0 {
		opts = append(opts, kgo.ShareMaxRecords(int32(settings.maxPollRecords)))
	}
	if settings.shareRecordLimit {
		opts = append(opts, kgo.ShareMaxRecordsStrict())
	}
	cl, err := f.conn.client(ctx, opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := checkConsumeTopics(ctx, &f.conn, cl, topics, nil); err != nil {
		return err
	}

	out := bufio.NewWriterSize(cmd.OutOrStdout(), 64<<10)
	// A share poll accepts the records of the poll before that were not
	// acknowledged; each printed record is marked before the next poll.
	count, err := consoleLoop{
		maxMessages: f.maxMessages, timeoutMs: f.timeoutMs, maxPoll: settings.maxPollRecords,
		format: formatter,
		fetchErr: func(t string, p int32, err error) error {
			return shareFetchError(f.group, t, p, err)
		},
		printed: func(rs []*kgo.Record) { cl.MarkAcks(status, rs...) },
	}.run(ctx, cl, out)
	if ferr := out.Flush(); err == nil && ferr != nil {
		err = fmt.Errorf("write output: %w", ferr)
	}
	// Send the acknowledgements of what was printed, then leave the group
	// (which releases any record fetched but not printed), within the
	// timeout even after an interrupt.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.conn.timeout)
	defer cancel()
	if ferr := cl.FlushAcks(cctx); ferr != nil && err == nil {
		err = fmt.Errorf("acknowledge records of share group %q: %w", f.group, ferr)
	}
	if lerr := cl.LeaveGroupContext(cctx); lerr != nil && err == nil {
		err = fmt.Errorf("leave share group %q: %w", f.group, lerr)
	}
	if aerr := acks.err(); aerr != nil && err == nil {
		err = aerr
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "Processed a total of %d messages\n", count)
	return err
}

// shareFetchError says what to do where it can: share groups off, or the
// broker without them.
func shareFetchError(group, topic string, partition int32, err error) error {
	if errors.Is(err, kerr.UnsupportedVersion) || errors.Is(err, kerr.InvalidRequest) && topic == "" {
		return fmt.Errorf("share group %q: share groups are off on this cluster (%w); turn them on with `gregor feature upgrade --feature share.version=1`", group, err)
	}
	if topic == "" {
		return fmt.Errorf("share group %q: %w", group, err)
	}
	return fmt.Errorf("share fetch %s-%d: %w", topic, partition, err)
}
