package replication

import (
	"sync"
	"time"
)

// Change listeners (issue 20, part 3: the idle cost of 10,000 partitions).
//
// A follower's fetcher and a leader's follower sessions used to find what
// changed by checking every partition they hold, every round: a few atomic
// loads per partition, but some 3,300 partitions per fetcher and per
// session twice a second at 10,000 partitions, RF 3, which was most of an
// idle cluster's CPU. Instead each partition tells them: a Waiter with an
// onChange callback, registered on the partition (Partition.watchers), is
// told of every change of it:
//
//   - appends (the LEO), HW moves and role, leader or epoch changes, through
//     watchers.notify;
//   - changes of the partition's version (ISR, follower states, truncation:
//     bumpVersion) and log start moves (storage's SetLogStartListener:
//     retention, DeleteRecords, a follower following its leader's log
//     start), through watchers.changed.
//
// The listener collects the partition (changeSet) and its next round
// checks only what it collected, plus the few partitions that change with
// time rather than by an event (a fetcher's backed-off and throttled ones).
// As a guard against a change path that tells no one, every holder still
// checks all its partitions once per fullCheckInterval.
const fullCheckInterval = 10 * time.Second

// changeSet is a set of partitions told of a change since it was last
// taken. Its methods are safe for concurrent use; its lock is a leaf.
type changeSet struct {
	mu   sync.Mutex // guards the fields below
	set  map[*Partition]struct{}
	list []*Partition
}

// add records a change of p.
func (c *changeSet) add(p *Partition) {
	c.mu.Lock()
	if _, ok := c.set[p]; !ok {
		if c.set == nil {
			c.set = make(map[*Partition]struct{})
		}
		c.set[p] = struct{}{}
		c.list = append(c.list, p)
	}
	c.mu.Unlock()
}

// take appends the partitions changed since the last take to out and
// empties the set.
func (c *changeSet) take(out []*Partition) []*Partition {
	c.mu.Lock()
	out = append(out, c.list...)
	clear(c.list)
	c.list = c.list[:0]
	clear(c.set)
	c.mu.Unlock()
	return out
}
