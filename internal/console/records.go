package console

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Browsing is bounded so that a page never pulls a partition into the
// process: a count, bytes per fetch, bytes shown per key or value, time
// (and the scan budget of search.go).
const (
	defaultRecords = 20
	maxRecords     = 100
	maxFetchBytes  = 1 << 20
	maxShownBytes  = 2 << 10
	browseWait     = 3 * time.Second
)

// bytesView is a key, value or header value: text when it is printable
// UTF-8, hex otherwise, cut at maxShownBytes.
type bytesView struct {
	Encoding  string `json:"encoding"` // text or hex
	Data      string `json:"data"`
	Size      int    `json:"size"`
	Truncated bool   `json:"truncated,omitempty"`
}

type headerView struct {
	Key   string     `json:"key"`
	Value *bytesView `json:"value"`
}

type recordView struct {
	Partition int32        `json:"partition"`
	Offset    int64        `json:"offset"`
	Timestamp int64        `json:"timestamp"` // ms since the epoch
	Key       *bytesView   `json:"key"`       // null for a null key
	Value     *bytesView   `json:"value"`     // null for a tombstone
	Headers   []headerView `json:"headers"`
}

type recordsView struct {
	Topic       string       `json:"topic"`
	Partition   int32        `json:"partition"`   // -1 for a search of every partition
	StartOffset int64        `json:"startOffset"` // of Partition; -1 for every partition
	EndOffset   int64        `json:"endOffset"`   // of Partition; -1 for every partition
	From        int64        `json:"from"`        // the first offset read; -1 for every partition
	Records     []recordView `json:"records"`
	// Search is a search's progress (search.go); absent when browsing.
	Search *searchProgress `json:"search,omitempty"`
}

// records is /api/topics/{topic}/records. Browsing reads up to limit
// records of a partition from an offset:
// ?partition=N&offset=(N|earliest|latest)&limit=N; the default offset,
// latest, shows the last limit records. Any of the search parameters
// (search.go) makes it a search instead.
func (c *Console) records(ctx context.Context, r *http.Request, cl *kgo.Client) (any, error) {
	if isSearch(r.URL.Query()) {
		s, err := prepareSearch(ctx, r, cl)
		if err != nil {
			return nil, err
		}
		v := s.view()
		v.Search, err = s.run(ctx, cl, func(rec *kgo.Record) error {
			v.Records = append(v.Records, viewRecord(rec))
			return nil
		})
		return v, err
	}
	topic := r.PathValue("topic")
	q := r.URL.Query()
	partition, err := intParam(q.Get("partition"), 0, 0, 1<<31-1)
	if err != nil {
		return nil, badRequest("partition: %v", err)
	}
	limit, err := intParam(q.Get("limit"), defaultRecords, 1, maxRecords)
	if err != nil {
		return nil, badRequest("limit: %v", err)
	}
	adm := kadm.NewClient(cl)
	td, err := describeTopic(ctx, adm, topic)
	if err != nil {
		return nil, err
	}
	p := int32(partition)
	if _, ok := td.Partitions[p]; !ok {
		return nil, notFound("topic %q has no partition %d", topic, p)
	}
	starts, ends, err := listStartEnd(ctx, adm, topic)
	if err != nil {
		return nil, err
	}
	start, _ := starts.Lookup(topic, p)
	end, _ := ends.Lookup(topic, p)
	if start.Err != nil || end.Err != nil {
		return nil, fmt.Errorf("offsets of %s-%d: %w", topic, p, errors.Join(start.Err, end.Err))
	}
	v := &recordsView{Topic: topic, Partition: p, StartOffset: start.Offset, EndOffset: end.Offset, Records: []recordView{}}
	switch o := q.Get("offset"); o {
	case "", "latest":
		v.From = end.Offset - int64(limit)
	case "earliest":
		v.From = start.Offset
	default:
		if v.From, err = strconv.ParseInt(o, 10, 64); err != nil {
			return nil, badRequest("offset %q: want a number, earliest or latest", o)
		}
	}
	v.From = min(max(v.From, start.Offset), end.Offset)
	if v.From >= end.Offset {
		return v, nil
	}
	s := &search{topic: topic, ranges: []scanRange{{Partition: p, Next: v.From, End: end.Offset}},
		limit: limit, maxRecords: maxScanRecords, maxBytes: maxScanBytes, wait: browseWait}
	_, err = s.run(ctx, cl, func(rec *kgo.Record) error {
		v.Records = append(v.Records, viewRecord(rec))
		return nil
	})
	return v, err
}

// listStartEnd lists the start and end offsets of topic's partitions.
func listStartEnd(ctx context.Context, adm *kadm.Client, topic string) (starts, ends kadm.ListedOffsets, err error) {
	if starts, err = adm.ListStartOffsets(ctx, topic); err != nil {
		return nil, nil, fmt.Errorf("list start offsets: %w", err)
	}
	if ends, err = adm.ListEndOffsets(ctx, topic); err != nil {
		return nil, nil, fmt.Errorf("list end offsets: %w", err)
	}
	return starts, ends, nil
}

func viewRecord(rec *kgo.Record) recordView { return viewRecordUpTo(rec, maxShownBytes) }

// viewRecordUpTo shows a record with its key, value and header values cut
// at limit bytes (a download's are whole: limit < 0).
func viewRecordUpTo(rec *kgo.Record, limit int) recordView {
	rv := recordView{
		Partition: rec.Partition,
		Offset:    rec.Offset,
		Timestamp: rec.Timestamp.UnixMilli(),
		Key:       viewBytes(rec.Key, limit),
		Value:     viewBytes(rec.Value, limit),
		Headers:   []headerView{},
	}
	for _, h := range rec.Headers {
		rv.Headers = append(rv.Headers, headerView{Key: h.Key, Value: viewBytes(h.Value, limit)})
	}
	return rv
}

// viewBytes shows b as text or hex, cut at limit bytes unless limit < 0;
// nil stays nil (a null key or value is not an empty one).
func viewBytes(b []byte, limit int) *bytesView {
	if b == nil {
		return nil
	}
	v := &bytesView{Size: len(b)}
	shown := b
	if limit >= 0 && len(shown) > limit {
		shown, v.Truncated = shown[:limit], true
		// Do not cut text in the middle of a UTF-8 sequence: a valid
		// b's prefix is invalid only by its last, cut sequence.
		if utf8.Valid(b) {
			for !utf8.Valid(shown) {
				shown = shown[:len(shown)-1]
			}
		}
	}
	if printable(shown) {
		v.Encoding, v.Data = "text", string(shown)
	} else {
		v.Encoding, v.Data = "hex", hex.EncodeToString(shown)
	}
	return v
}

// printable is valid UTF-8 without control characters other than
// whitespace.
func printable(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if unicode.IsControl(r) && r != '\n' && r != '\r' && r != '\t' {
			return false
		}
	}
	return true
}

// intParam parses a query parameter within [lo, hi]; empty means def.
func intParam(s string, def, lo, hi int) (int, error) {
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("%d is outside [%d, %d]", n, lo, hi)
	}
	return n, nil
}
