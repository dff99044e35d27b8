package cli

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// recordFormatter appends one consumed record to a buffer.
type recordFormatter func(dst []byte, r *kgo.Record) []byte

// newRecordFormatter picks the output format: "" or "default" is
// kafka-console-consumer's (its print.* properties apply), "json" is one
// object per line, and anything with a % is a kcat-like format string.
func newRecordFormatter(format string, props []string) (recordFormatter, error) {
	switch {
	case format == "" || format == "default":
		return defaultFormatter(props)
	case format == "json":
		if len(props) > 0 {
			return nil, fmt.Errorf("--property does not apply to --format json")
		}
		return jsonRecord, nil
	case strings.Contains(format, "%"):
		if len(props) > 0 {
			return nil, fmt.Errorf("--property does not apply to a %%-format")
		}
		return kcatFormatter(format)
	}
	return nil, fmt.Errorf("--format %q: want default, json, or a format string with %%k %%v %%t %%p %%o %%T %%h ...", format)
}

// defaultFormatter follows Kafka's DefaultMessageFormatter: optional
// timestamp, partition, offset, headers and key, then the value, separated by
// key.separator.
func defaultFormatter(props []string) (recordFormatter, error) {
	var (
		printTimestamp, printPartition, printOffset, printHeaders, printKey bool
		printValue                                                          = true
		keySep, lineSep, headersSep, nullLiteral                            = "\t", "\n", ",", "null"
	)
	for _, p := range props {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			return nil, fmt.Errorf("--property %q: want key=value", p)
		}
		flag := strings.EqualFold(v, "true")
		switch k {
		case "print.timestamp":
			printTimestamp = flag
		case "print.partition":
			printPartition = flag
		case "print.offset":
			printOffset = flag
		case "print.headers":
			printHeaders = flag
		case "print.key":
			printKey = flag
		case "print.value":
			printValue = flag
		case "key.separator":
			keySep = v
		case "line.separator":
			lineSep = v
		case "headers.separator":
			headersSep = v
		case "null.literal":
			nullLiteral = v
		default:
			return nil, fmt.Errorf("--property %q: unknown property (print.timestamp, print.partition, print.offset, print.headers, print.key, print.value, key.separator, line.separator, headers.separator, null.literal)", k)
		}
	}
	bytesOrNull := func(dst, b []byte) []byte {
		if b == nil {
			return append(dst, nullLiteral...)
		}
		return append(dst, b...)
	}
	return func(dst []byte, r *kgo.Record) []byte {
		fields := 0
		sep := func() {
			if fields > 0 {
				dst = append(dst, keySep...)
			}
			fields++
		}
		if printTimestamp {
			sep()
			if r.Attrs.TimestampType() == 1 {
				dst = append(dst, "LogAppendTime:"...)
			} else {
				dst = append(dst, "CreateTime:"...)
			}
			dst = strconv.AppendInt(dst, r.Timestamp.UnixMilli(), 10)
		}
		if printPartition {
			sep()
			dst = strconv.AppendInt(append(dst, "Partition:"...), int64(r.Partition), 10)
		}
		if printOffset {
			sep()
			dst = strconv.AppendInt(append(dst, "Offset:"...), r.Offset, 10)
		}
		if printHeaders {
			sep()
			if len(r.Headers) == 0 {
				dst = append(dst, "NO_HEADERS"...)
			}
			for i, h := range r.Headers {
				if i > 0 {
					dst = append(dst, headersSep...)
				}
				dst = bytesOrNull(append(append(dst, h.Key...), ':'), h.Value)
			}
		}
		if printKey {
			sep()
			dst = bytesOrNull(dst, r.Key)
		}
		if printValue {
			sep()
			dst = bytesOrNull(dst, r.Value)
		}
		return append(dst, lineSep...)
	}, nil
}

type jsonHeader struct {
	Key   string  `json:"key"`
	Value *string `json:"value"`
}

type jsonRecordOut struct {
	Topic     string       `json:"topic"`
	Partition int32        `json:"partition"`
	Offset    int64        `json:"offset"`
	Timestamp int64        `json:"timestamp"`
	Key       *string      `json:"key"`
	Value     *string      `json:"value"`
	Headers   []jsonHeader `json:"headers,omitempty"`
}

func optString(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

// jsonRecord writes one JSON object per record; keys and values are JSON
// strings (bytes that are not UTF-8 become U+FFFD) or null.
func jsonRecord(dst []byte, r *kgo.Record) []byte {
	out := jsonRecordOut{
		Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp.UnixMilli(),
		Key: optString(r.Key), Value: optString(r.Value),
	}
	for _, h := range r.Headers {
		out.Headers = append(out.Headers, jsonHeader{Key: h.Key, Value: optString(h.Value)})
	}
	b, _ := json.Marshal(out) // cannot fail: strings and numbers only
	return append(append(dst, b...), '\n')
}

// kcatFormatter compiles a kcat -f format: %t topic, %p partition, %o offset,
// %k key, %v or %s value, %K key length, %S value length (-1 for null),
// %T timestamp (ms), %h headers (k=v,...), %% a percent sign; \n \t \r \\
// are escapes.
func kcatFormatter(format string) (recordFormatter, error) {
	type piece struct {
		lit  string
		verb byte
	}
	var pieces []piece
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			pieces = append(pieces, piece{lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(format); i++ {
		c := format[i]
		switch {
		case c == '\\' && i+1 < len(format):
			i++
			switch format[i] {
			case 'n':
				lit.WriteByte('\n')
			case 't':
				lit.WriteByte('\t')
			case 'r':
				lit.WriteByte('\r')
			case '\\':
				lit.WriteByte('\\')
			default:
				lit.WriteByte('\\')
				lit.WriteByte(format[i])
			}
		case c == '%':
			if i+1 >= len(format) {
				return nil, fmt.Errorf("--format %q: ends with a lone %%", format)
			}
			i++
			switch v := format[i]; v {
			case '%':
				lit.WriteByte('%')
			case 't', 'p', 'o', 'k', 'v', 's', 'K', 'S', 'T', 'h':
				flush()
				pieces = append(pieces, piece{verb: v})
			default:
				return nil, fmt.Errorf("--format %q: unknown %%%c (want %%t %%p %%o %%k %%v %%s %%K %%S %%T %%h %%%%)", format, v)
			}
		default:
			lit.WriteByte(c)
		}
	}
	flush()
	length := func(b []byte) int64 {
		if b == nil {
			return -1
		}
		return int64(len(b))
	}
	return func(dst []byte, r *kgo.Record) []byte {
		for _, p := range pieces {
			switch p.verb {
			case 0:
				dst = append(dst, p.lit...)
			case 't':
				dst = append(dst, r.Topic...)
			case 'p':
				dst = strconv.AppendInt(dst, int64(r.Partition), 10)
			case 'o':
				dst = strconv.AppendInt(dst, r.Offset, 10)
			case 'k':
				dst = append(dst, r.Key...)
			case 'v', 's':
				dst = append(dst, r.Value...)
			case 'K':
				dst = strconv.AppendInt(dst, length(r.Key), 10)
			case 'S':
				dst = strconv.AppendInt(dst, length(r.Value), 10)
			case 'T':
				dst = strconv.AppendInt(dst, r.Timestamp.UnixMilli(), 10)
			case 'h':
				for i, h := range r.Headers {
					if i > 0 {
						dst = append(dst, ',')
					}
					dst = append(append(append(dst, h.Key...), '='), h.Value...)
				}
			}
		}
		return dst
	}, nil
}
