package controller

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/quota"
)

// AlterClientQuotas (49), as KRaft's ClientQuotaControlManager serves it:
// quota.PlanAlter validates each entity and decides the changes, which are
// committed as one atomic batch (none with ValidateOnly). The broker has
// authorized the caller (CLUSTER ALTER_CONFIGS) before forwarding;
// DescribeClientQuotas is answered by brokers from their image.
func (c *controller) alterClientQuotas(ctx context.Context, req *kmsg.AlterClientQuotasRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	c.mu.Lock()
	defer c.mu.Unlock()
	plan := quota.PlanAlter(req, c.fsm.image().ClientQuotas)
	resp.Entries = plan.Entries
	if req.ValidateOnly || len(plan.Changes) == 0 {
		return resp, nil
	}
	recs := make([]record, len(plan.Changes))
	for i, ch := range plan.Changes {
		recs[i] = newClientQuotaRecord(ch)
	}
	if _, err := c.commit(ctx, recs...); err != nil {
		return nil, err
	}
	c.log.Info("client quotas altered", "changes", len(recs))
	return resp, nil
}
