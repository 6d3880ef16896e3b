package broker

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/record"
	"github.com/kbroker/kbroker/storage"
)

// errorCode maps an error from the layers below to the Kafka error code a
// client gets. Kafka errors (kerr) pass through; storage and record errors map as Kafka
// maps its own exceptions; anything else is UNKNOWN_SERVER_ERROR.
func errorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	switch {
	case errors.Is(err, storage.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange.Code
	case errors.Is(err, storage.ErrOutOfOrderSequence):
		return kerr.OutOfOrderSequenceNumber.Code
	case errors.Is(err, storage.ErrInvalidProducerEpoch):
		return kerr.InvalidProducerEpoch.Code
	case errors.Is(err, storage.ErrInvalidTxnState):
		return kerr.InvalidTxnState.Code
	case errors.Is(err, storage.ErrTransactionCoordinatorFenced):
		return kerr.TransactionCoordinatorFenced.Code
	case errors.Is(err, record.ErrCorruptBatch), errors.Is(err, record.ErrTruncatedBatch), errors.Is(err, record.ErrZeroedBatch):
		return kerr.CorruptMessage.Code
	case errors.Is(err, record.ErrInvalidRecord):
		return kerr.InvalidRecord.Code
	case errors.Is(err, record.ErrUnsupportedMagic):
		return kerr.UnsupportedForMessageFormat.Code
	case errors.Is(err, storage.ErrRecordBatchTooLarge):
		return kerr.RecordListTooLarge.Code
	case errors.Is(err, storage.ErrDiskFull), errors.Is(err, storage.ErrLogFailed), errors.Is(err, storage.ErrLogClosed):
		return kerr.KafkaStorageError.Code
	}
	return kerr.UnknownServerError.Code
}
