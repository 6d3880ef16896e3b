package txn

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestDefaults: Kafka's config defaults.
func TestDefaults(t *testing.T) {
	o := Options{}.withDefaults()
	if o.NumPartitions != 50 || o.ReplicationFactor != 3 || o.MinISR != 2 || o.SegmentBytes != 104857600 ||
		o.MaxTimeout != 900000*time.Millisecond || o.IDExpiration != 604800000*time.Millisecond ||
		o.AbortTimedOutInterval != 10000*time.Millisecond || o.RemoveExpiredInterval != 3600000*time.Millisecond {
		t.Fatalf("defaults: %+v", o)
	}
	if got := o.OffsetsPartitionFor("my-transactional-id"); got != 46 {
		t.Fatalf("offsets partition %d", got)
	}
}

// TestStateTopic: the replication factor and min.insync.replicas are
// lowered only when the cluster is smaller; appends are durable
// (flush.messages=1) whatever the cluster.
func TestStateTopic(t *testing.T) {
	for _, tc := range []struct {
		brokers int
		rf      int16
		minISR  string
	}{{1, 1, "1"}, {2, 2, "2"}, {3, 3, "2"}, {5, 3, "2"}, {0, 3, "2"}} {
		spec := Options{}.StateTopic(tc.brokers)
		if spec.Partitions != 50 || spec.ReplicationFactor != tc.rf || spec.Configs["min.insync.replicas"] != tc.minISR {
			t.Errorf("%d brokers: %+v", tc.brokers, spec)
		}
	}
	want := map[string]string{
		"cleanup.policy": "compact", "compression.type": "uncompressed", "flush.messages": "1", "min.insync.replicas": "2",
		"segment.bytes": "104857600", "unclean.leader.election.enable": "false",
	}
	if got := (Options{}).StateTopic(3).Configs; !maps.Equal(got, want) {
		t.Errorf("configs %v", got)
	}
}

func TestProducerIDFunc(t *testing.T) {
	f := ProducerIDFunc(func(context.Context) (int64, error) { return 42, nil })
	if id, err := f.AllocateProducerID(ctxBG); id != 42 || err != nil {
		t.Fatal(id, err)
	}
}

// TestLegacyValueFormat: with transaction.version 0 the values are v0.
func TestLegacyValueFormat(t *testing.T) {
	h := newHarness(t, &Options{TransactionVersion: func() int16 { return 0 }})
	h.mustInit("t")
	for _, r := range h.logOf("t").snapshot() {
		if r.Value[1] != 0 {
			t.Fatalf("value version %d", r.Value[1])
		}
	}
	n := newHarness(t, nil)
	n.mustInit("t")
	if r := n.logOf("t").snapshot()[0]; r.Value[1] != 1 {
		t.Fatalf("default value version %d", r.Value[1])
	}
}

// TestExpiryWriteFails: ids whose tombstones cannot be written stay, and
// go at the next scan.
func TestExpiryWriteFails(t *testing.T) {
	h := newHarness(t, &Options{IDExpiration: time.Minute, RemoveExpiredInterval: time.Minute})
	h.mustInit("t")
	h.logOf("t").fail(kerr.NotEnoughReplicas)
	h.clock.Advance(2 * time.Minute)
	waitFor(t, h.clock, 0, "the write to fail", func() bool {
		e, _ := h.c.lookup("t", nil)
		e.mu.Lock()
		defer e.mu.Unlock()
		return !e.md.pendingInProgress()
	})
	if d := h.describe("t"); d.ErrorCode != 0 {
		t.Fatalf("expired although the tombstone failed: %+v", d)
	}
	h.logOf("t").fail(nil)
	h.clock.Advance(time.Minute)
	waitFor(t, h.clock, 0, "expiry", func() bool { return h.describe("t").ErrorCode == codeTransactionalIDNotFound })
}

// TestIllegalStateAnswers: a state requests never meet answers
// UNKNOWN_SERVER_ERROR (Kafka throws IllegalStateException) and the
// coordinator goes on.
func TestIllegalStateAnswers(t *testing.T) {
	h := newHarness(t, nil)
	pid, epoch := h.mustInit("t")
	e, _ := h.c.lookup("t", nil)
	e.mu.Lock()
	e.md.state = PrepareEpochFence
	e.mu.Unlock()
	if _, _, code := h.init("t"); code != codeUnknownServerError {
		t.Fatalf("init: %d", code)
	}
	if code := h.end("t", pid, epoch, true); code != codeUnknownServerError {
		t.Fatalf("end: %d", code)
	}
	if _, e2 := h.mustInit("other"); e2 != 0 {
		t.Fatal("coordinator stopped serving")
	}
}
