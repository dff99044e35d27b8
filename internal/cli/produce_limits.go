package cli

import (
	"context"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// defaultMaxRequestSize is Kafka's producer default for max.request.size,
// the limit when neither the command nor the topic says another.
const defaultMaxRequestSize = 1 << 20

// sizeLimit is one bound on a record's size, as Kafka's producer counts it:
// serialized in a batch of its own.
type sizeLimit struct {
	bytes  int64
	what   string // the setting: max.request.size=1048576
	advice string // whose limit it is and how to raise it
	batch  bool   // it bounds batches too, not only single records
}

// sizeLimits are the produce command's bounds on a record, checked before
// the record is handed to the client. The client builds batches up to the
// smallest of those that bound batches, and refuses a record over it by
// itself with the same MESSAGE_TOO_LARGE a broker answers; checking first
// with an upper bound of the record's size (as Kafka's producer does) keeps
// every such refusal here, where it can say which limit it was.
type sizeLimits []sizeLimit

// recordLimits gathers the limits for producing to topic: max.request.size
// when given, the topic's max.message.bytes (so that no batch the client
// builds is one the broker refuses, and a record the topic allows is sent
// whatever its size), Kafka's default max.request.size when the topic's
// cannot be read and none was given, and buffer.memory when given.
func recordLimits(ctx context.Context, conn *connFlags, cl *kgo.Client, topic string, s *clientSettings) sizeLimits {
	const raiseClient = "a limit of this client: raise it with --max-request-size N or --producer-property max.request.size=N"
	var limits sizeLimits
	if s.maxRequestSize > 0 {
		limits = append(limits, sizeLimit{int64(s.maxRequestSize), fmt.Sprintf("max.request.size=%d", s.maxRequestSize), raiseClient, true})
	}
	topicMax, err := topicMaxMessageBytes(ctx, conn, cl, topic)
	switch {
	case err == nil:
		limits = append(limits, sizeLimit{topicMax, fmt.Sprintf("topic %s's max.message.bytes=%d", topic, topicMax),
			fmt.Sprintf("the broker would refuse it: raise it with `gregor topic alter %s --config max.message.bytes=N`", topic), true})
	case s.maxRequestSize == 0:
		limits = append(limits, sizeLimit{defaultMaxRequestSize, fmt.Sprintf("the default max.request.size=%d", defaultMaxRequestSize),
			fmt.Sprintf("%s (the topic's max.message.bytes could not be read: %v)", raiseClient, err), true})
	}
	if s.bufferMemory > 0 {
		limits = append(limits, sizeLimit{s.bufferMemory, fmt.Sprintf("buffer.memory=%d", s.bufferMemory),
			"a limit of this client: raise it with --producer-property buffer.memory=N", false})
	}
	return limits
}

// topicMaxMessageBytes reads the topic's effective max.message.bytes.
func topicMaxMessageBytes(ctx context.Context, conn *connFlags, cl *kgo.Client, topic string) (int64, error) {
	dctx, cancel := context.WithTimeout(ctx, conn.timeout)
	defer cancel()
	rcs, err := kadm.NewClient(cl).DescribeTopicConfigs(dctx, topic)
	if err != nil {
		return 0, err
	}
	rc, err := rcs.On(topic, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		return 0, err
	}
	for _, c := range rc.Configs {
		if c.Key == "max.message.bytes" {
			return strconv.ParseInt(c.MaybeValue(), 10, 64)
		}
	}
	return 0, fmt.Errorf("the broker did not list max.message.bytes for topic %s", topic)
}

// batchBytes is the largest batch the client may build: the smallest limit
// that bounds batches, within what franz-go accepts.
func (ls sizeLimits) batchBytes() int32 {
	b := int64(maxRequestSizeLimit)
	for _, l := range ls {
		if l.batch {
			b = min(b, l.bytes)
		}
	}
	return int32(max(b, 512))
}

// check refuses a record over a limit, naming the smallest it exceeds.
func (ls sizeLimits) check(r *kgo.Record) error {
	size := serializedSizeBound(r)
	var over *sizeLimit
	for i, l := range ls {
		if size > l.bytes && (over == nil || l.bytes < over.bytes) {
			over = &ls[i]
		}
	}
	if size > int64(ls.batchBytes()) && over == nil {
		// Only franz-go's own bounds on a batch (512 bytes to 1 GiB).
		return fmt.Errorf("the record is %d bytes when serialized, larger than the %d bytes this client can send in one batch", size, ls.batchBytes())
	}
	if over == nil {
		return nil
	}
	return fmt.Errorf("the record is %d bytes when serialized, larger than %s; %s", size, over.what, over.advice)
}

// serializedSizeBound is an upper bound of the bytes a record takes on the
// wire in a batch of its own (Kafka's estimateSizeInBytesUpperBound): the
// record batch header and the record with every varint at its widest, and
// the few bytes of framing that franz-go counts in a batch's size.
func serializedSizeBound(r *kgo.Record) int64 {
	const (
		batchFraming   = 4 + 5 // the records' length prefix, as a fixed or varint length
		batchHeader    = 61    // baseOffset to the record count
		varint         = 5     // the widest 32-bit varint
		varlong        = 10    // the widest 64-bit varint
		recordOverhead = varint + 1 + varlong + varint + varint + varint + varint
	)
	n := int64(batchFraming + batchHeader + recordOverhead + len(r.Key) + len(r.Value))
	for _, h := range r.Headers {
		n += int64(varint + len(h.Key) + varint + len(h.Value))
	}
	return n
}
