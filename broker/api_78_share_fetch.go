package broker

// ShareFetch (key 78), v0-v2: KIP-932 share consumption. A member's
// requests to this broker form a share session (epoch 0 opens it with the
// request's partitions, n continues it adding Topics and dropping
// ForgottenTopicsData, -1 closes it and releases the member's records);
// piggy-backed acknowledgements (ACCEPT, RELEASE, REJECT, GAP; RENEW in v2
// with IsRenewAck, which must then carry no fetch limits and fetches
// nothing) are applied first, each partition answering in
// AcknowledgeErrorCode once its state is written; while that write is in
// flight (the response waits for it), records of the
// session's partitions this broker leads are acquired for the member:
// Available ones from the share-partition's next fetch offset, below the
// high watermark (the last stable offset with share.isolation.level
// read_committed), at most MaxRecords (v1+; whole batches in v2's
// BATCH_OPTIMIZED mode, split by BatchSize), each locked for
// share.record.lock.duration.ms (AcquisitionLockTimeoutMillis, v1+). With
// nothing to acquire the request waits up to MaxWaitMillis, until MinBytes
// were acquired, woken by high watermark moves and records released or
// unlocked (share_fetch.go). Partitions led elsewhere get
// NOT_LEADER_OR_FOLLOWER with CurrentLeader and NodeEndpoints.
//
// Errors as Kafka: an empty or over-long member id INVALID_REQUEST; session
// errors (SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH,
// SHARE_SESSION_LIMIT_REACHED, INVALID_REQUEST for acknowledgements on an
// opening fetch) top-level; acknowledgements of records not acquired by
// the member INVALID_RECORD_STATE, malformed batches INVALID_REQUEST, the
// partition's state unchanged. Authorization: READ on the group
// (GROUP_AUTHORIZATION_FAILED), READ on each topic
// (TOPIC_AUTHORIZATION_FAILED on its partitions).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/security/acl"
)

// maxShareMemberIDLen is the longest member id a share request may carry
// (a UUID's 36 characters, as Kafka checks).
const maxShareMemberIDLen = 36

func (b *Broker) handleShareFetch(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.ShareFetchRequest)
	if code := b.shareRequestInvalid(req, r.GroupID, r.MemberID); code != 0 {
		return refuse(req, code)
	}
	if r.Version >= 2 && r.IsRenewAck && !renewOnly(r) {
		return refuse(req, kerr.InvalidRequest.Code)
	}
	var release func()
	return protocol.Response{
		Later: func(ctx context.Context) kmsg.Response {
			var resp kmsg.Response
			resp, release = b.shares.fetch(ctx, req, r)
			return resp
		},
		Done: func() {
			if release != nil {
				release()
			}
		},
	}
}

// shareRequestInvalid is the first check of ShareFetch and
// ShareAcknowledge: READ on the group, then a member id of 1 to 36
// characters.
func (b *Broker) shareRequestInvalid(req *protocol.Request, group, member *string) int16 {
	if code := b.groupAllowed(req, acl.OpRead, derefString(group)); code != 0 {
		return code
	}
	if m := derefString(member); m == "" || len(m) > maxShareMemberIDLen || derefString(group) == "" {
		return kerr.InvalidRequest.Code
	}
	return 0
}

// renewOnly checks a v2 ShareFetch with IsRenewAck (KIP-1222): no fetch
// limits and no partition without acknowledgements, since it fetches
// nothing.
func renewOnly(r *kmsg.ShareFetchRequest) bool {
	if r.MaxBytes != 0 || r.MinBytes != 0 || r.MaxRecords != 0 || r.MaxWaitMillis != 0 {
		return false
	}
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			if len(p.AcknowledgementBatches) == 0 {
				return false
			}
		}
	}
	return true
}
