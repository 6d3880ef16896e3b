package group

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Error codes used by the coordinator, named as in Kafka.
var (
	codeUnknownServerError        = kerr.UnknownServerError.Code
	codeCoordinatorNotAvailable   = kerr.CoordinatorNotAvailable.Code
	codeCoordinatorLoadInProgress = kerr.CoordinatorLoadInProgress.Code
	codeNotCoordinator            = kerr.NotCoordinator.Code
	codeIllegalGeneration         = kerr.IllegalGeneration.Code
	codeInconsistentGroupProtocol = kerr.InconsistentGroupProtocol.Code
	codeInvalidGroupID            = kerr.InvalidGroupID.Code
	codeUnknownMemberID           = kerr.UnknownMemberID.Code
	codeInvalidSessionTimeout     = kerr.InvalidSessionTimeout.Code
	codeRebalanceInProgress       = kerr.RebalanceInProgress.Code
	codeOffsetMetadataTooLarge    = kerr.OffsetMetadataTooLarge.Code
	codeUnknownTopicOrPartition   = kerr.UnknownTopicOrPartition.Code
	codeNonEmptyGroup             = kerr.NonEmptyGroup.Code
	codeGroupIDNotFound           = kerr.GroupIDNotFound.Code
	codeMemberIDRequired          = kerr.MemberIDRequired.Code
	codeGroupMaxSizeReached       = kerr.GroupMaxSizeReached.Code
	codeFencedInstanceID          = kerr.FencedInstanceID.Code
	codeGroupSubscribedToTopic    = kerr.GroupSubscribedToTopic.Code
	codeUnsupportedVersion        = kerr.UnsupportedVersion.Code
	codeInvalidRequest            = kerr.InvalidRequest.Code
	codeFencedMemberEpoch         = kerr.FencedMemberEpoch.Code
	codeUnreleasedInstanceID      = kerr.UnreleasedInstanceID.Code
	codeUnsupportedAssignor       = kerr.UnsupportedAssignor.Code
	codeStaleMemberEpoch          = kerr.StaleMemberEpoch.Code
	codeInvalidRegularExpression  = kerr.InvalidRegularExpression.Code
	codeRequestTimedOut           = kerr.RequestTimedOut.Code
	codeNotEnoughReplicas         = kerr.NotEnoughReplicas.Code
	codeNotEnoughReplicasAfter    = kerr.NotEnoughReplicasAfterAppend.Code
	codeNotLeaderOrFollower       = kerr.NotLeaderForPartition.Code
	codeKafkaStorageError         = kerr.KafkaStorageError.Code
	codeMessageTooLarge           = kerr.MessageTooLarge.Code
	codeRecordListTooLarge        = kerr.RecordListTooLarge.Code
	codeInvalidFetchSize          = kerr.InvalidFetchSize.Code
	codeInvalidCommitOffsetSize   = kerr.InvalidCommitOffsetSize.Code
	codeFencedLeaderEpoch         = kerr.FencedLeaderEpoch.Code
	codeUnstableOffsetCommit      = kerr.UnstableOffsetCommit.Code
)

// appendErrorCode maps a failed Store.Append to the error the client gets,
// as Kafka's GroupCoordinatorService.handleOperationException does: a lost
// or unavailable partition becomes NOT_COORDINATOR or
// COORDINATOR_NOT_AVAILABLE so the client looks the coordinator up again.
func appendErrorCode(err error, resigned bool) int16 {
	if resigned || errors.Is(err, context.Canceled) {
		return codeNotCoordinator
	}
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return codeCoordinatorNotAvailable // a timeout or an I/O error
	}
	switch ke.Code {
	case codeUnknownTopicOrPartition, codeNotEnoughReplicas, codeNotEnoughReplicasAfter, codeRequestTimedOut:
		return codeCoordinatorNotAvailable
	case codeNotLeaderOrFollower, codeKafkaStorageError, codeFencedLeaderEpoch, codeNotCoordinator:
		return codeNotCoordinator
	case codeMessageTooLarge, codeRecordListTooLarge, codeInvalidFetchSize:
		return codeUnknownServerError
	}
	return ke.Code
}
