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
// process: a count, bytes per fetch, bytes shown per key or value, time.
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
	Offset    int64        `json:"offset"`
	Timestamp int64        `json:"timestamp"` // ms since the epoch
	Key       *bytesView   `json:"key"`       // null for a null key
	Value     *bytesView   `json:"value"`     // null for a tombstone
	Headers   []headerView `json:"headers"`
}

type recordsView struct {
	Topic       string       `json:"topic"`
	Partition   int32        `json:"partition"`
	StartOffset int64        `json:"startOffset"`
	EndOffset   int64        `json:"endOffset"`
	From        int64        `json:"from"`
	Records     []recordView `json:"records"`
}

// records reads up to limit records of a partition from an offset:
// ?partition=N&offset=(N|earliest|latest)&limit=N. The default offset,
// latest, shows the last limit records.
func (c *Console) records(ctx context.Context, r *http.Request, cl *kgo.Client) (any, error) {
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
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("list start offsets: %w", err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("list end offsets: %w", err)
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
	v.Records, err = consume(ctx, cl, topic, p, v.From, end.Offset, limit)
	return v, err
}

// consume reads [from, end) of one partition, at most limit records, with a
// client of its own (a consuming client cannot be shared) made with base's
// options: the same broker, TLS and, for a logged-in visitor, credentials.
func consume(ctx context.Context, base *kgo.Client, topic string, p int32, from, end int64, limit int) ([]recordView, error) {
	opts := append(base.Opts(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().At(from)}}),
		kgo.FetchMaxBytes(maxFetchBytes),
		kgo.FetchMaxPartitionBytes(maxFetchBytes),
		kgo.FetchMaxWait(250*time.Millisecond),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("consume %s-%d: %w", topic, p, err)
	}
	defer cl.Close()
	// Transaction markers and compacted-away offsets never come back as
	// records, so reaching end is not guaranteed: the wait bounds it.
	ctx, cancel := context.WithTimeout(ctx, browseWait)
	defer cancel()
	out := []recordView{}
	for len(out) < limit {
		fetches := cl.PollRecords(ctx, limit-len(out))
		for _, fe := range fetches.Errors() {
			if errors.Is(fe.Err, context.DeadlineExceeded) || errors.Is(fe.Err, context.Canceled) || errors.Is(fe.Err, kgo.ErrClientClosed) {
				return out, nil
			}
			return nil, fmt.Errorf("consume %s-%d: %w", topic, p, fe.Err)
		}
		last := int64(-1)
		fetches.EachRecord(func(rec *kgo.Record) {
			if len(out) < limit {
				out = append(out, viewRecord(rec))
			}
			last = rec.Offset
		})
		if last+1 >= end || ctx.Err() != nil {
			break
		}
	}
	return out, nil
}

func viewRecord(rec *kgo.Record) recordView {
	rv := recordView{
		Offset:    rec.Offset,
		Timestamp: rec.Timestamp.UnixMilli(),
		Key:       viewBytes(rec.Key),
		Value:     viewBytes(rec.Value),
		Headers:   []headerView{},
	}
	for _, h := range rec.Headers {
		rv.Headers = append(rv.Headers, headerView{Key: h.Key, Value: viewBytes(h.Value)})
	}
	return rv
}

// viewBytes shows b as text or hex; nil stays nil (a null key or value is
// not an empty one).
func viewBytes(b []byte) *bytesView {
	if b == nil {
		return nil
	}
	v := &bytesView{Size: len(b)}
	shown := b
	if len(shown) > maxShownBytes {
		shown, v.Truncated = shown[:maxShownBytes], true
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
