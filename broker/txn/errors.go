package txn

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Error codes the coordinator answers with, named as in Kafka.
var (
	codeNone                         int16 = 0
	codeUnknownServerError                 = kerr.UnknownServerError.Code
	codeInvalidRequest                     = kerr.InvalidRequest.Code
	codeCoordinatorNotAvailable            = kerr.CoordinatorNotAvailable.Code
	codeCoordinatorLoadInProgress          = kerr.CoordinatorLoadInProgress.Code
	codeNotCoordinator                     = kerr.NotCoordinator.Code
	codeInvalidProducerEpoch               = kerr.InvalidProducerEpoch.Code
	codeInvalidTxnState                    = kerr.InvalidTxnState.Code
	codeInvalidProducerIDMapping           = kerr.InvalidProducerIDMapping.Code
	codeInvalidTransactionTimeout          = kerr.InvalidTransactionTimeout.Code
	codeConcurrentTransactions             = kerr.ConcurrentTransactions.Code
	codeTransactionCoordinatorFenced       = kerr.TransactionCoordinatorFenced.Code
	codeProducerFenced                     = kerr.ProducerFenced.Code
	codeTransactionalIDNotFound            = kerr.TransactionalIDNotFound.Code
	codeTransactionAbortable               = kerr.TransactionAbortable.Code
	codeOperationNotAttempted              = kerr.OperationNotAttempted.Code
	codeUnknownTopicOrPartition            = kerr.UnknownTopicOrPartition.Code
	codeInvalidRegularExpression           = kerr.InvalidRegularExpression.Code
	codeNotEnoughReplicas                  = kerr.NotEnoughReplicas.Code
	codeNotEnoughReplicasAfter             = kerr.NotEnoughReplicasAfterAppend.Code
	codeRequestTimedOut                    = kerr.RequestTimedOut.Code
	codeNotLeaderOrFollower                = kerr.NotLeaderForPartition.Code
	codeKafkaStorageError                  = kerr.KafkaStorageError.Code
	codeMessageTooLarge                    = kerr.MessageTooLarge.Code
	codeRecordListTooLarge                 = kerr.RecordListTooLarge.Code
	codeFencedLeaderEpoch                  = kerr.FencedLeaderEpoch.Code
	codeCorruptMessage                     = kerr.CorruptMessage.Code
	codeInvalidRequiredAcks                = kerr.InvalidRequiredAcks.Code
	codeUnsupportedForMessageFormat        = kerr.UnsupportedForMessageFormat.Code
	codeUnsupportedVersion                 = kerr.UnsupportedVersion.Code
)

// appendErrors maps the error of a failed StateLog.Append to the one the
// client gets, as Kafka's TransactionStateManager.appendTransactionToLog
// does: a partition that is unavailable becomes COORDINATOR_NOT_AVAILABLE
// (retry here), one this broker lost becomes NOT_COORDINATOR (look the
// coordinator up again). Codes not listed pass through.
var appendErrors = map[int16]int16{
	codeUnknownTopicOrPartition: codeCoordinatorNotAvailable,
	codeNotEnoughReplicas:       codeCoordinatorNotAvailable,
	codeNotEnoughReplicasAfter:  codeCoordinatorNotAvailable,
	codeRequestTimedOut:         codeCoordinatorNotAvailable,
	codeNotLeaderOrFollower:     codeNotCoordinator,
	codeKafkaStorageError:       codeNotCoordinator,
	codeFencedLeaderEpoch:       codeNotCoordinator,
	codeMessageTooLarge:         codeUnknownServerError,
	codeRecordListTooLarge:      codeUnknownServerError,
}

// appendErrorCode is the client's error for a failed append; resigned: the
// partition was unloaded meanwhile.
func appendErrorCode(err error, resigned bool) int16 {
	var ke *kerr.Error
	switch {
	case resigned || errors.Is(err, context.Canceled):
		return codeNotCoordinator
	case !errors.As(err, &ke):
		return codeCoordinatorNotAvailable // a timeout or an I/O error
	}
	if code, ok := appendErrors[ke.Code]; ok {
		return code
	}
	return ke.Code
}

// fencedForVersion turns PRODUCER_FENCED into INVALID_PRODUCER_EPOCH for
// request versions older than KIP-588's (oldest that knows PRODUCER_FENCED
// is firstFenced), as KafkaApis does: older clients handle only the latter.
func fencedForVersion(code, version, firstFenced int16) int16 {
	if code == codeProducerFenced && version < firstFenced {
		return codeInvalidProducerEpoch
	}
	return code
}
