package controller

import (
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/security/acl"
	"github.com/kbroker/kbroker/security/sasl/scram"
)

// CreateAcls (30), DeleteAcls (31) and AlterUserScramCredentials (51), as
// KRaft's AclControlManager and ScramControlManager serve them: each
// request is one atomic batch of records. DescribeAcls and
// DescribeUserScramCredentials are answered by brokers from their image.
// The broker has authorized the caller (CLUSTER ALTER) before forwarding.

// createAcls validates each binding (INVALID_REQUEST with Kafka's message
// per binding), skips the ones that exist already (Kafka answers them
// as created) and gives each new one an id.
func (c *controller) createAcls(ctx context.Context, req *kmsg.CreateACLsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	c.mu.Lock()
	defer c.mu.Unlock()
	img := c.fsm.image()
	existing := map[acl.Binding]bool{}
	for _, b := range img.acls {
		existing[b] = true
	}
	var recs []record
	for i := range req.Creations {
		res := kmsg.NewCreateACLsResponseResult()
		b := acl.BindingFromCreation(&req.Creations[i])
		switch e := b.Validate(req.Version); {
		case e != nil:
			res.ErrorCode, res.ErrorMessage = e.Code, kmsg.StringPtr(e.Message)
		case !existing[b]:
			existing[b] = true
			recs = append(recs, newACLRecord(c.newACLID(img), b))
		}
		resp.Results = append(resp.Results, res)
	}
	if _, err := c.commit(ctx, recs...); err != nil {
		return nil, err
	}
	return resp, nil
}

// newACLID returns a random id no ACL of img has.
func (c *controller) newACLID(img *Image) uuid {
	for {
		id := newUUID()
		if _, taken := img.acls[id]; !taken {
			return id
		}
	}
}

// deleteAcls removes, for each valid filter, every ACL it matches; an
// ACL two filters match is removed once and reported by both, as Kafka.
func (c *controller) deleteAcls(ctx context.Context, req *kmsg.DeleteACLsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	c.mu.Lock()
	defer c.mu.Unlock()
	img := c.fsm.image()
	ids := slices.SortedFunc(maps.Keys(img.acls), compareUUID)
	removed := map[uuid]bool{}
	var recs []record
	for i := range req.Filters {
		res := kmsg.NewDeleteACLsResponseResult()
		f := acl.FilterFromDeletion(&req.Filters[i])
		if e := f.Validate(); e != nil {
			res.ErrorCode, res.ErrorMessage = e.Code, kmsg.StringPtr(e.Message)
			resp.Results = append(resp.Results, res)
			continue
		}
		var matched []acl.Binding
		for _, id := range ids {
			if b := img.acls[id]; f.Matches(b) {
				matched = append(matched, b)
				if !removed[id] {
					removed[id] = true
					recs = append(recs, &removeAccessControlEntryRecord{ID: id})
				}
			}
		}
		res.MatchingACLs = acl.MatchingACLs(matched)
		resp.Results = append(resp.Results, res)
	}
	if _, err := c.commit(ctx, recs...); err != nil {
		return nil, err
	}
	return resp, nil
}

// alterUserScramCredentials is ScramControlManager.alterCredentials:
// scram.PlanAlter decides, its upserts and deletions are one batch.
func (c *controller) alterUserScramCredentials(ctx context.Context, req *kmsg.AlterUserSCRAMCredentialsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	c.mu.Lock()
	defer c.mu.Unlock()
	img := c.fsm.image()
	plan := scram.PlanAlter(req, func(user string, m scram.Mechanism) bool {
		_, ok := img.ScramCredentials[ScramKey{User: user, Mechanism: m}]
		return ok
	})
	recs := scramRecords(plan.Upserts, plan.Deletes)
	if _, err := c.commit(ctx, recs...); err != nil {
		return nil, err
	}
	resp.Results = plan.Results
	return resp, nil
}

func scramRecords(upserts []scram.Upsert, deletes []scram.Delete) []record {
	var recs []record
	for _, d := range deletes {
		recs = append(recs, &removeUserScramCredentialRecord{Name: d.User, Mechanism: int8(d.Mechanism)})
	}
	for _, u := range upserts {
		recs = append(recs, newScramRecord(u))
	}
	return recs
}
