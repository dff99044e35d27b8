package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// lineFormat is how the console producer splits an input line, with
// kafka-console-producer's property names and defaults:
// [headers<headers.delimiter>][key<key.separator>]value.
type lineFormat struct {
	parseKey        bool
	keySeparator    string
	parseHeaders    bool
	headersDelim    string
	headersSep      string
	headerKeySep    string
	nullMarker      string
	hasNullMarker   bool
	ignoreSepErrors bool
}

func parseLineFormat(props []string) (lineFormat, error) {
	f := lineFormat{keySeparator: "\t", headersDelim: "\t", headersSep: ",", headerKeySep: ":"}
	for _, p := range props {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			return f, fmt.Errorf("--property %q: want key=value", p)
		}
		switch k {
		case "parse.key":
			f.parseKey = v == "true"
		case "key.separator":
			f.keySeparator = v
		case "parse.headers":
			f.parseHeaders = v == "true"
		case "headers.delimiter":
			f.headersDelim = v
		case "headers.separator":
			f.headersSep = v
		case "headers.key.separator":
			f.headerKeySep = v
		case "null.marker":
			f.nullMarker, f.hasNullMarker = v, true
		case "ignore.error":
			f.ignoreSepErrors = v == "true"
		default:
			return f, fmt.Errorf("--property %q: unknown property (parse.key, key.separator, parse.headers, headers.delimiter, headers.separator, headers.key.separator, null.marker, ignore.error)", k)
		}
	}
	if (f.parseKey && f.keySeparator == "") || (f.parseHeaders && (f.headersDelim == "" || f.headersSep == "" || f.headerKeySep == "")) {
		return f, errors.New("--property: separators must not be empty")
	}
	return f, nil
}

func (f lineFormat) nullable(b []byte) []byte {
	if f.hasNullMarker && string(b) == f.nullMarker {
		return nil
	}
	return b
}

// record splits one input line (without its line end) into a record.
func (f lineFormat) record(line []byte, lineNo int64) (*kgo.Record, error) {
	r := &kgo.Record{}
	rest := line
	if f.parseHeaders {
		h, after, ok := bytes.Cut(rest, []byte(f.headersDelim))
		switch {
		case ok:
			rest = after
			if len(h) == 0 {
				break // an empty header section: no headers
			}
			for _, kv := range bytes.Split(h, []byte(f.headersSep)) {
				k, v, ok := bytes.Cut(kv, []byte(f.headerKeySep))
				if !ok && !f.ignoreSepErrors {
					return nil, fmt.Errorf("line %d: no header key separator %q in %q", lineNo, f.headerKeySep, kv)
				}
				if !ok {
					v = nil
				}
				r.Headers = append(r.Headers, kgo.RecordHeader{Key: string(k), Value: f.nullable(v)})
			}
		case !f.ignoreSepErrors:
			return nil, fmt.Errorf("line %d: no headers delimiter %q found", lineNo, f.headersDelim)
		}
	}
	if f.parseKey {
		k, after, ok := bytes.Cut(rest, []byte(f.keySeparator))
		switch {
		case ok:
			r.Key, rest = f.nullable(k), after
		case !f.ignoreSepErrors:
			return nil, fmt.Errorf("line %d: no key separator %q found", lineNo, f.keySeparator)
		}
	}
	r.Value = f.nullable(rest)
	return r, nil
}

// parseCompression is compressionCodec for a --compression flag.
func parseCompression(s string) (kgo.CompressionCodec, error) {
	codec, err := compressionCodec(s)
	if err != nil {
		return codec, fmt.Errorf("--compression %q: %w", s, err)
	}
	return codec, nil
}

// parseAcks is acksOpts for an --acks flag.
func parseAcks(s string) ([]kgo.Opt, error) {
	opts, err := acksOpts(s)
	if err != nil {
		return nil, fmt.Errorf("--acks %q: %w", s, err)
	}
	return opts, nil
}

// NewProduceCommand returns `produce`, Gregor's kafka-console-producer: each
// input line is one record value.
func NewProduceCommand() *cobra.Command {
	var (
		conn           connFlags
		topics         []string
		file           string
		props          []string
		compression    string
		acks           string
		partition      int32
		partitioner    string
		lingerMs       int
		maxRequestSize string
	)
	cmd := &cobra.Command{
		Use:   "produce TOPIC [--file FILE] [--property parse.key=true] ...",
		Short: "Produce lines from stdin or a file, one record per line (like kafka-console-producer)",
		Long: `Produce each input line as one record value, from stdin or --file.
--property parse.key=true splits key and value at key.separator (default a tab);
--property parse.headers=true reads headers first: h1:v1,h2:v2<TAB>... (Kafka's
headers.delimiter, headers.separator, headers.key.separator). With --file a
progress line (records, bytes, rate, ETA) is written to stderr.
A record may be as large as the topic's max.message.bytes allows, unless
--max-request-size (max.request.size) sets a lower limit of the client's own.
--producer-property key=value passes one of Kafka's producer configs (acks,
linger.ms, max.request.size, enable.idempotence, delivery.timeout.ms, ...);
a flag given on the command line wins over it.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			topic, err := oneTopic(args, topics)
			if err != nil {
				return err
			}
			format, err := parseLineFormat(props)
			if err != nil {
				return err
			}
			if partition < -1 {
				return fmt.Errorf("--partition must be a partition number, got %d", partition)
			}
			settings, err := conn.clientSettings()
			if err != nil {
				return err
			}
			in, size := cmd.InOrStdin(), int64(-1)
			if file != "" && file != "-" {
				f, err := os.Open(file)
				if err != nil {
					return fmt.Errorf("open input: %w", err)
				}
				defer f.Close()
				if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
					size = st.Size()
				}
				in = f
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()

			// The batch limit is known once the topic's config is: franz-go
			// asks for it when it first meets a partition of the topic, at
			// the first record.
			batchMax := &atomic.Int32{}
			batchMax.Store(defaultMaxRequestSize)
			opts := []kgo.Opt{
				kgo.DefaultProduceTopic(topic),
				kgo.AllowAutoTopicCreation(),
				kgo.UnknownTopicRetries(2),
				kgo.RecordDeliveryTimeout(conn.timeout),
				kgo.BrokerMaxWriteBytes(1 << 30),
				kgo.ProducerBatchMaxBytesFn(func(string) int32 { return batchMax.Load() }),
			}
			switch {
			case partition >= 0 && settings.partitioner != "default":
				return errors.New("--partition and --partitioner cannot be used together")
			case partition >= 0:
				opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
			case settings.partitionerImpl != nil:
				opts = append(opts, kgo.RecordPartitioner(settings.partitionerImpl))
			}
			cl, err := conn.client(ctx, opts...)
			if err != nil {
				return err
			}
			defer cl.Close()
			if err := checkProduceTopic(ctx, &conn, cl, topic, partition); err != nil {
				return err
			}
			p := &producer{cl: cl, partition: partition, format: format}
			p.limits = recordLimits(ctx, &conn, cl, topic, settings)
			batchMax.Store(p.limits.batchBytes())
			var prog *progress
			if file != "" {
				prog = newProgress(cmd.ErrOrStderr(), size, isTerminal(cmd.ErrOrStderr()))
				p.progress = prog
				prog.start()
			}
			err = p.run(ctx, in)
			if prog != nil {
				prog.finish(topic)
			}
			return err
		},
	}
	conn.register(cmd, cmd.Flags())
	fs := cmd.Flags()
	fs.StringArrayVar(&topics, "topic", nil, "topic to produce to")
	fs.StringVar(&file, "file", "", "read lines from this file instead of stdin")
	fs.StringArrayVar(&props, "property", nil, "line format property key=value (repeatable): parse.key, key.separator, parse.headers, headers.delimiter, headers.separator, headers.key.separator, null.marker, ignore.error")
	fs.StringVar(&compression, "compression", "none", "compression.type: none, gzip, snappy, lz4 or zstd")
	fs.StringVar(&compression, "compression-codec", "none", "same as --compression (kafka-console-producer's name)")
	fs.StringVar(&acks, "acks", "all", "acks: all (-1), 1 or 0")
	fs.StringVar(&acks, "request-required-acks", "all", "same as --acks (kafka-console-producer's name)")
	fs.Int32Var(&partition, "partition", -1, "send every record to this partition (default: Kafka's partitioner, by key hash)")
	fs.StringVar(&partitioner, "partitioner", "default", "partitioner.class: default (murmur2 of the key, sticky batches for keyless records), round-robin, or uniform-sticky (ignores keys)")
	fs.IntVar(&lingerMs, "linger-ms", 5, "linger.ms: how long to wait to fill a batch")
	fs.StringVar(&maxRequestSize, "max-request-size", "", "max.request.size: the largest record, in bytes, this client sends (default: what the topic's max.message.bytes allows)")
	conn.registerClientConfigs(fs, producerClient, "producer-property",
		"a Kafka producer config key=value (repeatable), e.g. max.request.size=3000000 or enable.idempotence=false",
		flagKey{"acks", []string{"acks", "request-required-acks"}},
		flagKey{"compression.type", []string{"compression", "compression-codec"}},
		flagKey{"linger.ms", []string{"linger-ms"}},
		flagKey{"partitioner.class", []string{"partitioner"}},
		flagKey{"max.request.size", []string{"max-request-size"}},
	)
	_ = cmd.RegisterFlagCompletionFunc("compression", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"none", "gzip", "snappy", "lz4", "zstd"}, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// checkProduceTopic asks for the topic's metadata the way a producer does
// (allowing the broker to auto-create it, as Kafka's producer does), so that
// a missing topic is an immediate error rather than retries.
func checkProduceTopic(ctx context.Context, conn *connFlags, cl *kgo.Client, topic string, partition int32) error {
	mctx, cancel := context.WithTimeout(ctx, conn.timeout)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	req.AllowAutoTopicCreation = true
	resp, err := req.RequestWith(mctx, cl)
	if err != nil {
		return fmt.Errorf("metadata for %q: %w", topic, err)
	}
	for _, t := range resp.Topics {
		if t.Topic == nil || *t.Topic != topic {
			continue
		}
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil && !errors.Is(err, kerr.LeaderNotAvailable) {
			return topicErr(topic, err)
		}
		if partition >= 0 && len(t.Partitions) > 0 && int(partition) >= len(t.Partitions) {
			return fmt.Errorf("topic %q has %d partitions; partition %d does not exist", topic, len(t.Partitions), partition)
		}
		return nil
	}
	return topicErr(topic, kerr.UnknownTopicOrPartition)
}

// producer reads lines and produces them, stopping at the first failure.
type producer struct {
	cl        *kgo.Client
	partition int32
	format    lineFormat
	progress  *progress
	limits    sizeLimits

	mu       sync.Mutex
	firstErr error
}

func (p *producer) fail(err error) {
	p.mu.Lock()
	if p.firstErr == nil {
		p.firstErr = err
	}
	p.mu.Unlock()
}

func (p *producer) err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.firstErr
}

func (p *producer) run(ctx context.Context, in io.Reader) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := bufio.NewReaderSize(in, 1<<20)
	var lineNo int64
	for ctx.Err() == nil {
		line, readErr := r.ReadBytes('\n')
		if len(line) > 0 {
			lineNo++
			n := int64(len(line))
			line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
			rec, err := p.format.record(line, lineNo)
			if err != nil {
				p.fail(err)
				break
			}
			if p.partition >= 0 {
				rec.Partition = p.partition
			}
			if err := p.limits.check(rec); err != nil {
				p.fail(fmt.Errorf("line %d: %w", lineNo, err))
				break
			}
			p.cl.Produce(ctx, rec, func(r *kgo.Record, err error) {
				if err != nil {
					if errors.Is(err, kerr.ClusterAuthorizationFailed) {
						// InitProducerId of the idempotent producer, refused:
						// say which ACL it takes, not only "cluster".
						err = fmt.Errorf("%w (an idempotent producer needs WRITE on the topic or IDEMPOTENT_WRITE on the cluster)", err)
					}
					p.fail(fmt.Errorf("produce to %s: %w", r.Topic, err))
					cancel()
					return
				}
				if p.progress != nil {
					p.progress.acked(n)
				}
			})
		}
		if readErr == io.EOF {
			break
		}
		if readErr != nil {
			p.fail(fmt.Errorf("read input: %w", readErr))
			break
		}
	}
	// Flush waits for every record in flight; their failures land in fail.
	if err := p.cl.Flush(context.WithoutCancel(ctx)); err != nil {
		p.fail(fmt.Errorf("flush: %w", err))
	}
	// An interrupt ends the input like EOF does: what was read is sent.
	return p.err()
}

// progress reports records and bytes acknowledged, with rate and (when the
// input size is known) percentage and ETA.
type progress struct {
	out     io.Writer
	total   int64 // input bytes, -1 if unknown
	live    bool  // redraw a line in place (a terminal)
	records atomic.Int64
	bytes   atomic.Int64
	ll      *liveLine
}

func newProgress(out io.Writer, total int64, live bool) *progress {
	return &progress{out: out, total: total, live: live}
}

func (p *progress) acked(n int64) {
	p.records.Add(1)
	p.bytes.Add(n)
}

// start redraws the progress line twice a second on a terminal, until finish.
func (p *progress) start() { p.ll = startLiveLine(p.out, p.live, p.line) }

func (p *progress) finish(topic string) {
	elapsed := p.ll.stop()
	recs, b := p.records.Load(), p.bytes.Load()
	fmt.Fprintf(p.out, "Produced %d records (%s) to %s in %s (%.0f records/s, %s/s)\n",
		recs, humanBytes(b), topic, elapsed.Round(time.Millisecond), rate(recs, elapsed), humanBytes(int64(rate(b, elapsed))))
}

func (p *progress) line(elapsed time.Duration) string {
	recs, b := p.records.Load(), p.bytes.Load()
	bytesRate := rate(b, elapsed)
	s := fmt.Sprintf("%d records, %s", recs, humanBytes(b))
	if p.total > 0 {
		s = progressBar(float64(b)/float64(p.total)) + " " + s
		s += fmt.Sprintf(" of %s (%.0f%%)", humanBytes(p.total), 100*float64(b)/float64(p.total))
	}
	s += fmt.Sprintf(", %.0f records/s, %s/s", rate(recs, elapsed), humanBytes(int64(bytesRate)))
	if p.total > 0 && bytesRate > 0 {
		eta := time.Duration(float64(p.total-b) / bytesRate * float64(time.Second))
		s += ", ETA " + eta.Round(time.Second).String()
	}
	return s
}

func rate(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progressBar draws a 20-cell bar for a fraction done.
func progressBar(done float64) string {
	const cells = 20
	n := min(max(int(done*cells), 0), cells)
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", cells-n) + "]"
}
