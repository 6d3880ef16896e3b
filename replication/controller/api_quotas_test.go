package controller

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/quota"
	"github.com/kbroker/kbroker/security/principal"
)

func alterQuotas(h *ctlHarness, validateOnly bool, entries ...kmsg.AlterClientQuotasRequestEntry) *kmsg.AlterClientQuotasResponse {
	h.t.Helper()
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.Version, req.Entries, req.ValidateOnly = 1, entries, validateOnly
	return h.do(req).(*kmsg.AlterClientQuotasResponse)
}

func quotaEntry(typ string, name *string, key string, value float64, remove bool) kmsg.AlterClientQuotasRequestEntry {
	e := kmsg.NewAlterClientQuotasRequestEntry()
	ec := kmsg.NewAlterClientQuotasRequestEntryEntity()
	ec.Type, ec.Name = typ, name
	e.Entity = append(e.Entity, ec)
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Value, op.Remove = key, value, remove
	e.Ops = append(e.Ops, op)
	return e
}

func TestAlterClientQuotasCommitsRecords(t *testing.T) {
	h := newCtlHarness(t)
	resp := alterQuotas(h, true, quotaEntry(quota.TypeUser, ptr("alice"), quota.ProducerByteRate, 1<<20, false))
	if resp.Entries[0].ErrorCode != 0 || h.img().ClientQuotas != nil {
		t.Fatalf("validate only: %+v, quotas %v", resp.Entries, h.img().ClientQuotas)
	}
	resp = alterQuotas(h, false,
		quotaEntry(quota.TypeUser, ptr("alice"), quota.ProducerByteRate, 1<<20, false),
		quotaEntry(quota.TypeClientID, nil, quota.ConsumerByteRate, 2048, false),
		quotaEntry(quota.TypeUser, ptr("bob"), "nonsense", 1, false))
	if resp.Entries[0].ErrorCode != 0 || resp.Entries[1].ErrorCode != 0 || resp.Entries[2].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("entries %+v", resp.Entries)
	}
	want := quota.Quotas{
		{User: quota.Named("alice")}:    {quota.ProducerByteRate: 1 << 20},
		{ClientID: quota.DefaultName()}: {quota.ConsumerByteRate: 2048},
	}
	if got := h.img().ClientQuotas; !reflect.DeepEqual(got, want) {
		t.Fatalf("quotas %v, want %v", got, want)
	}
	alterQuotas(h, false, quotaEntry(quota.TypeUser, ptr("alice"), quota.ProducerByteRate, 0, true))
	if _, ok := h.img().ClientQuotas[quota.Entity{User: quota.Named("alice")}]; ok {
		t.Fatal("removed quota still there")
	}
}

func TestClientQuotaRecordsValidatedAndSnapshotted(t *testing.T) {
	tf := newTestFSM(t)
	tf.apply(&initClusterRecord{ClusterID: "c"})
	bad := []*clientQuotaRecord{
		{Entity: []quotaEntityData{{Type: "group", Name: ptr("x")}}, Key: quota.ProducerByteRate, Value: 1},
		{Entity: []quotaEntityData{{Type: quota.TypeUser, Name: ptr("x")}}, Key: quota.ProducerByteRate, Value: -1},
		{Entity: []quotaEntityData{{Type: quota.TypeUser, Name: ptr("x")}}, Value: 1},
	}
	for _, r := range bad {
		if err := tf.tryApply(r); err == nil {
			t.Fatalf("record %+v applied", r)
		}
	}
	tf.apply(
		&clientQuotaRecord{Entity: []quotaEntityData{{Type: quota.TypeUser, Name: ptr("a")}, {Type: quota.TypeClientID}}, Key: quota.RequestPercentage, Value: 12.5},
		&clientQuotaRecord{Entity: []quotaEntityData{{Type: quota.TypeIP, Name: ptr("10.0.0.1")}}, Key: quota.ConnectionCreationRate, Value: 5},
	)
	want := tf.img()
	other := restoredCopy(t, tf)
	if !reflect.DeepEqual(want.ClientQuotas, other.img().ClientQuotas) || len(want.ClientQuotas) != 2 {
		t.Fatalf("restored quotas %v, want %v", other.img().ClientQuotas, want.ClientQuotas)
	}
}

// mutationHarness is a controller with mutation quotas measured on the
// harness clock, and alice limited to 2 partitions/s (a 22-token bucket).
func mutationHarness(t *testing.T) (*ctlHarness, context.Context) {
	h := newCtlHarness(t)
	h.c.mutations = quota.NewManager(quota.ControllerMutation, h.c.opts.ControllerQuotaWindow, h.clock.Now)
	h.tf.registerLive(1)
	alterQuotas(h, false, quotaEntry(quota.TypeUser, ptr("alice"), quota.ControllerMutationRate, 2, false))
	ctx := WithCaller(context.Background(), Caller{Principal: principal.User("alice"), ClientID: "admin"})
	return h, ctx
}

func createTopicsAs(t *testing.T, h *ctlHarness, ctx context.Context, version int16, partitions int32, names ...string) *kmsg.CreateTopicsResponse {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = version
	for _, n := range names {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = n, partitions, 1
		req.Topics = append(req.Topics, rt)
	}
	resp, err := h.c.handle(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.(*kmsg.CreateTopicsResponse)
}

// KIP-599 at CreateTopics v6+: the topic that empties the bucket passes,
// the next ones are refused with THROTTLING_QUOTA_EXCEEDED and the answer
// says how long to wait; the bucket refills at 2 partitions/s.
func TestCreateTopicsStrictMutationQuota(t *testing.T) {
	h, ctx := mutationHarness(t)
	resp := createTopicsAs(t, h, ctx, 7, 30, "big", "next")
	if resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("first topic: %+v", resp.Topics[0])
	}
	if got := resp.Topics[1]; got.ErrorCode != kerr.ThrottlingQuotaExceeded.Code || *got.ErrorMessage != "The throttling quota has been exceeded." {
		t.Fatalf("second topic: %v %v", kerr.ErrorForCode(got.ErrorCode), got.ErrorMessage)
	}
	if resp.ThrottleMillis != 4000 { // 8 tokens in debt at 2/s
		t.Fatalf("throttle %d, want 4000", resp.ThrottleMillis)
	}
	if h.img().Topics["next"] != nil || h.img().Topics["big"] == nil {
		t.Fatal("wrong topics created")
	}
	// Another client id of alice shares the user's bucket; bob has none.
	other := WithCaller(context.Background(), Caller{Principal: principal.User("alice"), ClientID: "other"})
	if got := createTopicsAs(t, h, other, 7, 1, "other").Topics[0].ErrorCode; got != kerr.ThrottlingQuotaExceeded.Code {
		t.Fatalf("alice's other client: %v", kerr.ErrorForCode(got))
	}
	bob := WithCaller(context.Background(), Caller{Principal: principal.User("bob"), ClientID: "admin"})
	if got := createTopicsAs(t, h, bob, 7, 50, "bobs"); got.Topics[0].ErrorCode != 0 || got.ThrottleMillis != 0 {
		t.Fatalf("bob: %+v", got)
	}
	// The broker's own requests carry no caller: never throttled.
	if got := createTopicsAs(t, h, context.Background(), 7, 50, "internal").Topics[0].ErrorCode; got != 0 {
		t.Fatalf("internal: %v", kerr.ErrorForCode(got))
	}
	h.clock.Advance(4 * time.Second)
	if got := createTopicsAs(t, h, ctx, 7, 1, "later").Topics[0].ErrorCode; got != 0 {
		t.Fatalf("after the refill: %v", kerr.ErrorForCode(got))
	}
}

// Before v6 the quota is permissive: the topics are created and the answer
// carries the throttle time.
func TestCreateTopicsPermissiveMutationQuota(t *testing.T) {
	h, ctx := mutationHarness(t)
	resp := createTopicsAs(t, h, ctx, 5, 15, "one", "two")
	if resp.Topics[0].ErrorCode != 0 || resp.Topics[1].ErrorCode != 0 {
		t.Fatalf("topics %+v", resp.Topics)
	}
	if resp.ThrottleMillis != 4000 { // 30 taken from 22
		t.Fatalf("throttle %d, want 4000", resp.ThrottleMillis)
	}
}

func TestDeleteTopicsAndCreatePartitionsMutationQuota(t *testing.T) {
	h, ctx := mutationHarness(t)
	for _, name := range []string{"a", "b"} {
		createTopicsAs(t, h, context.Background(), 7, 12, name)
	}
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.Version = 6
	del.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: ptr("a")}, {Topic: ptr("a")}, {Topic: ptr("b")}}
	resp, err := h.c.handle(ctx, del)
	if err != nil {
		t.Fatal(err)
	}
	dr := resp.(*kmsg.DeleteTopicsResponse)
	// a (12) leaves 10 tokens, a again is the same deletion, b (12) takes
	// the bucket to -2.
	if dr.Topics[0].ErrorCode != 0 || dr.Topics[1].ErrorCode != 0 || dr.Topics[2].ErrorCode != 0 || dr.ThrottleMillis != 0 {
		t.Fatalf("delete %+v", dr)
	}
	cp := kmsg.NewPtrCreatePartitionsRequest()
	cp.Version = 3
	createTopicsAs(t, h, context.Background(), 7, 1, "c")
	cp.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: "c", Count: 3}}
	resp, err = h.c.handle(ctx, cp)
	if err != nil {
		t.Fatal(err)
	}
	pr := resp.(*kmsg.CreatePartitionsResponse)
	if pr.Topics[0].ErrorCode != kerr.ThrottlingQuotaExceeded.Code || pr.ThrottleMillis != 1000 {
		t.Fatalf("create partitions %+v", pr)
	}
}
