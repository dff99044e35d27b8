package group

import "reflect"

// errorReplies turns prepared replies into error answers with code: every
// error code field of each response (top level and per partition) is set,
// so that a client never takes an answer for success whose write was not
// committed. The responses are not yet delivered, so they are changed in
// place.
func errorReplies(rs []Reply, code int16) []Reply {
	for _, r := range rs {
		setErrorCodes(reflect.ValueOf(r.Resp), code)
	}
	return rs
}

// setErrorCodes sets every int16 field named ErrorCode reachable from v
// through pointers, structs and slices (kmsg responses carry their codes so).
func setErrorCodes(v reflect.Value, code int16) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			setErrorCodes(v.Elem(), code)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range v.NumField() {
			f := v.Field(i)
			if !t.Field(i).IsExported() {
				continue
			}
			if t.Field(i).Name == "ErrorCode" && f.Kind() == reflect.Int16 && f.CanSet() {
				f.SetInt(int64(code))
				continue
			}
			setErrorCodes(f, code)
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return // bytes: assignments, metadata
		}
		for i := range v.Len() {
			setErrorCodes(v.Index(i), code)
		}
	}
}
