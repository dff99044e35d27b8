package handlers

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/internal/log"
	"gregor/internal/record"
)

// errorCode maps a domain error to its Kafka error code: the one place where
// Go errors become wire codes.
func errorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	if errors.Is(err, log.ErrOffsetOutOfRange) {
		return kerr.OffsetOutOfRange.Code
	}
	if errors.Is(err, log.ErrKafkaStorage) {
		return kerr.KafkaStorageError.Code
	}
	switch {
	case errors.Is(err, log.ErrOutOfOrderSequence):
		return kerr.OutOfOrderSequenceNumber.Code
	case errors.Is(err, log.ErrInvalidProducerEpoch):
		return kerr.InvalidProducerEpoch.Code
	case errors.Is(err, log.ErrInvalidTxnState):
		return kerr.InvalidTxnState.Code
	}
	if code := record.KafkaErrorCode(err); code != kerr.UnknownServerError.Code {
		return code
	}
	return kerr.UnknownServerError.Code
}

// errorMessage is the message sent beside a code where the protocol has one;
// nil for success.
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}
