package sharepartition

import (
	"fmt"
	"testing"

	"github.com/kbroker/kbroker/broker/shareconfig"
)

// FuzzPartitionOps decodes the fuzzer's bytes into a sequence of
// operations on one share-partition (acquire, acknowledge with each type,
// lock timeouts, member releases, new records, a failover) and checks the
// invariants after each: the start offset never moves back, nothing is
// left pending, an Acquired record has an acquirer, an accepted record is
// never handed out again (also not after a failover). Seeds:
// testdata/fuzz/FuzzPartitionOps.
func FuzzPartitionOps(f *testing.F) {
	f.Add([]byte{0, 1, 1, 0, 2, 0, 4, 4, 0, 3, 5, 6, 0, 1})
	f.Add([]byte{6, 6, 0, 0, 0, 1, 0, 2, 1, 3, 7, 0, 2})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 200 {
			ops = ops[:200]
		}
		e := newEnv(t, func(c *shareconfig.Config) {
			c.DeliveryCountLimit = 3
			c.PartitionMaxRecordLocks = 8
		})
		e.log.setHW(4)
		p := e.part()
		accepted := map[int64]bool{}
		held := map[string][]AcquiredRange{}
		lastStart := int64(0)
		for i, op := range ops {
			member := fmt.Sprintf("m%d", op>>4%3)
			switch op % 8 {
			case 0:
				got := e.acquire(p, member, int32(1+op>>6))
				for _, ar := range got {
					for off := ar.FirstOffset; off <= ar.LastOffset; off++ {
						if accepted[off] {
							t.Fatalf("op %d: accepted offset %d handed out again", i, off)
						}
					}
				}
				held[member] = append(held[member], got...)
			case 1, 2, 3:
				if len(held[member]) == 0 {
					continue
				}
				ar := held[member][0]
				held[member] = held[member][1:]
				typ := []AckType{AckAccept, AckRelease, AckReject}[op%8-1]
				if e.ack(p, member, ack(ar.FirstOffset, ar.LastOffset, typ)) == 0 && typ == AckAccept {
					for off := ar.FirstOffset; off <= ar.LastOffset; off++ {
						accepted[off] = true
					}
				}
			case 4:
				e.clock.Advance(e.cfg.RecordLockDuration / 2)
			case 5:
				e.m.ReleaseSession(t.Context(), ClosedSession{Key: SessionKey{"g", member}, Partitions: []TopicIDPartition{{topic, 0}}})
			case 6:
				e.log.setHW(e.log.HighWatermark() + int64(op>>5))
			case 7:
				p = e.failover()
				held = map[string][]AcquiredRange{}
			}
			checkInvariants(t, i, p, &lastStart)
		}
	})
}

func checkInvariants(t *testing.T, i int, p *Partition, lastStart *int64) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.w.start < *lastStart {
		t.Fatalf("op %d: start offset moved back %d -> %d", i, *lastStart, p.w.start)
	}
	*lastStart = p.w.start
	for j := range p.w.size() {
		r := p.w.rec(j)
		if r.pending {
			t.Fatalf("op %d: offset %d left pending", i, p.w.start+int64(j))
		}
		if (r.state == Acquired) != (r.member != "") {
			t.Fatalf("op %d: offset %d is %s held by %q", i, p.w.start+int64(j), r.state, r.member)
		}
	}
	if p.w.size() > 0 && p.w.rec(0).state.terminal() {
		t.Fatalf("op %d: start offset not advanced past a completed record", i)
	}
}
