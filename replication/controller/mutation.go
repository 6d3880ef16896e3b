package controller

import (
	"context"

	"github.com/kbroker/kbroker/quota"
)

// Controller mutation quotas (KIP-599), as Kafka's ControllerApis applies
// them: each topic created or deleted, and each CreatePartitions, takes
// its partition count from the caller's token bucket
// (controller_mutation_rate). A request at a version that knows
// THROTTLING_QUOTA_EXCEEDED is refused topic by topic once the bucket is
// empty; older versions are served and told to wait. Either way the
// answer's throttle time says how long the client waits, and the broker
// that forwarded it mutes the client's connection for that long. The
// buckets live on this node (a new active controller starts with full
// buckets), as Kafka's ControllerMutationQuotaManager's sensors do.

// mutationQuota is the quota of the request ctx carries the caller of:
// nil (unbounded) for the broker's own requests or when no
// controller_mutation_rate applies.
func (c *controller) mutationQuota(ctx context.Context, version, strictSince int16) *quota.MutationQuota {
	caller, ok := callerOf(ctx)
	if !ok || c.mutations == nil {
		return nil
	}
	c.mutations.SetQuotas(c.fsm.image().ClientQuotas)
	return c.mutations.NewMutationQuota(caller.Principal.Name, caller.ClientID, version >= strictSince)
}

// recordMutation takes partitions from q: nil, or the error refusing the
// topic.
func recordMutation(q *quota.MutationQuota, partitions int) *apiError {
	if e := q.Record(float64(partitions)); e != nil {
		return &apiError{code: e.Code, msg: e.Message}
	}
	return nil
}

// maxThrottle is the longer of a response's throttle and the quota's.
func maxThrottle(ms int32, q *quota.MutationQuota) int32 {
	return max(ms, int32(q.ThrottleTime()))
}
