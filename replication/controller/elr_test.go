package controller

import (
	"bytes"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// syncBuffer is a log sink tests read while the controller writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// registerAfter registers a new incarnation of broker id that says it last
// shut down cleanly at epoch prev (-1: unclean).
func (h *ctlHarness) registerAfter(id int32, prev int64) *kmsg.BrokerRegistrationResponse {
	h.t.Helper()
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID, req.IncarnationID, req.ClusterID = id, newUUID(), h.img().ClusterID
	req.PreviousBrokerEpoch = prev
	l := kmsg.NewBrokerRegistrationRequestListener()
	l.Name, l.Host, l.Port = "PLAINTEXT", "127.0.0.1", uint16(9000+id)
	req.Listeners = append(req.Listeners, l)
	resp := h.do(req).(*kmsg.BrokerRegistrationResponse)
	if resp.ErrorCode != 0 {
		h.t.Fatalf("registering %d: %v", id, kerr.ErrorForCode(resp.ErrorCode))
	}
	return resp
}

type wantELR struct {
	leader                int32
	isr, elr, lastKnownLd []int32
}

func checkELR(t *testing.T, what string, p *Partition, w wantELR) {
	t.Helper()
	if p.Leader != w.leader || !slices.Equal(p.ISR, w.isr) || !slices.Equal(p.ELR, w.elr) || !slices.Equal(p.LastKnownELR, w.lastKnownLd) {
		t.Fatalf("%s: leader %d isr %v elr %v last known %v; want leader %d isr %v elr %v last known %v",
			what, p.Leader, p.ISR, p.ELR, p.LastKnownELR, w.leader, w.isr, w.elr, w.lastKnownLd)
	}
}

// KIP-966's scenario through the controller's own request handling: RF 3,
// min.insync.replicas 2. The ISR shrinks to the leader (the member that
// left it last becomes an eligible leader replica), the other two shut down
// cleanly, the leader loses power (fenced by its session, then registers
// without a clean-shutdown epoch). The partition must not elect it: it
// waits for the ELR member, which registers with its clean-shutdown epoch
// and leads, its log holding every committed offset.
func TestELRKIP966Scenario(t *testing.T) {
	logs := &syncBuffer{}
	h := newCtlHarness(t, func(o *Options) {
		o.MinInsyncReplicas = 2
		o.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	h.live(1, 2, 3)
	h.manualTopic("t", []int32{1, 2, 3})

	h.alterISR("t", 1, 2) // 3 lags: the ISR is still at min.insync.replicas
	checkELR(t, "ISR [1 2]", h.img().Partition("t", 0), wantELR{1, []int32{1, 2}, nil, nil})
	h.alterISR("t", 1) // 2 lags too: the HW stops, 2 holds everything below it
	checkELR(t, "ISR [1]", h.img().Partition("t", 0), wantELR{1, []int32{1}, []int32{2}, nil})

	// 2 and 3 shut down cleanly (they lead nothing: granted at once).
	epoch2 := h.epoch(2)
	for _, id := range []int32{2, 3} {
		if hb := h.heartbeat(id, h.epoch(id), false, true); !hb.ShouldShutdown {
			t.Fatalf("broker %d shutdown: %+v", id, hb)
		}
	}
	checkELR(t, "2 and 3 down", h.img().Partition("t", 0), wantELR{1, []int32{1}, []int32{2}, nil})

	// 1 loses power: its session expires.
	h.clock.Advance(11 * time.Second)
	h.c.fenceExpired(h.ctx)
	checkELR(t, "1 fenced", h.img().Partition("t", 0), wantELR{NoLeader, []int32{}, []int32{1, 2}, []int32{1}})
	if !strings.Contains(logs.String(), "waiting for an eligible leader replica") {
		t.Fatalf("no log line for the partition waiting:\n%s", logs)
	}

	// 1 comes back without a clean-shutdown epoch: it may have lost its
	// unflushed tail, so it leaves the ELR; unfenced, it still may not lead.
	h.registerAfter(1, -1)
	checkELR(t, "1 back uncleanly", h.img().Partition("t", 0), wantELR{NoLeader, []int32{}, []int32{2}, []int32{1}})
	if hb := h.heartbeat(1, h.epoch(1), false, false); hb.IsFenced {
		t.Fatalf("1 not unfenced: %+v", hb)
	}
	h.c.electOffline(h.ctx)
	checkELR(t, "1 unfenced", h.img().Partition("t", 0), wantELR{NoLeader, []int32{}, []int32{2}, []int32{1}})

	// 2 comes back from its clean shutdown and is elected from the ELR.
	h.registerAfter(2, epoch2)
	checkELR(t, "2 registered", h.img().Partition("t", 0), wantELR{NoLeader, []int32{}, []int32{2}, []int32{1}})
	h.heartbeat(2, h.epoch(2), false, false)
	checkELR(t, "2 unfenced", h.img().Partition("t", 0), wantELR{2, []int32{2}, []int32{}, []int32{}})
	if !strings.Contains(logs.String(), "partition led by an eligible leader replica") {
		t.Fatalf("no log line for the ELR election:\n%s", logs)
	}

	// The ISR grows back to min.insync.replicas: nothing is eligible any more
	// beyond the ISR.
	h.alterISR("t", 2, 1)
	checkELR(t, "ISR [2 1]", h.img().Partition("t", 0), wantELR{2, []int32{2, 1}, []int32{}, []int32{}})
}

// With the ISR and the ELR empty, the last known leader leads once it is
// back (Kafka 4.x, as before eligible leader replicas), even after an
// unclean shutdown: the last resort, logged as losing data.
func TestELRLastKnownLeader(t *testing.T) {
	logs := &syncBuffer{}
	h := newCtlHarness(t, func(o *Options) {
		o.MinInsyncReplicas = 2
		o.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	h.live(1, 2)
	h.manualTopic("t", []int32{1, 2})
	h.alterISR("t", 1)
	h.clock.Advance(11 * time.Second)
	h.heartbeat(2, h.epoch(2), false, false) // 2 stays alive a while
	h.c.fenceExpired(h.ctx)                  // 1 is fenced: 2 leads from the ELR
	checkELR(t, "1 fenced", h.img().Partition("t", 0), wantELR{2, []int32{2}, []int32{1}, []int32{}})
	h.clock.Advance(11 * time.Second)
	h.c.fenceExpired(h.ctx) // now 2
	checkELR(t, "2 fenced", h.img().Partition("t", 0), wantELR{NoLeader, []int32{}, []int32{1, 2}, []int32{2}})
	h.registerAfter(1, -1)
	h.registerAfter(2, -1)
	checkELR(t, "both back uncleanly", h.img().Partition("t", 0), wantELR{NoLeader, []int32{}, []int32{}, []int32{2}})
	h.heartbeat(1, h.epoch(1), false, false)
	checkELR(t, "1 unfenced", h.img().Partition("t", 0), wantELR{NoLeader, []int32{}, []int32{}, []int32{2}})
	if !strings.Contains(logs.String(), "waiting for the last known leader") {
		t.Fatalf("no log line for the partition waiting for its last known leader:\n%s", logs)
	}
	h.heartbeat(2, h.epoch(2), false, false)
	checkELR(t, "2 unfenced", h.img().Partition("t", 0), wantELR{2, []int32{2}, []int32{}, []int32{}})
	if !strings.Contains(logs.String(), "partition led by its last known leader") {
		t.Fatalf("no log line for the last known leader election:\n%s", logs)
	}
}

// Without eligible leader replicas (Kafka before 4.1, or the feature at
// level 0) the same sequence elects the replica that lost power: the data
// loss KIP-966 closes. It documents what the ELR tests protect against.
func TestWithoutELRTheStaleLastMemberLeads(t *testing.T) {
	tf := newTestFSM(t)
	tf.registerLive(1, 2, 3)
	tf.createTopic("t", 1, []int32{1, 2, 3})
	t0 := tf.img().Topics["t"]
	tf.apply(&partitionChangeRecord{Topic: "t", TopicID: t0.ID, Leader: 1, ISR: []int32{1}})
	tf.fence(2)
	tf.fence(3)
	tf.fence(1) // power loss
	img := tf.img()
	tf.apply(uncleanShutdownChanges(img, 1, policy{})...) // (nothing: 1 is the last member)
	img = tf.img()
	tf.apply(append([]record{&unfenceBrokerRecord{ID: 1, Epoch: img.Brokers[1].Epoch}}, offlineChanges(img, 1, policy{})...)...)
	if p := tf.img().Partition("t", 0); p.Leader != 1 {
		t.Fatalf("without ELR: %+v, want the stale replica 1 elected", p)
	}
}

// The ELR as Kafka's PartitionChangeBuilder computes it.
func TestTargetELR(t *testing.T) {
	p := &Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, ELR: []int32{3}}
	req := changeRequest{elr: true, minISR: 2}
	for _, c := range []struct {
		name    string
		isr     []int32
		unclean []int32
		want    []int32
	}{
		{"ISR at min: none", []int32{1, 2}, nil, nil},
		{"members leaving a short ISR join", []int32{1}, nil, []int32{2, 3}},
		{"an empty ISR: all", []int32{}, nil, []int32{1, 2, 3}},
		{"unclean shutdown excluded", []int32{}, []int32{2}, []int32{1, 3}},
	} {
		r := req
		r.uncleanShutdown = c.unclean
		if got := targetELR(p, c.isr, p.Replicas, r); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	if got := targetELR(p, []int32{1}, []int32{1, 2}, req); !slices.Equal(got, []int32{2}) {
		t.Errorf("replicas moved away must leave: %v", got)
	}
	if got := targetELR(p, []int32{1}, p.Replicas, changeRequest{minISR: 2}); got != nil {
		t.Errorf("ELR disabled: %v", got)
	}
}

// Elections with an empty ISR take the first acceptable ELR member in
// replica order; it becomes the ISR and leaves the ELR.
func TestBuildChangeElectsFromELR(t *testing.T) {
	tp := &Topic{Name: "t", ID: [16]byte{1}}
	p := &Partition{Topic: "t", Replicas: []int32{3, 1, 2}, ISR: []int32{}, ELR: []int32{1, 2}, LastKnownELR: []int32{3}, Leader: NoLeader}
	c := buildChange(tp, p, changeRequest{elr: true, minISR: 2, acceptable: live(1, 2, 3)})
	if c == nil || c.Leader != 1 || !slices.Equal(c.ISR, []int32{1}) || *c.ELR == nil || !slices.Equal(*c.ELR, []int32{2}) ||
		len(*c.LastKnownELR) != 0 {
		t.Fatalf("got %+v", c)
	}
	if c := buildChange(tp, p, changeRequest{elr: true, minISR: 2, acceptable: live(3)}); c != nil {
		t.Fatalf("the last known leader must not lead while the ELR is not empty: %+v", c)
	}
	// An unclean election clears the ELR.
	q := *p
	q.ELR = []int32{2}
	c = buildChange(tp, &q, changeRequest{elr: true, minISR: 2, election: electionUnclean, acceptable: live(3)})
	if c == nil || c.Leader != 3 || !slices.Equal(c.ISR, []int32{3}) || len(*c.ELR) != 0 {
		t.Fatalf("unclean: %+v", c)
	}
}

// A change of min.insync.replicas clears the ELR of the topics it affects
// (Kafka's ClearElrRecord).
func TestMinISRChangeClearsELR(t *testing.T) {
	h := newCtlHarness(t, func(o *Options) { o.MinInsyncReplicas = 2 })
	h.live(1, 2, 3)
	h.manualTopic("a", []int32{1, 2, 3})
	h.manualTopic("b", []int32{1, 2, 3})
	h.alterISR("a", 1)
	h.alterISR("b", 1)
	for _, name := range []string{"a", "b"} {
		if p := h.img().Partition(name, 0); !slices.Equal(p.ELR, []int32{2, 3}) {
			t.Fatalf("%s: ELR %v", name, p.ELR)
		}
	}
	alter := func(typ kmsg.ConfigResourceType, name, value string) {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = typ, name
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Value = minISRConfig, &value
		res.Configs = append(res.Configs, cfg)
		req.Resources = append(req.Resources, res)
		resp := h.do(req).(*kmsg.IncrementalAlterConfigsResponse)
		if c := resp.Resources[0].ErrorCode; c != 0 {
			t.Fatalf("alter: %v", kerr.ErrorForCode(c))
		}
	}
	alter(kmsg.ConfigResourceTypeTopic, "a", "3")
	if a, b := h.img().Partition("a", 0), h.img().Partition("b", 0); len(a.ELR) != 0 || !slices.Equal(b.ELR, []int32{2, 3}) {
		t.Fatalf("after a's min.insync.replicas: a %v b %v", a.ELR, b.ELR)
	}
	alter(kmsg.ConfigResourceTypeBroker, "", "2")
	if b := h.img().Partition("b", 0); len(b.ELR) != 0 {
		t.Fatalf("after the cluster default: b %v", b.ELR)
	}
}

// PartitionChange records carry the ELR at version 3 only; snapshots with
// an ELR are version 2; both round-trip.
func TestELRRecordAndSnapshotVersions(t *testing.T) {
	rec := &partitionChangeRecord{Topic: "t", TopicID: uuid{1}, Leader: -1, ISR: []int32{}, ELR: ptrTo([]int32{2}), LastKnownELR: ptrTo([]int32{1})}
	data, err := encodeEntry(rec)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), `{"type":"PartitionChange","v":3,`) {
		t.Fatalf("encoding %s", data)
	}
	out, err := decodeEntry(data)
	if err != nil || !reflect.DeepEqual(out, []record{rec}) {
		t.Fatalf("round trip %v %+v", err, out)
	}
	plain := &partitionChangeRecord{Topic: "t", TopicID: uuid{1}, Leader: 1, ISR: []int32{1}}
	if data, _ := encodeEntry(plain); !strings.HasPrefix(string(data), `{"type":"PartitionChange","v":1,`) {
		t.Fatalf("a change without ELR fields must stay version 1: %s", data)
	}

	tf := newTestFSM(t)
	tf.registerLive(1, 2)
	tf.createTopic("t", 1, []int32{1, 2})
	var buf bytes.Buffer
	if err := encodeSnapshot(&buf, tf.img()); err != nil || !strings.HasPrefix(buf.String(), `{"v":1,`) {
		t.Fatalf("snapshot without ELR: %v %.20s", err, buf.String())
	}
	tf.apply(&partitionChangeRecord{Topic: "t", TopicID: uuid{1}, Leader: -1, ISR: []int32{}, ELR: ptrTo([]int32{1, 2}), LastKnownELR: ptrTo([]int32{1})})
	buf.Reset()
	if err := encodeSnapshot(&buf, tf.img()); err != nil || !strings.HasPrefix(buf.String(), `{"v":2,`) {
		t.Fatalf("snapshot with ELR: %v %.20s", err, buf.String())
	}
	img, err := decodeSnapshot(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if p := img.Partition("t", 0); !slices.Equal(p.ELR, []int32{1, 2}) || !slices.Equal(p.LastKnownELR, []int32{1}) {
		t.Fatalf("restored %+v", p)
	}
}

// The feature at level 0 (UpdateFeatures down, as Kafka allows) turns the
// ELR off: the last ISR member stays in the ISR when fenced, and the next
// change of a partition clears an ELR it kept.
func TestELRFeatureOff(t *testing.T) {
	h := newCtlHarness(t, func(o *Options) { o.MinInsyncReplicas = 2 })
	if !h.img().ELREnabled() {
		t.Fatal("a new cluster runs without eligible leader replicas")
	}
	h.live(1, 2)
	h.manualTopic("t", []int32{1, 2})
	h.alterISR("t", 1)
	checkELR(t, "ISR [1]", h.img().Partition("t", 0), wantELR{1, []int32{1}, []int32{2}, nil})
	h.tf.apply(&featureLevelRecord{Name: ELRFeature, Level: 0})
	if h.img().ELREnabled() {
		t.Fatal("level 0 still tracks eligible leader replicas")
	}
	h.clock.Advance(11 * time.Second)
	h.heartbeat(2, h.epoch(2), false, false)
	h.c.fenceExpired(h.ctx)
	checkELR(t, "1 fenced without ELR", h.img().Partition("t", 0), wantELR{NoLeader, []int32{1}, nil, nil})
}
