package controller

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// KIP-631: a broker registers fenced, with its registration's offset as
// epoch, and is unfenced once it asks and has applied that offset.
func TestRegistrationAndUnfencing(t *testing.T) {
	h := newCtlHarness(t)
	r := h.register(1)
	if r.ErrorCode != 0 || r.BrokerEpoch <= 0 {
		t.Fatalf("registration %+v", r)
	}
	b := h.img().Broker(1)
	if b.Epoch != r.BrokerEpoch || !b.Fenced {
		t.Fatalf("broker %+v", b)
	}
	// A retry of the same incarnation gets the same epoch and writes nothing.
	idx := h.img().AppliedIndex
	if again := h.registerAs(1, h.inc[1]); again.BrokerEpoch != r.BrokerEpoch || h.img().AppliedIndex != idx {
		t.Fatalf("re-registration %+v (applied %d -> %d)", again, idx, h.img().AppliedIndex)
	}

	// Not caught up: stays fenced.
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.BrokerID, req.BrokerEpoch, req.CurrentMetadataOffset = 1, r.BrokerEpoch, r.BrokerEpoch-1
	hb := h.do(req).(*kmsg.BrokerHeartbeatResponse)
	if !hb.IsFenced || hb.IsCaughtUp {
		t.Fatalf("behind: %+v", hb)
	}
	// Caught up but asking to stay fenced (logs not recovered yet).
	hb = h.heartbeat(1, r.BrokerEpoch, true, false)
	if !hb.IsFenced || !hb.IsCaughtUp || h.img().Broker(1).Fenced != true {
		t.Fatalf("want fence: %+v", hb)
	}
	hb = h.heartbeat(1, r.BrokerEpoch, false, false)
	if hb.IsFenced || !hb.IsCaughtUp || h.img().Broker(1).Fenced {
		t.Fatalf("unfence: %+v", hb)
	}
	// Wrong epoch.
	if hb := h.heartbeat(1, r.BrokerEpoch+1, false, false); hb.ErrorCode != kerr.StaleBrokerEpoch.Code {
		t.Fatalf("stale epoch: %+v", hb)
	}
	if hb := h.heartbeat(9, 1, false, false); hb.ErrorCode != kerr.StaleBrokerEpoch.Code {
		t.Fatalf("unknown broker: %+v", hb)
	}
	// A new incarnation while the old one heartbeats is a duplicate.
	if dup := h.register(1); dup.ErrorCode != kerr.DuplicateBrokerRegistration.Code {
		t.Fatalf("duplicate: %+v", dup)
	}
	// A different cluster id is refused.
	req2 := kmsg.NewPtrBrokerRegistrationRequest()
	req2.BrokerID, req2.ClusterID = 2, "other"
	if resp := h.do(req2).(*kmsg.BrokerRegistrationResponse); resp.ErrorCode != kerr.InconsistentClusterID.Code {
		t.Fatalf("cluster id: %+v", resp)
	}
}

// A broker that stops heartbeating is fenced after broker.session.timeout.ms
// and loses its ISR memberships and leaderships; a new incarnation may then
// register at once.
func TestSessionExpiryFences(t *testing.T) {
	h := newCtlHarness(t)
	h.live(1, 2)
	h.manualTopic("t", []int32{1, 2}, []int32{2, 1})
	h.manualTopic("u", []int32{1})
	h.clock.Advance(6 * time.Second)
	h.heartbeat(2, h.epoch(2), false, false)
	h.clock.Advance(5 * time.Second) // 1 is 11s silent, 2 only 5s
	h.c.fenceExpired(h.ctx)
	img := h.img()
	if !img.Broker(1).Fenced || img.Broker(2).Fenced {
		t.Fatalf("fenced: 1=%v 2=%v", img.Broker(1).Fenced, img.Broker(2).Fenced)
	}
	if p := img.Partition("t", 0); p.Leader != 2 || !slices.Equal(p.ISR, []int32{2}) || p.LeaderEpoch != 1 {
		t.Fatalf("t-0 %+v", p)
	}
	if p := img.Partition("t", 1); p.Leader != 2 || !slices.Equal(p.ISR, []int32{2}) || p.LeaderEpoch != 0 {
		t.Fatalf("t-1 %+v", p)
	}
	// u-0 lost its only ISR member: with eligible leader replicas (KIP-966)
	// the ISR empties and the fenced member, whose data is whole, becomes
	// its ELR and last known leader.
	if p := img.Partition("u", 0); p.Leader != NoLeader || len(p.ISR) != 0 ||
		!slices.Equal(p.ELR, []int32{1}) || !slices.Equal(p.LastKnownELR, []int32{1}) {
		t.Fatalf("u-0 %+v", p)
	}
	// The old incarnation's heartbeats now say fenced.
	if hb := h.heartbeat(1, h.epoch(1), false, false); hb.IsFenced != false {
		// It caught up and asks to unfence: it is unfenced again, and takes
		// back the partition only it can lead.
		t.Fatalf("heartbeat after expiry %+v", hb)
	}
	if p := h.img().Partition("u", 0); p.Leader != 1 || p.LeaderEpoch != 2 || !slices.Equal(p.ISR, []int32{1}) ||
		len(p.ELR) != 0 || len(p.LastKnownELR) != 0 {
		t.Fatalf("u-0 after unfence %+v", p)
	}

	// A restarted broker (new incarnation) whose old session expired
	// registers fenced; its old leaderships move.
	h.clock.Advance(11 * time.Second)
	h.heartbeat(2, h.epoch(2), false, false)
	r := h.register(1)
	if r.ErrorCode != 0 {
		t.Fatalf("re-registration after expiry: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if b := h.img().Broker(1); !b.Fenced || b.Epoch != r.BrokerEpoch {
		t.Fatalf("new incarnation %+v", b)
	}
}

// A fenced (cleanly shut down) broker's next incarnation is not a duplicate.
func TestReRegisterAfterShutdown(t *testing.T) {
	h := newCtlHarness(t)
	h.live(1)
	if hb := h.heartbeat(1, h.epoch(1), false, true); !hb.ShouldShutdown || !hb.IsFenced {
		t.Fatalf("shutdown of a broker leading nothing: %+v", hb)
	}
	if r := h.register(1); r.ErrorCode != 0 {
		t.Fatalf("restart after clean shutdown: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}

// Controlled shutdown (KIP-631): leaderships move to other live ISR members,
// the broker leaves the ISRs, and ShouldShutDown comes once it leads nothing
// and every live broker has applied that.
func TestControlledShutdown(t *testing.T) {
	h := newCtlHarness(t)
	h.live(1, 2, 3)
	h.manualTopic("t", []int32{1, 2, 3})
	h.manualTopic("u", []int32{1, 3}, []int32{2, 1})
	h.manualTopic("v", []int32{1})
	hb := h.heartbeat(1, h.epoch(1), false, true)
	if hb.ShouldShutdown || hb.IsFenced {
		t.Fatalf("first shutdown heartbeat %+v", hb)
	}
	img := h.img()
	if !img.Broker(1).InControlledShutdown {
		t.Fatal("not in controlled shutdown")
	}
	// min.insync.replicas is 1: only v-0, whose ISR empties, keeps an ELR.
	want := []struct {
		topic    string
		idx      int32
		leader   int32
		isr, elr []int32
	}{{"t", 0, 2, []int32{2, 3}, nil}, {"u", 0, 3, []int32{3}, nil}, {"u", 1, 2, []int32{2}, nil}, {"v", 0, NoLeader, []int32{}, []int32{1}}}
	for _, w := range want {
		p := img.Partition(w.topic, w.idx)
		if p.Leader != w.leader || !slices.Equal(p.ISR, w.isr) || !slices.Equal(p.ELR, w.elr) {
			t.Fatalf("%s-%d: leader %d isr %v elr %v, want %d %v %v", w.topic, w.idx, p.Leader, p.ISR, p.ELR, w.leader, w.isr, w.elr)
		}
	}
	if img.leads(1) {
		t.Fatal("still leads")
	}
	// Brokers 2 and 3 have not reported the shutdown offset yet.
	if hb := h.heartbeat(1, h.epoch(1), false, true); hb.ShouldShutdown {
		t.Fatalf("shutdown granted before the others caught up: %+v", hb)
	}
	h.heartbeat(2, h.epoch(2), false, false)
	h.heartbeat(3, h.epoch(3), false, false)
	hb = h.heartbeat(1, h.epoch(1), false, true)
	if !hb.ShouldShutdown || !hb.IsFenced || !h.img().Broker(1).Fenced {
		t.Fatalf("shutdown not granted: %+v", hb)
	}
	// Broker 1 comes back: the offline partition whose ISR it is gets it back.
	r := h.register(1)
	h.heartbeat(1, r.BrokerEpoch, false, false)
	if p := h.img().Partition("v", 0); p.Leader != 1 {
		t.Fatalf("v-0 after restart %+v", p)
	}
}

func TestUnregisterBroker(t *testing.T) {
	h := newCtlHarness(t)
	h.live(1, 2)
	h.manualTopic("t", []int32{1, 2})
	req := kmsg.NewPtrUnregisterBrokerRequest()
	req.BrokerID = 1
	if resp := h.do(req).(*kmsg.UnregisterBrokerResponse); resp.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(resp.ErrorCode))
	}
	if h.img().Broker(1) != nil {
		t.Fatal("still registered")
	}
	if p := h.img().Partition("t", 0); p.Leader != 2 || !slices.Equal(p.ISR, []int32{2}) {
		t.Fatalf("t-0 %+v", p)
	}
	if resp := h.do(req).(*kmsg.UnregisterBrokerResponse); resp.ErrorCode != kerr.BrokerIDNotRegistered.Code {
		t.Fatalf("second unregister %v", kerr.ErrorForCode(resp.ErrorCode))
	}
}

func TestAllocateProducerIDs(t *testing.T) {
	h := newCtlHarness(t)
	h.live(1)
	req := kmsg.NewPtrAllocateProducerIDsRequest()
	req.BrokerID, req.BrokerEpoch = 1, h.epoch(1)
	for i := range 2 {
		resp := h.do(req).(*kmsg.AllocateProducerIDsResponse)
		if resp.ErrorCode != 0 || resp.ProducerIDStart != int64(i*1000) || resp.ProducerIDLen != 1000 {
			t.Fatalf("block %d: %+v", i, resp)
		}
	}
	req.BrokerEpoch++
	if resp := h.do(req).(*kmsg.AllocateProducerIDsResponse); resp.ErrorCode != kerr.StaleBrokerEpoch.Code {
		t.Fatalf("stale epoch %+v", resp)
	}
}

func TestNextBrokerState(t *testing.T) {
	in := heartbeatInput{metadataOffset: 10, registrationOffset: 10, lowestActiveOffset: 100, shutdownOffset: 50}
	cases := []struct {
		cur  brokerState
		mut  func(*heartbeatInput)
		want brokerState
	}{
		{stateFenced, func(i *heartbeatInput) { i.wantFence = true }, stateFenced},
		{stateFenced, func(i *heartbeatInput) {}, stateUnfenced},
		{stateFenced, func(i *heartbeatInput) { i.metadataOffset = 9 }, stateFenced},
		{stateFenced, func(i *heartbeatInput) { i.wantShutdown = true }, stateShutdownNow},
		{stateUnfenced, func(i *heartbeatInput) {}, stateUnfenced},
		{stateUnfenced, func(i *heartbeatInput) { i.wantFence = true }, stateFenced},
		{stateUnfenced, func(i *heartbeatInput) { i.wantShutdown, i.hasLeaderships = true, true }, stateControlledShutdown},
		{stateUnfenced, func(i *heartbeatInput) { i.wantShutdown = true }, stateShutdownNow},
		{stateControlledShutdown, func(i *heartbeatInput) { i.hasLeaderships = true }, stateControlledShutdown},
		{stateControlledShutdown, func(i *heartbeatInput) { i.lowestActiveOffset = 49 }, stateControlledShutdown},
		{stateControlledShutdown, func(i *heartbeatInput) {}, stateShutdownNow},
	}
	for i, c := range cases {
		x := in
		c.mut(&x)
		if got := nextBrokerState(c.cur, x); got != c.want {
			t.Errorf("case %d: %v -> %v, want %v", i, c.cur, got, c.want)
		}
	}
}
