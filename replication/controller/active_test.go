package controller

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testsupport"
)

// directProposer commits by applying to a testFSM: a quorum of one without Raft.
type directProposer struct{ tf *testFSM }

func (p directProposer) propose(_ context.Context, data []byte) (uint64, error) {
	p.tf.idx++
	return p.tf.idx, p.tf.f.applyCommand(p.tf.idx, data)
}

type ctlHarness struct {
	t     *testing.T
	c     *controller
	tf    *testFSM
	clock *testsupport.Clock
	ctx   context.Context
	inc   map[int32][16]byte
}

func newCtlHarness(t *testing.T, mutate ...func(*Options)) *ctlHarness {
	t.Helper()
	clock := testsupport.NewClock(time.Unix(1_700_000_000, 0))
	opts := Options{
		NodeID: 0, ListenAddr: "127.0.0.1:1", DataDir: t.TempDir(),
		BrokerSessionTimeout: 10 * time.Second, Logger: testLogger(t),
		Now: clock.Now, Rand: rand.New(rand.NewPCG(1, 2)),
	}
	for _, m := range mutate {
		m(&opts)
	}
	opts, err := opts.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	tf := newTestFSM(t)
	h := &ctlHarness{t: t, tf: tf, clock: clock, ctx: context.Background(), inc: map[int32][16]byte{}}
	h.c = newController(&opts, tf.f, directProposer{tf}, nil)
	if err := h.c.activate(h.ctx); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *ctlHarness) img() *Image { return h.tf.img() }

func (h *ctlHarness) do(req kmsg.Request) kmsg.Response {
	h.t.Helper()
	resp, err := h.c.handle(h.ctx, req)
	if err != nil {
		h.t.Fatalf("%T: %v", req, err)
	}
	return resp
}

// register registers broker id with a fresh incarnation and returns the response.
func (h *ctlHarness) register(id int32) *kmsg.BrokerRegistrationResponse {
	h.t.Helper()
	inc := newUUID()
	h.inc[id] = inc
	return h.registerAs(id, inc)
}

func (h *ctlHarness) registerAs(id int32, inc [16]byte) *kmsg.BrokerRegistrationResponse {
	h.t.Helper()
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID, req.IncarnationID, req.ClusterID = id, inc, h.img().ClusterID
	l := kmsg.NewBrokerRegistrationRequestListener()
	l.Name, l.Host, l.Port = "PLAINTEXT", "127.0.0.1", uint16(9000+id)
	req.Listeners = append(req.Listeners, l)
	return h.do(req).(*kmsg.BrokerRegistrationResponse)
}

func (h *ctlHarness) heartbeat(id int32, epoch int64, wantFence, wantShutdown bool) *kmsg.BrokerHeartbeatResponse {
	h.t.Helper()
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.BrokerID, req.BrokerEpoch, req.WantFence, req.WantShutdown = id, epoch, wantFence, wantShutdown
	req.CurrentMetadataOffset = int64(h.img().AppliedIndex)
	return h.do(req).(*kmsg.BrokerHeartbeatResponse)
}

// live registers and unfences brokers.
func (h *ctlHarness) live(ids ...int32) {
	h.t.Helper()
	for _, id := range ids {
		r := h.register(id)
		if r.ErrorCode != 0 {
			h.t.Fatalf("register %d: %v", id, kerr.ErrorForCode(r.ErrorCode))
		}
		if hb := h.heartbeat(id, r.BrokerEpoch, false, false); hb.IsFenced || hb.ErrorCode != 0 {
			h.t.Fatalf("broker %d not unfenced: %+v", id, hb)
		}
	}
}

func (h *ctlHarness) epoch(id int32) int64 { return h.img().Brokers[id].Epoch }

func (h *ctlHarness) createTopic(name string, partitions int32, rf int16) *kmsg.CreateTopicsResponseTopic {
	h.t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
	req.Topics = append(req.Topics, rt)
	req.Version = 7
	resp := h.do(req).(*kmsg.CreateTopicsResponse)
	return &resp.Topics[0]
}

// manualTopic creates a topic with explicit replica assignments.
func (h *ctlHarness) manualTopic(name string, assignments ...[]int32) {
	h.t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, -1, -1
	for i, a := range assignments {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = int32(i), a
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	}
	req.Topics = append(req.Topics, rt)
	resp := h.do(req).(*kmsg.CreateTopicsResponse)
	if c := resp.Topics[0].ErrorCode; c != 0 {
		h.t.Fatalf("create %s: %v %s", name, kerr.ErrorForCode(c), deref(resp.Topics[0].ErrorMessage))
	}
}

func TestActivationInitsCluster(t *testing.T) {
	h := newCtlHarness(t, func(o *Options) { o.ClusterID = "my-cluster" })
	if got := h.img().ClusterID; got != "my-cluster" {
		t.Fatalf("cluster id %q", got)
	}
	// A second activation writes a marker, not a new cluster id.
	if err := h.c.activate(h.ctx); err != nil {
		t.Fatal(err)
	}
	if got := h.img().ClusterID; got != "my-cluster" {
		t.Fatalf("cluster id %q", got)
	}
	g := newCtlHarness(t)
	if len(g.img().ClusterID) != 22 {
		t.Fatalf("generated cluster id %q", g.img().ClusterID)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
