package cli

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"gregor/internal/record"
)

// Kafka's file suffixes (UnifiedLog, Snapshots).
const (
	logFileSuffix       = ".log"
	indexFileSuffix     = ".index"
	timeIndexFileSuffix = ".timeindex"
	txnIndexFileSuffix  = ".txnindex"
	snapshotFileSuffix  = ".checkpoint"
	// bootstrapSnapshotName is KRaft's binary bootstrap file (BootstrapDirectory).
	bootstrapSnapshotName = "bootstrap.checkpoint"
)

// dumpOptions are kafka-dump-log's switches.
type dumpOptions struct {
	printData          bool
	deep               bool
	verifyOnly         bool
	indexSanityOnly    bool
	clusterMetadata    bool
	offsets            bool // --offsets-decoder
	transactionLog     bool // --transaction-log-decoder
	skipRecordMetadata bool
	maxMessageSize     int
	maxBytes           int64
}

// NewLogCommand returns `log`, whose `dump` subcommand is Gregor's
// kafka-dump-log: it reads segment, index and snapshot files directly, with
// no broker involved.
func NewLogCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "log",
		Short: "Inspect log files on disk",
	}
	cmd.AddCommand(newLogDumpCommand())
	return cmd
}

func newLogDumpCommand() *cobra.Command {
	var (
		opts  dumpOptions
		files []string
	)
	cmd := &cobra.Command{
		Use:   "dump FILE... [--print-data-log] [--deep-iteration] [--cluster-metadata-decoder|--offsets-decoder|--transaction-log-decoder]",
		Short: "Print the batches, records and index entries of log files (like kafka-dump-log)",
		Long: `Print what a segment (.log), offset index (.index), time index (.timeindex),
transaction index (.txnindex) or KRaft snapshot (.checkpoint) file holds, and check it:
CRCs, offsets that follow each other, index entries that point at the batch they
name in the .log next to them. --deep-iteration prints every record;
--print-data-log also prints keys and values; --cluster-metadata-decoder decodes
__cluster_metadata records, --offsets-decoder __consumer_offsets records and
--transaction-log-decoder __transaction_state records. Problems are reported on stderr with the file and
byte position, the dump goes on where it can, and the exit code is 1.`,
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return []string{"log", "index", "timeindex", "txnindex", "checkpoint"}, cobra.ShellCompDirectiveFilterFileExt
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			var paths []string
			for _, f := range append(append([]string{}, args...), files...) {
				for _, p := range strings.Split(f, ",") {
					if p = strings.TrimSpace(p); p != "" {
						paths = append(paths, p)
					}
				}
			}
			if len(paths) == 0 {
				return errors.New("no file given (as arguments or with --files)")
			}
			if opts.maxMessageSize <= 0 {
				return fmt.Errorf("--max-message-size must be positive, got %d", opts.maxMessageSize)
			}
			if opts.maxBytes <= 0 {
				return fmt.Errorf("--max-bytes must be positive, got %d", opts.maxBytes)
			}
			// As kafka-dump-log: a decoder implies printing data, printing
			// data implies deep iteration.
			if n := btoi(opts.clusterMetadata) + btoi(opts.offsets) + btoi(opts.transactionLog); n > 1 {
				return errors.New("--cluster-metadata-decoder, --offsets-decoder and --transaction-log-decoder exclude each other")
			}
			opts.printData = opts.printData || opts.clusterMetadata || opts.offsets || opts.transactionLog
			opts.deep = opts.deep || opts.printData
			out := bufio.NewWriterSize(cmd.OutOrStdout(), 64<<10)
			d := &dumper{opts: opts, out: out, errOut: cmd.ErrOrStderr()}
			for _, p := range paths {
				d.dumpFile(p)
			}
			if err := out.Flush(); err != nil {
				return fmt.Errorf("write output: %w", err)
			}
			d.printSummary()
			if d.problems > 0 {
				return fmt.Errorf("%d problem(s) found (see above)", d.problems)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVar(&files, "files", nil, "comma-separated files to dump (kafka-dump-log's flag; positional arguments work too)")
	fs.BoolVar(&opts.printData, "print-data-log", false, "print record keys and values (implies --deep-iteration)")
	fs.BoolVar(&opts.deep, "deep-iteration", false, "print every record, not only batches")
	fs.BoolVar(&opts.verifyOnly, "verify-index-only", false, "check index files without printing their entries")
	fs.BoolVar(&opts.indexSanityOnly, "index-sanity-check", false, "run only the broker's start-up sanity check on index files")
	fs.BoolVar(&opts.clusterMetadata, "cluster-metadata-decoder", false, "decode record values as KRaft metadata records (__cluster_metadata segments and .checkpoint snapshots)")
	fs.BoolVar(&opts.offsets, "offsets-decoder", false, "decode keys and values as __consumer_offsets records (offset commits, group metadata)")
	fs.BoolVar(&opts.transactionLog, "transaction-log-decoder", false, "decode keys and values as __transaction_state records")
	fs.BoolVar(&opts.skipRecordMetadata, "skip-record-metadata", false, "with --print-data-log, print only keys and values")
	fs.IntVar(&opts.maxMessageSize, "max-message-size", 5<<20, "largest batch an index check reads")
	fs.Int64Var(&opts.maxBytes, "max-bytes", 1<<31-1, "read at most this many bytes of each .log file")
	return cmd
}

// offsetPair is one finding of a check: what the index says and what the
// log holds (or the two offsets that do not follow each other).
type offsetPair struct{ first, second int64 }

// fileFindings collects one kind of finding per file, in file order, for the
// summary Kafka's tool prints at the end.
type fileFindings struct {
	files []string
	pairs map[string][]offsetPair
}

func (f *fileFindings) add(file string, first, second int64) {
	if f.pairs == nil {
		f.pairs = map[string][]offsetPair{}
	}
	if _, ok := f.pairs[file]; !ok {
		f.files = append(f.files, file)
	}
	f.pairs[file] = append(f.pairs[file], offsetPair{first, second})
}

// dumper prints files and counts the problems it finds.
type dumper struct {
	opts     dumpOptions
	out      *bufio.Writer
	errOut   io.Writer
	problems int

	indexMismatches     fileFindings // index offset, offset of the batch at its position
	indexNotIncreasing  fileFindings // entry offset, previous entry offset
	timeMismatches      fileFindings // index timestamp, batch max timestamp
	timeOutOfOrder      fileFindings // index timestamp, previous index timestamp
	timeOffsetNotFound  fileFindings // indexed offset, offset found in the log
	nonConsecutiveInLog fileFindings // offset, next offset
}

// problem reports one error at once on stderr, flushing stdout first so the
// two streams interleave in order on a terminal.
func (d *dumper) problem(file string, format string, args ...any) {
	d.problems++
	d.out.Flush()
	fmt.Fprintf(d.errOut, "%s: %s\n", file, fmt.Sprintf(format, args...))
}

func (d *dumper) dumpFile(path string) {
	fmt.Fprintf(d.out, "Dumping %s\n", path)
	name := filepath.Base(path)
	switch {
	case strings.HasSuffix(name, logFileSuffix):
		d.dumpLog(path, false)
	case strings.HasSuffix(name, snapshotFileSuffix):
		d.dumpLog(path, true)
	case strings.HasSuffix(name, indexFileSuffix):
		d.dumpOffsetIndex(path)
	case strings.HasSuffix(name, timeIndexFileSuffix):
		d.dumpTimeIndex(path)
	case strings.HasSuffix(name, txnIndexFileSuffix):
		d.dumpTxnIndex(path)
	default:
		d.out.Flush()
		fmt.Fprintf(d.errOut, "Ignoring unknown file %s\n", path)
	}
}

// baseOffsetOf reads a segment file's base offset from its name.
func baseOffsetOf(path string) (int64, error) {
	name := filepath.Base(path)
	stem, _, _ := strings.Cut(name, ".")
	n, err := strconv.ParseInt(stem, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("file name %q does not start with a base offset", name)
	}
	return n, nil
}

// siblingLog is the .log file that an index file belongs to.
func siblingLog(path string) string {
	dir, name := filepath.Split(path)
	stem, _, _ := strings.Cut(name, ".")
	return filepath.Join(dir, stem+logFileSuffix)
}

// dumpLog prints a segment or snapshot: each batch, and with deep iteration
// each record. A batch whose length is readable is skipped over even when
// its CRC or records are bad; a batch whose header or length is unusable
// ends the file, as nothing after it can be found.
func (d *dumper) dumpLog(path string, snapshot bool) {
	if snapshot {
		d.printSnapshotName(path)
	} else if base, err := baseOffsetOf(path); err == nil {
		fmt.Fprintf(d.out, "Log starting offset: %d\n", base)
	}
	f, err := os.Open(path)
	if err != nil {
		d.problem(path, "%v", err)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		d.problem(path, "%v", err)
		return
	}
	size := min(st.Size(), d.opts.maxBytes)
	var (
		pos        int64
		lastOffset int64 = -1
		head       [record.HeaderSize]byte
		buf        []byte
	)
	for pos < size {
		if size-pos < record.HeaderSize {
			break // a partial header: reported as trailing bytes below
		}
		if _, err := f.ReadAt(head[:], pos); err != nil {
			d.problem(path, "position %d: read batch header: %v", pos, err)
			return
		}
		h, err := record.ParseHeader(head[:])
		if err != nil {
			d.problem(path, "position %d: %v", pos, err)
			break
		}
		if pos+int64(h.Size()) > size {
			if size < st.Size() {
				break // cut by --max-bytes, not corrupt
			}
			d.problem(path, "position %d: batch of %d bytes (offsets %d..%d) extends past the end of the file (%d bytes)",
				pos, h.Size(), h.BaseOffset, h.LastOffset(), st.Size())
			break
		}
		if cap(buf) < h.Size() {
			buf = make([]byte, h.Size())
		}
		batch := buf[:h.Size()]
		if _, err := f.ReadAt(batch, pos); err != nil {
			d.problem(path, "position %d: read batch: %v", pos, err)
			return
		}
		crc := record.ComputeCRC(batch)
		d.printBatch(h, pos, crc == h.CRC)
		switch {
		case crc != h.CRC:
			d.problem(path, "position %d: batch at offset %d is corrupt (stored crc = %d, computed crc = %d)", pos, h.BaseOffset, h.CRC, crc)
		case d.opts.deep:
			d.printRecords(path, pos, batch, &lastOffset)
		}
		pos += int64(h.Size())
	}
	if trailing := size - pos; trailing > 0 && size == st.Size() {
		fmt.Fprintf(d.out, "Found %d invalid bytes at the end of %s\n", trailing, filepath.Base(path))
		d.problem(path, "%d invalid bytes at the end, from position %d", trailing, pos)
	}
}

// printSnapshotName prints what a snapshot's file name says, as Kafka's
// Snapshots names them: <end offset>-<epoch>.checkpoint.
func (d *dumper) printSnapshotName(path string) {
	name := filepath.Base(path)
	if name == bootstrapSnapshotName {
		fmt.Fprintln(d.out, "KRaft bootstrap snapshot")
		return
	}
	stem := strings.TrimSuffix(name, snapshotFileSuffix)
	off, epoch, ok := strings.Cut(stem, "-")
	endOffset, err1 := strconv.ParseInt(off, 10, 64)
	ep, err2 := strconv.ParseInt(epoch, 10, 32)
	if !ok || err1 != nil || err2 != nil {
		d.problem(path, "not a snapshot file name (<end offset>-<epoch>%s)", snapshotFileSuffix)
		return
	}
	fmt.Fprintf(d.out, "Snapshot end offset: %d, epoch: %d\n", endOffset, ep)
}

func timestampType(h record.BatchHeader) string {
	if h.LogAppendTime() {
		return "LogAppendTime"
	}
	return "CreateTime"
}

// printBatch prints a batch header in kafka-dump-log's words and order.
func (d *dumper) printBatch(h record.BatchHeader, pos int64, valid bool) {
	horizon := "OptionalLong.empty"
	if h.HasDeleteHorizon() {
		horizon = fmt.Sprintf("OptionalLong[%d]", h.BaseTimestamp)
	}
	fmt.Fprintf(d.out, "baseOffset: %d lastOffset: %d count: %d baseSequence: %d lastSequence: %d producerId: %d producerEpoch: %d partitionLeaderEpoch: %d isTransactional: %t isControl: %t deleteHorizonMs: %s position: %d %s: %d size: %d magic: %d compresscodec: %s crc: %d isvalid: %t\n",
		h.BaseOffset, h.LastOffset(), h.NumRecords, h.BaseSequence, h.LastSequence(), h.ProducerID, h.ProducerEpoch,
		h.PartitionLeaderEpoch, h.IsTransactional(), h.IsControl(), horizon, pos, timestampType(h), h.MaxTimestamp,
		h.Size(), h.Magic, h.Compression(), h.CRC, valid)
}

// printRecords prints each record of a batch whose CRC is good.
func (d *dumper) printRecords(path string, pos int64, batch []byte, lastOffset *int64) {
	h, recs, err := record.ReadRecords(batch)
	if err != nil {
		d.problem(path, "position %d: records of batch at offset %d: %v", pos, h.BaseOffset, err)
		return
	}
	var line strings.Builder
	for _, r := range recs {
		offset := h.BaseOffset + int64(r.OffsetDelta)
		if *lastOffset >= 0 && offset != *lastOffset+1 {
			d.nonConsecutiveInLog.add(path, *lastOffset, offset)
		}
		*lastOffset = offset
		line.Reset()
		line.WriteString("|")
		if !d.opts.skipRecordMetadata {
			ts := h.BaseTimestamp + r.TimestampDelta
			if h.LogAppendTime() {
				ts = h.MaxTimestamp
			}
			seq := int32(-1)
			if h.BaseSequence >= 0 {
				seq = record.IncrementSequence(h.BaseSequence, r.OffsetDelta)
			}
			keys := make([]string, len(r.Headers))
			for i, hd := range r.Headers {
				keys[i] = hd.Key
			}
			fmt.Fprintf(&line, " offset: %d %s: %d keySize: %d valueSize: %d sequence: %d headerKeys: [%s]",
				offset, timestampType(h), ts, nullableLen(r.Key), nullableLen(r.Value), seq, strings.Join(keys, ","))
			if h.IsControl() {
				line.WriteString(" ")
				line.WriteString(describeControlRecord(r))
			}
		}
		if d.opts.printData && !h.IsControl() {
			d.writeData(&line, path, pos, offset, r)
		}
		line.WriteString("\n")
		d.out.WriteString(line.String())
	}
}

func nullableLen(b []byte) int {
	if b == nil {
		return -1
	}
	return len(b)
}

// printable is how Kafka's StringDecoder shows bytes: UTF-8, with invalid
// sequences replaced.
func printable(b []byte) string { return strings.ToValidUTF8(string(b), "\uFFFD") }

// writeData appends a record's key, headers and value (decoded as a
// metadata record with --cluster-metadata-decoder).
func (d *dumper) writeData(line *strings.Builder, path string, pos, offset int64, r record.Record) {
	if d.opts.clusterMetadata {
		// Metadata records have no key (Kafka's ClusterMetadataLogMessageParser).
		line.WriteString(" payload: ")
		line.WriteString(d.describeMetadataRecord(path, pos, offset, r.Value))
		return
	}
	if d.opts.offsets || d.opts.transactionLog {
		pick := offsetsRecord
		if d.opts.transactionLog {
			pick = transactionLogRecord
		}
		line.WriteString(" ")
		line.WriteString(d.describeInternal(path, pos, offset, pick(r.Key, r.Value)))
		return
	}
	if r.Key != nil {
		line.WriteString(" key: ")
		line.WriteString(printable(r.Key))
	}
	if len(r.Headers) > 0 {
		hs := make([]string, len(r.Headers))
		for i, hd := range r.Headers {
			v := "null"
			if hd.Value != nil {
				v = printable(hd.Value)
			}
			hs[i] = hd.Key + "=" + v
		}
		line.WriteString(" headers: [" + strings.Join(hs, ",") + "]")
	}
	if r.Value != nil {
		line.WriteString(" payload: ")
		line.WriteString(printable(r.Value))
	}
}

// dumpTxnIndex prints a transaction index: fixed 34-byte entries of version,
// producer id, first offset, last offset and last stable offset (Kafka's
// AbortedTxn).
func (d *dumper) dumpTxnIndex(path string) {
	const entrySize = 34
	b, err := os.ReadFile(path)
	if err != nil {
		d.problem(path, "%v", err)
		return
	}
	if len(b)%entrySize != 0 {
		d.problem(path, "size %d is not a multiple of the entry size %d", len(b), entrySize)
	}
	for i := 0; i+entrySize <= len(b); i += entrySize {
		e := b[i : i+entrySize]
		version := int16(binary.BigEndian.Uint16(e))
		if version != 0 {
			d.problem(path, "position %d: aborted transaction entry version %d, want 0", i, version)
			return
		}
		fmt.Fprintf(d.out, "version: %d producerId: %d firstOffset: %d lastOffset: %d lastStableOffset: %d\n",
			version, int64(binary.BigEndian.Uint64(e[2:])), int64(binary.BigEndian.Uint64(e[10:])),
			int64(binary.BigEndian.Uint64(e[18:])), int64(binary.BigEndian.Uint64(e[26:])))
	}
}

// printSummary prints the findings as kafka-dump-log does at the end, on
// stderr.
func (d *dumper) printSummary() {
	w := d.errOut
	// Each kind of finding with kafka-dump-log's heading and line wording.
	for _, k := range []struct {
		ff            *fileFindings
		heading, line string
	}{
		{&d.indexMismatches, "Mismatches in :%s\n", "  Index offset: %d, log offset: %d\n"},
		{&d.indexNotIncreasing, "Non-increasing index offsets in :%s\n", "  Index offset: %d, previous index offset: %d\n"},
		{&d.timeMismatches, "Found timestamp mismatch in :%s\n", "  Index timestamp: %d, log timestamp: %d\n"},
		{&d.timeOutOfOrder, "Found out of order timestamp in :%s\n", "  Index timestamp: %d, Previously indexed timestamp: %d\n"},
		{&d.timeOffsetNotFound, "The following indexed offsets are not found in the log (%s).\n", "Indexed offset: %d, found log offset: %d\n"},
		{&d.nonConsecutiveInLog, "Non-consecutive offsets in %s\n", "  %d is followed by %d\n"},
	} {
		for _, f := range k.ff.files {
			fmt.Fprintf(w, k.heading, f)
			for _, p := range k.ff.pairs[f] {
				fmt.Fprintf(w, k.line, p.first, p.second)
			}
		}
	}
	for _, ff := range []*fileFindings{&d.indexMismatches, &d.indexNotIncreasing, &d.timeMismatches,
		&d.timeOffsetNotFound, &d.timeOutOfOrder} {
		for _, ps := range ff.pairs {
			d.problems += len(ps)
		}
	}
	// Gaps between offsets are normal after compaction; only offsets that go
	// backwards or repeat are a problem.
	for _, ps := range d.nonConsecutiveInLog.pairs {
		for _, p := range ps {
			if p.second <= p.first {
				d.problems++
			}
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
