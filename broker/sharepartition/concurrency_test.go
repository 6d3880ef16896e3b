package sharepartition

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/broker/shareconfig"
)

// Members acquire and acknowledge concurrently while locks expire (race
// detector). Every record is accepted at most once, no two acquisitions
// hand out the same delivery of a record, and in the end every record is
// done: accepted or archived.
func TestConcurrentMembers(t *testing.T) {
	const records = 300
	e := newEnv(t, func(c *shareconfig.Config) {
		c.DeliveryCountLimit = 4
		c.PartitionMaxRecordLocks = 64
	})
	e.log.setHW(records)
	p := e.part()

	var mu sync.Mutex
	accepted := make(map[int64]int)
	delivered := make(map[[2]int64]string) // (offset, delivery) -> member
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf(format, args...)
	}

	stop := make(chan struct{})
	var ticker sync.WaitGroup
	ticker.Add(1)
	go func() { // lock timeouts
		defer ticker.Done()
		for {
			select {
			case <-stop:
				return
			default:
				e.clock.Advance(5 * time.Second)
				runtime.Gosched()
			}
		}
	}()

	var wg sync.WaitGroup
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			member := fmt.Sprintf("m%d", w)
			r := rand.New(rand.NewPCG(uint64(w), 9))
			for range 400 {
				got := e.acquire(p, member, int32(1+r.IntN(8)))
				for _, ar := range got {
					for off := ar.FirstOffset; off <= ar.LastOffset; off++ {
						mu.Lock()
						k := [2]int64{off, int64(ar.DeliveryCount)}
						if prev, dup := delivered[k]; dup {
							fail("delivery %d of offset %d handed to %s and %s", ar.DeliveryCount, off, prev, member)
						}
						delivered[k] = member
						mu.Unlock()
					}
					typ := []AckType{AckAccept, AckAccept, AckAccept, AckRelease, AckReject}[r.IntN(5)]
					if r.IntN(6) == 0 {
						continue // crash-like: never acknowledged, the lock expires
					}
					if code := e.ack(p, member, ack(ar.FirstOffset, ar.LastOffset, typ)); code == 0 && typ == AckAccept {
						mu.Lock()
						for off := ar.FirstOffset; off <= ar.LastOffset; off++ {
							accepted[off]++
						}
						mu.Unlock()
					}
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	ticker.Wait()

	// Drain: whatever is left is delivered until accepted or archived.
	for range 50 {
		e.clock.Advance(time.Minute)
		for _, ar := range e.acquire(p, "drain", 1000) {
			if e.ack(p, "drain", ack(ar.FirstOffset, ar.LastOffset, AckAccept)) == 0 {
				for off := ar.FirstOffset; off <= ar.LastOffset; off++ {
					accepted[off]++
				}
			}
		}
	}
	for off, n := range accepted {
		if n > 1 {
			t.Errorf("offset %d accepted %d times", off, n)
		}
	}
	if start, _ := p.Offsets(); start != records {
		t.Fatalf("start offset %d, want %d: %+v", start, records, states(p))
	}
}
