package group

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A group id is of one type only: an id the share coordinator holds is
// not made a classic group by JoinGroup or a simple consumer's commit, nor
// a consumer group by ConsumerGroupHeartbeat (GROUP_ID_NOT_FOUND, as
// Kafka's getOrMaybeCreate*Group), and nothing is written for it. GroupType
// reports this coordinator's own groups for the share coordinator's check.
func TestOtherGroupTypeRefusesCreation(t *testing.T) {
	h := newHarness(t, func(o *Options) {
		o.OtherGroupType = func(id string) string {
			if id == "shared" {
				return "share"
			}
			return ""
		}
	})
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType = "shared", "consumer"
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 10000, 10000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{}}}
	if r := h.c.JoinGroup(ctxBG, Client{}, join); r.ErrorCode != codeGroupIDNotFound {
		t.Fatalf("JoinGroup: %d", r.ErrorCode)
	}
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch, hb.RebalanceTimeoutMillis = "shared", "m", 0, 10000
	hb.SubscribedTopicNames = []string{"t1"}
	hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if r := h.c.ConsumerGroupHeartbeat(ctxBG, Client{}, hb); r.ErrorCode != codeGroupIDNotFound {
		t.Fatalf("ConsumerGroupHeartbeat: %d", r.ErrorCode)
	}
	codes := h.commit("shared", "", -1, map[string]map[int32]int64{"t1": {0: 5}})
	if codes["t1/0"] != codeGroupIDNotFound {
		t.Fatalf("simple commit: %v", codes)
	}
	if recs := h.store("shared").snapshot(); len(recs) != 0 {
		t.Fatalf("records written for another type's group: %d", len(recs))
	}
	if got := h.c.GroupType("shared"); got != "" {
		t.Fatalf("GroupType(shared) = %q", got)
	}
	// Other ids are unaffected, and GroupType reports them.
	codes = h.commit("plain", "", -1, map[string]map[int32]int64{"t1": {0: 5}})
	if codes["t1/0"] != 0 {
		t.Fatalf("simple commit of another group: %v", codes)
	}
	if got := h.c.GroupType("plain"); got != "classic" {
		t.Fatalf("GroupType(plain) = %q", got)
	}
}
