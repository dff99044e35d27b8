package metadata

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
)

// decoder reads Kafka's flexible encoding. The first failure sticks: every
// later read returns a zero value, so record decoders read straight through
// and the caller checks err once (the kbin.Reader convention, plus a reason).
type decoder struct {
	r   kbin.Reader
	err error
}

var (
	errShort     = errors.New("not enough data")
	errNullArray = errors.New("null array in a non-nullable field")
)

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
	d.r.Src = nil
}

func (d *decoder) check() bool {
	if d.err == nil && !d.r.Ok() {
		d.fail(errShort)
	}
	return d.err == nil
}

func (d *decoder) bool() bool {
	v := d.r.Bool()
	d.check()
	return v
}

func (d *decoder) int8() int8 {
	v := d.r.Int8()
	d.check()
	return v
}

func (d *decoder) int16() int16 {
	v := d.r.Int16()
	d.check()
	return v
}

func (d *decoder) uint16() uint16 {
	v := d.r.Uint16()
	d.check()
	return v
}

func (d *decoder) int32() int32 {
	v := d.r.Int32()
	d.check()
	return v
}

func (d *decoder) int64() int64 {
	v := d.r.Int64()
	d.check()
	return v
}

func (d *decoder) float64() float64 {
	v := d.r.Float64()
	d.check()
	return v
}

func (d *decoder) uuid() [16]byte {
	v := d.r.Uuid()
	d.check()
	return v
}

func (d *decoder) uvarint() uint32 {
	if d.err != nil {
		return 0
	}
	v := d.r.Uvarint()
	d.check()
	return v
}

// length reads a compact length (n+1, 0 meaning null) and checks that at least
// count*minSize bytes remain, so a hostile length cannot make us allocate more
// than the input could hold.
func (d *decoder) length(minSize int) (n int, isNull bool) {
	raw := d.uvarint()
	if d.err != nil {
		return 0, false
	}
	if raw == 0 {
		return 0, true
	}
	n = int(raw - 1)
	if n*minSize > len(d.r.Src) {
		d.fail(fmt.Errorf("length %d exceeds the %d remaining bytes", n, len(d.r.Src)))
		return 0, false
	}
	return n, false
}

func (d *decoder) compactString() string {
	n, isNull := d.length(1)
	if isNull {
		d.fail(errors.New("null string in a non-nullable field"))
	}
	if d.err != nil {
		return ""
	}
	return string(d.r.Span(n))
}

func (d *decoder) compactNullableString() *string {
	n, isNull := d.length(1)
	if isNull || d.err != nil {
		return nil
	}
	s := string(d.r.Span(n))
	return &s
}

// compactBytes reads non-nullable compact bytes into a copy of their own,
// so a record never aliases the buffer it was decoded from. Empty bytes
// decode to a non-nil empty slice.
func (d *decoder) compactBytes() []byte {
	n, isNull := d.length(1)
	if isNull {
		d.fail(errors.New("null bytes in a non-nullable field"))
	}
	if d.err != nil {
		return nil
	}
	return append([]byte{}, d.r.Span(n)...)
}

// int32s reads a compact int32 array; nullable says whether null is allowed.
// A non-null empty array decodes to a non-nil empty slice so null and empty
// stay distinct through a round trip.
func (d *decoder) int32s(nullable bool) []int32 {
	n, isNull := d.length(4)
	if isNull {
		if !nullable {
			d.fail(errNullArray)
		}
		return nil
	}
	if d.err != nil {
		return nil
	}
	out := make([]int32, n)
	for i := range out {
		out[i] = d.r.Int32()
	}
	d.check()
	return out
}

func (d *decoder) uuids(nullable bool) [][16]byte {
	n, isNull := d.length(16)
	if isNull {
		if !nullable {
			d.fail(errNullArray)
		}
		return nil
	}
	if d.err != nil {
		return nil
	}
	out := make([][16]byte, n)
	for i := range out {
		out[i] = d.r.Uuid()
	}
	d.check()
	return out
}

// tags reads a tagged-field section. known decodes the tags it knows from a
// decoder limited to the field's bytes, and must consume all of them; unknown
// tags are skipped, as Kafka keeps them only as opaque bytes.
func (d *decoder) tags(known func(tag uint32, field *decoder) bool) {
	count := d.uvarint()
	for i := uint32(0); i < count && d.err == nil; i++ {
		tag := d.uvarint()
		size := d.uvarint()
		if d.err != nil {
			return
		}
		if uint64(size) > uint64(len(d.r.Src)) {
			d.fail(fmt.Errorf("tagged field %d of %d bytes exceeds the %d remaining", tag, size, len(d.r.Src)))
			return
		}
		body := d.r.Span(int(size))
		if known == nil {
			continue
		}
		field := &decoder{r: kbin.Reader{Src: body}}
		if !known(tag, field) {
			continue
		}
		if field.err == nil && len(field.r.Src) != 0 {
			field.fail(fmt.Errorf("tagged field %d has %d unread byte(s)", tag, len(field.r.Src)))
		}
		if field.err != nil {
			d.fail(fmt.Errorf("tagged field %d: %w", tag, field.err))
			return
		}
	}
}

// noTags reads a tagged-field section of a struct that knows no tags.
func (d *decoder) noTags() { d.tags(nil) }

// taggedField is one field of a tagged-field section being written.
type taggedField struct {
	tag  uint32
	body []byte
}

// appendTags writes a tagged-field section; fields must be in ascending tag
// order, as Kafka requires.
func appendTags(dst []byte, fields []taggedField) []byte {
	dst = kbin.AppendUvarint(dst, uint32(len(fields)))
	for _, f := range fields {
		dst = kbin.AppendUvarint(dst, f.tag)
		dst = kbin.AppendUvarint(dst, uint32(len(f.body)))
		dst = append(dst, f.body...)
	}
	return dst
}

func appendInt32s(dst []byte, v []int32) []byte {
	dst = kbin.AppendCompactArrayLen(dst, len(v))
	for _, x := range v {
		dst = kbin.AppendInt32(dst, x)
	}
	return dst
}

// appendNullableInt32s writes nil as a null array.
func appendNullableInt32s(dst []byte, v []int32) []byte {
	dst = kbin.AppendCompactNullableArrayLen(dst, len(v), v == nil)
	for _, x := range v {
		dst = kbin.AppendInt32(dst, x)
	}
	return dst
}

func appendUUIDs(dst []byte, v [][16]byte) []byte {
	dst = kbin.AppendCompactArrayLen(dst, len(v))
	for _, x := range v {
		dst = kbin.AppendUuid(dst, x)
	}
	return dst
}

func appendNullableUUIDs(dst []byte, v [][16]byte) []byte {
	dst = kbin.AppendCompactNullableArrayLen(dst, len(v), v == nil)
	for _, x := range v {
		dst = kbin.AppendUuid(dst, x)
	}
	return dst
}
