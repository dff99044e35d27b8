package console_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// searchJSON is a records search's answer.
type searchJSON struct {
	recordsJSON
	Partition int32 `json:"partition"`
	Search    *struct {
		Scanned      int64  `json:"scanned"`
		ScannedBytes int64  `json:"scannedBytes"`
		Matched      int    `json:"matched"`
		Remaining    int64  `json:"remaining"`
		Done         bool   `json:"done"`
		Cursor       string `json:"cursor"`
		Stopped      string `json:"stopped"`
	} `json:"search"`
}

// at is a record's place: partition/offset.
func (r searchJSON) at() []string {
	var out []string
	for _, rec := range r.Records {
		out = append(out, fmt.Sprintf("%d/%d", rec.Partition, rec.Offset))
	}
	slices.Sort(out)
	return out
}

// seedSearch makes topic "orders" with 3 partitions of 10 records each:
// record i of partition p has key "p<p>-k<i>", value {"id": <p*10+i>,
// "note": "...", timestamp base+(p*10+i) s, and header "type" = "even" or
// "odd"; the value of record 7 of partition 1 also holds "needle".
func seedSearch(t *testing.T, n *node) time.Time {
	t.Helper()
	cl := n.client(kgo.DefaultProduceTopic("orders"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if _, err := kadm.NewClient(cl).CreateTopic(ctxT(t), 3, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	var recs []*kgo.Record
	for p := range int32(3) {
		for i := range 10 {
			id := int(p)*10 + i
			note := "plain"
			if p == 1 && i == 7 {
				note = "the needle is here"
			}
			typ := "even"
			if id%2 == 1 {
				typ = "odd"
			}
			recs = append(recs, &kgo.Record{Partition: p, Key: []byte(fmt.Sprintf("p%d-k%d", p, i)),
				Value:     []byte(fmt.Sprintf(`{"id": %d, "note": %q}`, id, note)),
				Timestamp: base.Add(time.Duration(id) * time.Second),
				Headers:   []kgo.RecordHeader{{Key: "type", Value: []byte(typ)}}})
		}
	}
	if err := cl.ProduceSync(ctxT(t), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return base
}

func TestSearchRecords(t *testing.T) {
	n := startNode(t)
	base := seedSearch(t, n)
	search := func(q url.Values) searchJSON {
		t.Helper()
		var r searchJSON
		getJSON(t, n.url("/api/topics/orders/records?"+q.Encode()), http.StatusOK, &r)
		if r.Search == nil {
			t.Fatalf("search %v: no progress in the answer", q)
		}
		return r
	}

	// A value substring over every partition.
	r := search(url.Values{"partition": {"all"}, "value": {"needle"}})
	if got := r.at(); !slices.Equal(got, []string{"1/7"}) || !r.Search.Done || r.Search.Scanned != 30 || r.Search.Remaining != 0 || r.Partition != -1 {
		t.Errorf("value needle: %v, %+v", got, *r.Search)
	}
	if v := r.Records[0].Value; v == nil || !strings.Contains(v.Data, "the needle is here") {
		t.Errorf("the needle's value: %+v", v)
	}
	// A key regex, a header, and both with a value substring.
	r = search(url.Values{"key": {`^p2-k[0-2]$`}, "regex": {"true"}})
	if got := r.at(); !slices.Equal(got, []string{"2/0", "2/1", "2/2"}) {
		t.Errorf("key regex: %v", got)
	}
	r = search(url.Values{"partition": {"0"}, "header": {"type=odd"}})
	if got := r.at(); !slices.Equal(got, []string{"0/1", "0/3", "0/5", "0/7", "0/9"}) || r.Partition != 0 {
		t.Errorf("header type=odd on partition 0: %v", got)
	}
	r = search(url.Values{"header": {"type"}, "value": {`"id": 2`}})
	if got := r.at(); len(got) != 11 { // ids 2 and 20-29
		t.Errorf("header type, value \"id\": 2: %v", got)
	}
	if r = search(url.Values{"header": {"nope"}}); len(r.Records) != 0 || !r.Search.Done {
		t.Errorf("a header no record has: %v", r.at())
	}
	// An offset range: [3, 5) of each partition.
	r = search(url.Values{"offset": {"3"}, "endOffset": {"5"}})
	if got := r.at(); !slices.Equal(got, []string{"0/3", "0/4", "1/3", "1/4", "2/3", "2/4"}) || r.Search.Scanned != 6 {
		t.Errorf("offsets [3, 5): %v, scanned %d", got, r.Search.Scanned)
	}
	// A time range, both ends inclusive: ids 12 to 14 (RFC 3339 and ms).
	r = search(url.Values{"fromTime": {base.Add(12 * time.Second).UTC().Format(time.RFC3339)},
		"toTime": {fmt.Sprint(base.Add(14 * time.Second).UnixMilli())}})
	if got := r.at(); !slices.Equal(got, []string{"1/2", "1/3", "1/4"}) || r.Search.Scanned != 3 {
		t.Errorf("time range: %v, scanned %d (want only partition 1's offsets 2-4 read)", got, r.Search.Scanned)
	}

	// The scan budget: 7 records a request, continued with the cursor
	// until done; the continuation finds what one request finds.
	var found []string
	var scanned int64
	q := url.Values{"header": {"type=even"}, "maxScan": {"7"}}
	for i := 0; ; i++ {
		if i > 10 {
			t.Fatal("the search did not finish in 10 continuations")
		}
		r = search(q)
		found = append(found, r.at()...)
		scanned += r.Search.Scanned
		if r.Search.Done {
			break
		}
		if r.Search.Scanned != 7 || r.Search.Stopped != "records" || r.Search.Cursor == "" || r.Search.Remaining != 30-scanned {
			t.Fatalf("request %d: %+v after %d scanned", i, *r.Search, scanned)
		}
		q.Set("cursor", r.Search.Cursor)
	}
	slices.Sort(found)
	if all := search(url.Values{"header": {"type=even"}}); !slices.Equal(found, all.at()) || len(found) != 15 || scanned != 30 {
		t.Errorf("continued search found %v (scanned %d), one search %v", found, scanned, all.at())
	}
	// At most limit matches; the rest is for the next request.
	r = search(url.Values{"value": {"plain"}, "limit": {"4"}})
	if len(r.Records) != 4 || r.Search.Done || r.Search.Stopped != "limit" || r.Search.Cursor == "" {
		t.Errorf("limit 4: %d records, %+v", len(r.Records), *r.Search)
	}

	// Browsing (no search parameter) answers as before: no progress.
	var browsed searchJSON
	getJSON(t, n.url("/api/topics/orders/records?partition=1&offset=6&limit=2"), http.StatusOK, &browsed)
	if browsed.Search != nil || !slices.Equal(browsed.at(), []string{"1/6", "1/7"}) {
		t.Errorf("browse: %+v", browsed)
	}

	var e struct{ Error string }
	for q, status := range map[string]int{
		"key=%28&regex=true":         http.StatusBadRequest,
		"cursor=0:5":                 http.StatusBadRequest,
		"cursor=7:0:3":               http.StatusNotFound,
		"fromTime=noon":              http.StatusBadRequest,
		"fromTime=20&toTime=10":      http.StatusBadRequest,
		"maxScan=0":                  http.StatusBadRequest,
		"format=xml":                 http.StatusBadRequest,
		"partition=all&endOffset=-1": http.StatusBadRequest,
		"partition=5&value=x":        http.StatusNotFound,
	} {
		getJSON(t, n.url("/api/topics/orders/records?"+q), status, &e)
		if e.Error == "" {
			t.Errorf("?%s: no error message", q)
		}
	}
}

// A download is the matches as JSON lines, values whole.
func TestSearchDownload(t *testing.T) {
	n := startNode(t)
	seedSearch(t, n)
	resp, err := http.Get(n.url("/api/topics/orders/records?format=jsonl&header=type%3Dodd&partition=all"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-ndjson" ||
		resp.Header.Get("Content-Disposition") != `attachment; filename="orders.jsonl"` {
		t.Fatalf("download: %d %v", resp.StatusCode, resp.Header)
	}
	var ids []int
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var line struct {
			Partition int32
			Offset    int64
			Value     struct{ Encoding, Data string }
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		var v struct{ ID int }
		if err := json.Unmarshal([]byte(line.Value.Data), &v); err != nil || line.Value.Encoding != "text" {
			t.Fatalf("value of %d/%d: %+v %v", line.Partition, line.Offset, line.Value, err)
		}
		ids = append(ids, v.ID)
	}
	slices.Sort(ids)
	if len(ids) != 15 || ids[0] != 1 || ids[14] != 29 {
		t.Errorf("downloaded ids %v, want the 15 odd ones", ids)
	}
	if resp.Trailer.Get("X-Gregor-Scanned") != "30" || resp.Trailer.Get("X-Gregor-Cursor") != "" {
		t.Errorf("trailers %v", resp.Trailer)
	}
	var e struct{ Error string }
	getJSON(t, n.url("/api/topics/nope/records?format=jsonl"), http.StatusNotFound, &e)
}

// A partition ending in a transaction marker is read to its end at once
// (the marker counts as scanned), not until the search's wait is over.
func TestSearchEndsAtTransactionMarker(t *testing.T) {
	n := startNode(t)
	cl := n.client(kgo.TransactionalID("search-tx"), kgo.DefaultProduceTopic("tx"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if _, err := kadm.NewClient(cl).CreateTopic(ctxT(t), 1, 1, nil, "tx"); err != nil {
		t.Fatal(err)
	}
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctxT(t), &kgo.Record{Value: []byte("in a transaction")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := cl.EndTransaction(ctxT(t), kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	// The commit marker is written after EndTxn's answer, as in Kafka.
	waitUntil(t, "the commit marker at offset 1", func() bool {
		ends, err := kadm.NewClient(cl).ListEndOffsets(ctxT(t), "tx")
		o, _ := ends.Lookup("tx", 0)
		return err == nil && o.Offset == 2
	})
	var r searchJSON
	getJSON(t, n.url("/api/topics/tx/records?value=transaction"), http.StatusOK, &r)
	if len(r.Records) != 1 || !r.Search.Done || r.Search.Scanned != 2 || r.Search.Stopped != "" {
		t.Errorf("search of a committed transaction: %d records, %+v", len(r.Records), *r.Search)
	}
}
