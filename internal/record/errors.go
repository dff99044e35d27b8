package record

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Errors of this package. Each maps to one Kafka error code (KafkaErrorCode);
// callers wrap them with context and test them with errors.Is.
//
// Kafka's class hierarchy makes InvalidRecordException a subclass of
// CorruptRecordException, and Kafka throws InvalidRecordException (code
// INVALID_RECORD) for a malformed record inside a batch whose CRC is good:
// premature end, records left over, bad varints, bad header counts, a count
// that disagrees with lastOffsetDelta. Those errors here wrap both
// ErrInvalidRecord and ErrCorruptMessage, and KafkaErrorCode answers
// INVALID_RECORD for them, as Kafka does.
var (
	// ErrCorruptMessage is Kafka's CORRUPT_MESSAGE (CorruptRecordException):
	// a batch CRC mismatch, a batch length below the minimum, a magic byte
	// outside 0..2, bytes that end inside a batch, compressed data that does
	// not decompress.
	ErrCorruptMessage = errors.New("corrupt message")

	// ErrInvalidRecord is Kafka's INVALID_RECORD (InvalidRecordException):
	// a keyless record on a compacted topic, a control batch from a client,
	// a non-zero base offset from a client, a producer id without a sequence,
	// more than one batch in a produce request's records.
	ErrInvalidRecord = errors.New("invalid record")

	// ErrInvalidTimestamp is Kafka's INVALID_TIMESTAMP: a CreateTime record
	// outside message.timestamp.before.max.ms / after.max.ms of the broker
	// clock, or a producer that set the LogAppendTime attribute.
	ErrInvalidTimestamp = errors.New("invalid timestamp")

	// ErrMessageTooLarge is Kafka's MESSAGE_TOO_LARGE
	// (RecordTooLargeException): a batch larger than max.message.bytes.
	ErrMessageTooLarge = errors.New("record batch larger than max.message.bytes")

	// ErrUnsupportedCompression is Kafka's UNSUPPORTED_COMPRESSION_TYPE: the
	// attributes name a codec id 5..7 that Kafka does not define.
	ErrUnsupportedCompression = errors.New("unsupported compression type")

	// ErrUnsupportedMagic means a batch of magic 0 or 1. Kafka 4.0 takes only
	// magic v2 on produce: ProduceRequest.validateRecords throws
	// InvalidRecordException ("Produce requests with version N are only
	// allowed to contain record batches with magic version 2"), so the code
	// is INVALID_RECORD (87), not UNSUPPORTED_VERSION (35, which Kafka 4.0
	// answers for the removed produce versions 0-2 themselves) and not
	// CORRUPT_MESSAGE (which Kafka answers for a magic byte outside 0..2,
	// ByteBufferLogInputStream's "Invalid magic found in record").
	ErrUnsupportedMagic = errors.New("unsupported record batch magic")

	// ErrShortBatch means the bytes end before the batch its header
	// announces. It is a kind of ErrCorruptMessage; the log layer tests for it
	// to find a torn write at a segment's tail.
	ErrShortBatch = &subError{msg: "record batch truncated", parent: ErrCorruptMessage}
)

// subError is a sentinel that also matches a broader sentinel with errors.Is,
// as a Java exception subclass matches its superclass.
type subError struct {
	msg    string
	parent error
}

func (e *subError) Error() string        { return e.msg }
func (e *subError) Is(target error) bool { return target == e.parent }

// KafkaErrorCode maps an error of this package, however wrapped, to the Kafka
// error code a produce response carries. nil maps to NONE (0); an error this
// package does not know maps to UNKNOWN_SERVER_ERROR.
func KafkaErrorCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	// Order matters: a malformed record wraps both ErrInvalidRecord and
	// ErrCorruptMessage and must answer INVALID_RECORD, as Kafka does.
	case errors.Is(err, ErrUnsupportedMagic), errors.Is(err, ErrInvalidRecord):
		return kerr.InvalidRecord.Code
	case errors.Is(err, ErrUnsupportedCompression):
		return kerr.UnsupportedCompressionType.Code
	case errors.Is(err, ErrMessageTooLarge):
		return kerr.MessageTooLarge.Code
	case errors.Is(err, ErrInvalidTimestamp):
		return kerr.InvalidTimestamp.Code
	case errors.Is(err, ErrCorruptMessage):
		return kerr.CorruptMessage.Code
	default:
		return kerr.UnknownServerError.Code
	}
}
