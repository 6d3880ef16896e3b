package sharestate

import (
	"encoding/base64"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Error codes the coordinator answers with, named as in Kafka.
var (
	codeUnknownServerError        = kerr.UnknownServerError.Code
	codeCoordinatorNotAvailable   = kerr.CoordinatorNotAvailable.Code
	codeCoordinatorLoadInProgress = kerr.CoordinatorLoadInProgress.Code
	codeNotCoordinator            = kerr.NotCoordinator.Code
	codeInvalidGroupID            = kerr.InvalidGroupID.Code
	codeInvalidRequest            = kerr.InvalidRequest.Code
	codeUnknownTopicOrPartition   = kerr.UnknownTopicOrPartition.Code
	codeFencedLeaderEpoch         = kerr.FencedLeaderEpoch.Code
	codeFencedStateEpoch          = kerr.FencedStateEpoch.Code
)

var (
	errUnknownRecordType = errors.New("sharestate: unknown record type")
	errClosed            = errors.New("sharestate: coordinator closed")
)

// TopicIDString is Kafka's Uuid.toString: URL-safe base64 without padding.
func TopicIDString(id [16]byte) string {
	return base64.RawURLEncoding.EncodeToString(id[:])
}
