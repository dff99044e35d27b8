package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A search reads a topic's partitions over an offset or time range and
// keeps the records whose key, value or headers match, as Kafka UI and
// Redpanda Console do, but on a budget: one request reads at most
// maxScan records and maxScanBytes bytes (of keys, values and headers) in
// at most searchWait, and stops at limit matches. What it did not reach
// it hands back as a cursor, so the visitor continues ("scanned N of M")
// instead of one request reading a large topic into the process or
// holding the page until the broker's answer times out.
const (
	defaultScanRecords = 10_000
	maxScanRecords     = 100_000
	defaultScanBytes   = 16 << 20
	maxScanBytes       = 64 << 20
	searchWait         = 5 * time.Second
	// maxDownload bounds the matches of one JSON lines download.
	maxDownload = 10_000
)

// searchParams are the query parameters that make a records request a
// search: ?partition=all&offset=&endOffset=&fromTime=&toTime=&key=&value=
// &header=&regex=&limit=&maxScan=&maxScanBytes=&cursor=&format=.
var searchParams = []string{"endOffset", "fromTime", "toTime", "key", "value", "header", "regex",
	"maxScan", "maxScanBytes", "cursor", "format"}

func isSearch(q url.Values) bool {
	if q.Get("partition") == "all" {
		return true
	}
	for _, p := range searchParams {
		if q.Has(p) {
			return true
		}
	}
	return false
}

// scanRange is what is left to read of one partition: [Next, End).
type scanRange struct {
	Partition int32 `json:"partition"`
	Next      int64 `json:"next"`
	End       int64 `json:"end"`
}

// searchProgress is how far a search request got.
type searchProgress struct {
	// Scanned and ScannedBytes are what this request read (transaction
	// markers included), Matched what it kept.
	Scanned      int64 `json:"scanned"`
	ScannedBytes int64 `json:"scannedBytes"`
	Matched      int   `json:"matched"`
	// Remaining is the offsets left in the range after this request.
	Remaining int64 `json:"remaining"`
	// Done is true once the whole range is read; else Cursor continues it
	// (?cursor=, with the same filters) and Stopped says what ended this
	// request: limit (enough matches), records or bytes (the scan budget),
	// or time.
	Done       bool        `json:"done"`
	Cursor     string      `json:"cursor,omitempty"`
	Stopped    string      `json:"stopped,omitempty"`
	Partitions []scanRange `json:"partitions"`
}

// recordFilter is what a record must match: every filter given.
type recordFilter struct {
	key, value         []byte // substrings; nil: any
	keyRE, valueRE     *regexp.Regexp
	header             string // a header with this key; "" any
	headerValue        []byte // whose value contains this
	fromTime, toTime   int64  // timestamps, ms; -1 unbounded
	haveHeader, isTime bool
}

func (f *recordFilter) match(rec *kgo.Record) bool {
	if f.isTime && (f.fromTime >= 0 && rec.Timestamp.UnixMilli() < f.fromTime || f.toTime >= 0 && rec.Timestamp.UnixMilli() > f.toTime) {
		return false
	}
	if f.keyRE != nil && (rec.Key == nil || !f.keyRE.Match(rec.Key)) || f.key != nil && (rec.Key == nil || !bytes.Contains(rec.Key, f.key)) {
		return false
	}
	if f.valueRE != nil && (rec.Value == nil || !f.valueRE.Match(rec.Value)) || f.value != nil && (rec.Value == nil || !bytes.Contains(rec.Value, f.value)) {
		return false
	}
	if f.haveHeader {
		return slices.ContainsFunc(rec.Headers, func(h kgo.RecordHeader) bool {
			return h.Key == f.header && (f.headerValue == nil || bytes.Contains(h.Value, f.headerValue))
		})
	}
	return true
}

// search is one request's work: the ranges to read, the filter, the budget.
type search struct {
	topic      string
	all        bool // every partition (else ranges holds one)
	ranges     []scanRange
	filter     recordFilter
	limit      int
	maxRecords int64
	maxBytes   int64
	wait       time.Duration
}

// prepareSearch reads a search's parameters and lists the offsets its
// range starts and ends at (by offset, or by time with ListOffsets by
// timestamp), or takes them from ?cursor=.
func prepareSearch(ctx context.Context, r *http.Request, cl *kgo.Client) (*search, error) {
	topic := r.PathValue("topic")
	q := r.URL.Query()
	s := &search{topic: topic, wait: searchWait, filter: recordFilter{fromTime: -1, toTime: -1}}
	var err error
	maxMatches := maxRecords
	if q.Get("format") == "jsonl" {
		maxMatches = maxDownload
	} else if f := q.Get("format"); f != "" && f != "json" {
		return nil, badRequest("format %q: want json or jsonl", f)
	}
	if s.limit, err = intParam(q.Get("limit"), min(maxMatches, maxDownload), 1, maxMatches); err != nil {
		return nil, badRequest("limit: %v", err)
	}
	n, err := intParam(q.Get("maxScan"), defaultScanRecords, 1, maxScanRecords)
	if err != nil {
		return nil, badRequest("maxScan: %v", err)
	}
	s.maxRecords = int64(n)
	if n, err = intParam(q.Get("maxScanBytes"), defaultScanBytes, 1, maxScanBytes); err != nil {
		return nil, badRequest("maxScanBytes: %v", err)
	}
	s.maxBytes = int64(n)
	if err := s.filter.parse(q); err != nil {
		return nil, err
	}

	adm := kadm.NewClient(cl)
	td, err := describeTopic(ctx, adm, topic)
	if err != nil {
		return nil, err
	}
	var parts []int32
	switch p := q.Get("partition"); p {
	case "", "all":
		s.all = true
		parts = td.Partitions.Numbers()
		slices.Sort(parts)
	default:
		n, err := intParam(p, 0, 0, 1<<31-1)
		if err != nil {
			return nil, badRequest("partition: %v", err)
		}
		if _, ok := td.Partitions[int32(n)]; !ok {
			return nil, notFound("topic %q has no partition %d", topic, n)
		}
		parts = []int32{int32(n)}
	}
	if c := q.Get("cursor"); c != "" {
		if s.ranges, err = parseCursor(c, td); err != nil {
			return nil, err
		}
		return s, nil
	}

	starts, ends, err := listStartEnd(ctx, adm, topic)
	if err != nil {
		return nil, err
	}
	var fromTime, toTime kadm.ListedOffsets
	if s.filter.fromTime >= 0 {
		if fromTime, err = adm.ListOffsetsAfterMilli(ctx, s.filter.fromTime, topic); err != nil {
			return nil, fmt.Errorf("list offsets at %d ms: %w", s.filter.fromTime, err)
		}
	}
	if s.filter.toTime >= 0 {
		// The first offset after the range's last millisecond.
		if toTime, err = adm.ListOffsetsAfterMilli(ctx, s.filter.toTime+1, topic); err != nil {
			return nil, fmt.Errorf("list offsets at %d ms: %w", s.filter.toTime+1, err)
		}
	}
	var endOffset int64 = -1
	if e := q.Get("endOffset"); e != "" {
		if endOffset, err = strconv.ParseInt(e, 10, 64); err != nil || endOffset < 0 {
			return nil, badRequest("endOffset %q: want an offset (the range ends before it)", e)
		}
	}
	for _, p := range parts {
		start, _ := starts.Lookup(topic, p)
		end, _ := ends.Lookup(topic, p)
		if start.Err != nil || end.Err != nil {
			return nil, fmt.Errorf("offsets of %s-%d: %w", topic, p, errors.Join(start.Err, end.Err))
		}
		rg := scanRange{Partition: p, Next: start.Offset, End: end.Offset}
		switch o := q.Get("offset"); o {
		case "", "earliest":
		case "latest":
			rg.Next = end.Offset
		default:
			n, err := strconv.ParseInt(o, 10, 64)
			if err != nil {
				return nil, badRequest("offset %q: want a number, earliest or latest", o)
			}
			rg.Next = max(n, start.Offset)
		}
		if o, ok := fromTime.Lookup(topic, p); ok && o.Err == nil && o.Offset >= 0 {
			rg.Next = max(rg.Next, o.Offset)
		}
		if o, ok := toTime.Lookup(topic, p); ok && o.Err == nil && o.Offset >= 0 {
			rg.End = min(rg.End, o.Offset)
		}
		if endOffset >= 0 {
			rg.End = min(rg.End, endOffset)
		}
		rg.Next = min(rg.Next, rg.End)
		s.ranges = append(s.ranges, rg)
	}
	return s, nil
}

// parse reads the filters: key= and value= (substrings, or with
// regex=true regular expressions), header=NAME or NAME=SUBSTRING,
// fromTime= and toTime= (ms since the epoch or RFC 3339, both inclusive).
func (f *recordFilter) parse(q url.Values) error {
	regex := false
	switch v := q.Get("regex"); v {
	case "", "false":
	case "true":
		regex = true
	default:
		return badRequest("regex %q: want true or false", v)
	}
	for _, fld := range []struct {
		name string
		sub  *[]byte
		re   **regexp.Regexp
	}{{"key", &f.key, &f.keyRE}, {"value", &f.value, &f.valueRE}} {
		v := q.Get(fld.name)
		if v == "" {
			continue
		}
		if !regex {
			*fld.sub = []byte(v)
			continue
		}
		re, err := regexp.Compile(v)
		if err != nil {
			return badRequest("%s: %v", fld.name, err)
		}
		*fld.re = re
	}
	if h := q.Get("header"); h != "" {
		f.haveHeader = true
		name, value, ok := strings.Cut(h, "=")
		f.header = name
		if ok {
			f.headerValue = []byte(value)
		}
	}
	for _, t := range []struct {
		name string
		to   *int64
	}{{"fromTime", &f.fromTime}, {"toTime", &f.toTime}} {
		v := strings.TrimSpace(q.Get(t.name))
		if v == "" {
			continue
		}
		ms, err := parseMillis(v)
		if err != nil {
			return badRequest("%s: %v", t.name, err)
		}
		*t.to, f.isTime = ms, true
	}
	if f.fromTime >= 0 && f.toTime >= 0 && f.toTime < f.fromTime {
		return badRequest("toTime is before fromTime")
	}
	return nil
}

// parseCursor reads a cursor: partition:next:end, comma-separated.
func parseCursor(c string, td kadm.TopicDetail) ([]scanRange, error) {
	var out []scanRange
	for _, part := range strings.Split(c, ",") {
		f := strings.Split(part, ":")
		if len(f) != 3 {
			return nil, badRequest("cursor %q: want partition:next:end, comma-separated", c)
		}
		p, err1 := strconv.ParseInt(f[0], 10, 32)
		next, err2 := strconv.ParseInt(f[1], 10, 64)
		end, err3 := strconv.ParseInt(f[2], 10, 64)
		if err := errors.Join(err1, err2, err3); err != nil || next < 0 || end < next {
			return nil, badRequest("cursor %q: want partition:next:end with next <= end", c)
		}
		if _, ok := td.Partitions[int32(p)]; !ok {
			return nil, notFound("topic %q has no partition %d", td.Topic, p)
		}
		out = append(out, scanRange{Partition: int32(p), Next: next, End: end})
	}
	return out, nil
}

func cursorOf(ranges []scanRange) string {
	var parts []string
	for _, rg := range ranges {
		if rg.Next < rg.End {
			parts = append(parts, fmt.Sprintf("%d:%d:%d", rg.Partition, rg.Next, rg.End))
		}
	}
	return strings.Join(parts, ",")
}

// view is the answer's frame, before the records.
func (s *search) view() *recordsView {
	v := &recordsView{Topic: s.topic, Partition: -1, StartOffset: -1, EndOffset: -1, From: -1, Records: []recordView{}}
	if !s.all && len(s.ranges) == 1 {
		v.Partition, v.From, v.EndOffset = s.ranges[0].Partition, s.ranges[0].Next, s.ranges[0].End
	}
	return v
}

// run reads the ranges until they end, limit records matched, the budget
// is spent or the wait is over, handing each match to emit; s.ranges
// advance to what is left. A fetch error other than the end of the wait
// fails it.
func (s *search) run(ctx context.Context, base *kgo.Client, emit func(*kgo.Record) error) (*searchProgress, error) {
	prog := &searchProgress{}
	defer func() {
		for _, rg := range s.ranges {
			prog.Remaining += rg.End - rg.Next
		}
		prog.Done = prog.Remaining == 0
		if prog.Done {
			prog.Stopped = ""
		}
		prog.Cursor = cursorOf(s.ranges)
		prog.Partitions = slices.Clone(s.ranges)
	}()
	active := map[int32]*scanRange{}
	offsets := map[int32]kgo.Offset{}
	for i := range s.ranges {
		if rg := &s.ranges[i]; rg.Next < rg.End {
			active[rg.Partition] = rg
			offsets[rg.Partition] = kgo.NewOffset().At(rg.Next)
		}
	}
	if len(active) == 0 {
		return prog, nil
	}
	// A consuming client of its own (one cannot be shared) with base's
	// options: the same broker, TLS and, for a logged-in visitor,
	// credentials. Control records (transaction markers) come back too,
	// so that a range ending in one is seen to end; they are counted, never
	// matched.
	cl, err := kgo.NewClient(append(base.Opts(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{s.topic: offsets}),
		kgo.KeepControlRecords(),
		kgo.FetchMaxBytes(maxFetchBytes),
		kgo.FetchMaxPartitionBytes(maxFetchBytes),
		kgo.FetchMaxWait(250*time.Millisecond),
	)...)
	if err != nil {
		return nil, fmt.Errorf("consume %s: %w", s.topic, err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, s.wait)
	defer cancel()
	for len(active) > 0 && prog.Stopped == "" {
		fetches := cl.PollRecords(ctx, 1000)
		for _, fe := range fetches.Errors() {
			if errors.Is(fe.Err, context.DeadlineExceeded) || errors.Is(fe.Err, context.Canceled) || errors.Is(fe.Err, kgo.ErrClientClosed) {
				prog.Stopped = "time"
				return prog, nil
			}
			return nil, fmt.Errorf("consume %s-%d: %w", fe.Topic, fe.Partition, fe.Err)
		}
		var emitErr error
		fetches.EachPartition(func(ftp kgo.FetchTopicPartition) {
			rg := active[ftp.Partition]
			for _, rec := range ftp.Records {
				if rg == nil || prog.Stopped != "" || emitErr != nil {
					return
				}
				if rec.Offset < rg.Next {
					continue
				}
				if rec.Offset >= rg.End {
					rg.Next = rg.End
					break
				}
				rg.Next = rec.Offset + 1
				prog.Scanned++
				prog.ScannedBytes += int64(len(rec.Key) + len(rec.Value))
				for _, h := range rec.Headers {
					prog.ScannedBytes += int64(len(h.Key) + len(h.Value))
				}
				if !rec.Attrs.IsControl() && s.filter.match(rec) {
					if emitErr = emit(rec); emitErr != nil {
						return
					}
					prog.Matched++
				}
				switch {
				case prog.Matched >= s.limit:
					prog.Stopped = "limit"
				case prog.Scanned >= s.maxRecords:
					prog.Stopped = "records"
				case prog.ScannedBytes >= s.maxBytes:
					prog.Stopped = "bytes"
				}
			}
			if rg != nil && rg.Next >= rg.End {
				delete(active, ftp.Partition)
				cl.PauseFetchPartitions(map[string][]int32{s.topic: {ftp.Partition}})
			}
		})
		if emitErr != nil {
			return nil, emitErr
		}
		if ctx.Err() != nil && prog.Stopped == "" && len(active) > 0 {
			prog.Stopped = "time"
		}
	}
	return prog, nil
}

// recordsHTTP serves /api/topics/{topic}/records: as JSON (records), or
// with ?format=jsonl a search's matches as a download of JSON lines, one
// record a line with its key, value and header values whole (text, or
// hex when binary). The lines are written as they are found; the
// trailers X-Gregor-Scanned and X-Gregor-Cursor tell how far the search
// got, X-Gregor-Error why it failed after the first line.
func (c *Console) recordsHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("format") != "jsonl" {
		c.api(c.records)(w, r)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), apiTimeout)
	defer cancel()
	cl, err := c.clientFor(r)
	var s *search
	if err == nil {
		s, err = prepareSearch(ctx, r, cl)
	}
	if err != nil {
		c.writeJSON(w, r, nil, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/x-ndjson")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Disposition", `attachment; filename="`+downloadName(s.topic)+`.jsonl"`)
	h.Set("Trailer", "X-Gregor-Scanned, X-Gregor-Cursor, X-Gregor-Error")
	enc := json.NewEncoder(w)
	wrote := false
	prog, err := s.run(ctx, cl, func(rec *kgo.Record) error {
		wrote = true
		return enc.Encode(viewRecordUpTo(rec, -1))
	})
	if err != nil && !wrote {
		h.Del("Content-Disposition")
		h.Del("Trailer")
		c.writeJSON(w, r, nil, err)
		return
	}
	if err != nil {
		c.logger.Warn("console records download", "topic", s.topic, "err", err)
		h.Set("X-Gregor-Error", err.Error())
		return
	}
	h.Set("X-Gregor-Scanned", strconv.FormatInt(prog.Scanned, 10))
	h.Set("X-Gregor-Cursor", prog.Cursor)
}

// downloadName is topic with what a file name or the header cannot hold
// replaced (a topic name is [a-zA-Z0-9._-] already; this is belt and braces).
func downloadName(topic string) string {
	return strings.Map(func(r rune) rune {
		if r == '.' || r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, topic)
}
