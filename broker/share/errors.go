package share

import "github.com/twmb/franz-go/pkg/kerr"

var (
	codeCoordinatorNotAvailable = kerr.CoordinatorNotAvailable.Code
	codeGroupIDNotFound         = kerr.GroupIDNotFound.Code
	codeNonEmptyGroup           = kerr.NonEmptyGroup.Code
	codeUnknownTopicOrPartition = kerr.UnknownTopicOrPartition.Code
	codeInvalidGroupID          = kerr.InvalidGroupID.Code
)
