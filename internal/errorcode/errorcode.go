// Package errorcode walks the error codes of Kafka messages: every int16
// field named ErrorCode, at any depth (top level, per topic, per
// partition), as kmsg's generated types carry them. Metrics count them;
// a coordinator turns a prepared answer into an error with them.
package errorcode

import "reflect"

// Walk calls fn with each ErrorCode field reachable from msg (a kmsg
// message or a pointer to one) through pointers, structs and slices. The
// field is settable when msg was passed as a pointer.
func Walk(msg any, fn func(field reflect.Value)) {
	walk(reflect.ValueOf(msg), fn)
}

func walk(v reflect.Value, fn func(reflect.Value)) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walk(v.Elem(), fn)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range v.NumField() {
			if !t.Field(i).IsExported() {
				continue
			}
			f := v.Field(i)
			if t.Field(i).Name == "ErrorCode" && f.Kind() == reflect.Int16 {
				fn(f)
				continue
			}
			walk(f, fn)
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return // bytes (records, assignments), not structure
		}
		for i := range v.Len() {
			walk(v.Index(i), fn)
		}
	}
}
