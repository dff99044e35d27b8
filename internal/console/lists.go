package console

import (
	"cmp"
	"net/http"
	"slices"
	"strings"
)

// Lists are paged on the server so that a page stays small and quick with
// 10,000 topics: ?q= (a case-insensitive substring of the name), sort=
// (one of the list's keys), order=asc|desc, offset= and limit=. A list
// sorts only by what it knows for every row without asking the brokers
// per row (a topic's partitions from Metadata, not its size); what a row
// needs beyond that is asked for the page's rows only.
const (
	defaultPageSize = 50
	maxPageSize     = 1000
)

// listQuery is a list's ?q=&sort=&order=&offset=&limit=.
type listQuery struct {
	q      string // lower case
	sort   string
	desc   bool
	offset int
	limit  int
}

// page is one page of a list: Total rows match q, Items are those from
// Offset on, at most Limit.
type page[T any] struct {
	Total  int    `json:"total"`
	Offset int    `json:"offset"`
	Limit  int    `json:"limit"`
	Sort   string `json:"sort"`
	Order  string `json:"order"`
	Items  []T    `json:"items"`
}

// sorter orders a list's rows by one key; rows that tie are ordered by
// their names (the list's tiebreak).
type sorter[T any] map[string]func(a, b T) int

func parseListQuery(r *http.Request, keys []string, defSort string) (listQuery, error) {
	qs := r.URL.Query()
	lq := listQuery{q: strings.ToLower(strings.TrimSpace(qs.Get("q"))), sort: defSort}
	if s := qs.Get("sort"); s != "" {
		if !slices.Contains(keys, s) {
			return lq, badRequest("sort %q: want one of %s", s, strings.Join(keys, ", "))
		}
		lq.sort = s
	}
	switch o := qs.Get("order"); o {
	case "", "asc":
	case "desc":
		lq.desc = true
	default:
		return lq, badRequest("order %q: want asc or desc", o)
	}
	var err error
	if lq.offset, err = intParam(qs.Get("offset"), 0, 0, 1<<31-1); err != nil {
		return lq, badRequest("offset: %v", err)
	}
	if lq.limit, err = intParam(qs.Get("limit"), defaultPageSize, 1, maxPageSize); err != nil {
		return lq, badRequest("limit: %v", err)
	}
	return lq, nil
}

// matches is whether name contains the query's substring.
func (lq listQuery) matches(name string) bool {
	return lq.q == "" || strings.Contains(strings.ToLower(name), lq.q)
}

// paginate sorts rows (already filtered) by the query's key, name as the
// tiebreak, and cuts the page out of them.
func paginate[T any](rows []T, lq listQuery, by sorter[T], name func(T) string) page[T] {
	less := by[lq.sort]
	slices.SortStableFunc(rows, func(a, b T) int {
		c := 0
		if less != nil {
			c = less(a, b)
		}
		if c == 0 {
			c = cmp.Compare(name(a), name(b))
		}
		if lq.desc {
			return -c
		}
		return c
	})
	p := page[T]{Total: len(rows), Offset: lq.offset, Limit: lq.limit, Sort: lq.sort, Order: "asc", Items: []T{}}
	if lq.desc {
		p.Order = "desc"
	}
	if lq.offset < len(rows) {
		p.Items = rows[lq.offset:min(lq.offset+lq.limit, len(rows))]
	}
	return p
}
