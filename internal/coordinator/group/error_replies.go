package group

import (
	"reflect"

	"gregor/internal/errorcode"
)

// errorReplies turns prepared replies into error answers with code: every
// error code field of each response (top level and per partition) is set,
// so that a client never takes an answer for success whose write was not
// committed. The responses are not yet delivered, so they are changed in
// place.
func errorReplies(rs []Reply, code int16) []Reply {
	for _, r := range rs {
		errorcode.Walk(r.Resp, func(f reflect.Value) {
			if f.CanSet() {
				f.SetInt(int64(code))
			}
		})
	}
	return rs
}
