package replication

import (
	"fmt"
	"slices"
	"sort"
)

// Kafka's replication invariants, checked after every step of the
// simulator. Until an unclean election happens (KIP-101 and KIP-279 assume
// none; unclean.leader.election.enable trades them away) they are:
//
//   - the HW never moves back on a replica within one incarnation;
//   - no two replicas disagree below the lower of their HWs (same batches,
//     offsets, epochs, bytes; from the higher log start, below which records
//     are deleted): so none disagrees with the leader below its HW;
//   - nothing acknowledged with acks=all (min.insync.replicas 2) is lost
//     while one ISR member holds it: every live ISR member and the leader
//     have it. A batch every ISR member lost in crashes is exempt (Kafka
//     promises nothing then), and so is one DeleteRecords removed;
//   - a replica leads only an epoch the controller gave it, and an
//     out-of-sync replica (one missing acknowledged data) leads only after
//     an unclean election.
//
// Always: HW within [log start, LEO]. After healing (settle), the logs
// converge and every replica is back in the ISR.

func (c *simCluster) check() {
	if c.err != nil {
		return
	}
	for _, b := range c.brokers {
		if b.alive {
			c.checkBroker(b)
		}
	}
	if c.unsafe {
		return
	}
	c.checkAgreement()
	c.checkAcked()
}

func (c *simCluster) checkBroker(b *simBroker) {
	hw, leo, start := b.part.Offsets()
	if hw > leo || hw < start {
		c.fail("b%d: HW %d outside [%d, %d]", b.id, hw, start, leo)
	}
	if role, epoch := b.roleEpoch(); role == RoleLeader && c.ctl.leaderOf(epoch) != b.id {
		c.fail("b%d leads epoch %d, which the controller gave to %d", b.id, epoch, c.ctl.leaderOf(epoch))
	}
	if c.unsafe {
		return
	}
	if hw < b.lastHW {
		c.fail("b%d: HW moved back from %d to %d", b.id, b.lastHW, hw)
	}
	b.lastHW = hw
}

// checkAgreement compares every two live replicas below the lower HW and
// from the higher log start (what lies below a log start is deleted: a
// replica that followed the leader's DeleteRecords may keep divergent
// batches there that no read serves). A pair's prefix compared before is
// not compared again while neither log has lost batches since.
func (c *simCluster) checkAgreement() {
	for i, a := range c.brokers {
		for _, b := range c.brokers[i+1:] {
			if !a.alive || !b.alive {
				continue
			}
			done := c.agreed(a.id, b.id)
			if done.cutsA != a.log.cuts || done.cutsB != b.log.cuts {
				*done = simAgreed{cutsA: a.log.cuts, cutsB: b.log.cuts}
			}
			below := min(a.log.HighWatermark(), b.log.HighWatermark())
			from := max(done.upTo, a.log.LogStartOffset(), b.log.LogStartOffset())
			if off, ok := firstDifference(a.log.batchesFrom(from, below), b.log.batchesFrom(from, below)); !ok {
				c.fail("b%d and b%d disagree at offset %d, below their HWs (%d, %d)", a.id, b.id, off,
					a.log.HighWatermark(), b.log.HighWatermark())
				return
			}
			done.upTo = max(done.upTo, below)
		}
	}
}

// simAgreed is how far two replicas were found to agree, and the cut
// counts of their logs then.
type simAgreed struct {
	upTo         int64
	cutsA, cutsB int
}

func (c *simCluster) agreed(a, b int32) *simAgreed {
	if c.agreement == nil {
		c.agreement = make([]simAgreed, len(c.brokers)*len(c.brokers))
	}
	return &c.agreement[int(a-1)*len(c.brokers)+int(b-1)]
}

// firstDifference compares two logs' batches over the offsets both hold.
func firstDifference(x, y []memBatch) (int64, bool) {
	for len(x) > 0 && len(y) > 0 {
		switch {
		case x[0].last < y[0].base:
			x = x[1:]
		case y[0].last < x[0].base:
			y = y[1:]
		case !x[0].same(y[0]):
			return max(x[0].base, y[0].base), false
		default:
			x, y = x[1:], y[1:]
		}
	}
	return 0, true
}

// holds reports whether b's log has batch a, as its leader stamped it.
func (c *simCluster) holds(b *simBroker, a *ackedBatch) bool {
	b.log.lock()
	defer b.log.unlock()
	bs := b.log.batches
	i := sort.Search(len(bs), func(i int) bool { return bs[i].base >= a.batch.base })
	return i < len(bs) && bs[i].same(a.batch)
}

// checkAcked checks every acknowledged batch on the ISR members and the
// leader. Batches checked before are skipped while nothing that could
// remove one has happened (no log lost batches, same ISR and leader).
func (c *simCluster) checkAcked() {
	leader := c.leaderBroker()
	key := simAckedKey{partitionEpoch: c.ctl.partitionEpoch, leader: -1}
	if leader != nil {
		key.leader = leader.id
	}
	for _, b := range c.brokers {
		key.cuts += b.log.cuts
		key.incarnations += b.incarnation
	}
	from := 0
	if key == c.ackedKey {
		from = c.ackedChecked
	}
	c.ackedKey, c.ackedChecked = key, len(c.acked)
	for i := from; i < len(c.acked); i++ {
		a := &c.acked[i]
		if a.batch.last < c.deletedBelow {
			a.exempt = true // DeleteRecords removed it
		}
		if a.exempt {
			continue
		}
		if !slices.ContainsFunc(c.ctl.isr, func(id int32) bool { return c.holds(c.broker(id), a) }) {
			a.exempt = true // every in-sync replica lost it to crashes
			continue
		}
		for _, id := range c.ctl.isr {
			if b := c.broker(id); b.alive && !c.holds(b, a) {
				c.fail("acknowledged batch %s is missing on b%d, a live member of the ISR %v", a, id, c.ctl.isr)
				return
			}
		}
		if leader != nil && !c.holds(leader, a) {
			c.fail("acknowledged batch %s is missing on the leader b%d of epoch %d: an out-of-sync replica leads without an unclean election",
				a, leader.id, c.ctl.leaderEpoch)
			return
		}
	}
}

// simAckedKey is what checkAcked's result depends on besides the batches.
type simAckedKey struct {
	cuts, incarnations int
	partitionEpoch     int32
	leader             int32
}

func (a *ackedBatch) String() string {
	return fmt.Sprintf("#%d (offsets %d-%d, epoch %d)", a.seq, a.batch.base, a.batch.last, a.batch.epoch)
}

// converged reports whether the healed cluster is at rest: a leader that
// every replica follows in the latest metadata, every replica in the ISR,
// identical logs, and every HW at the log end. Otherwise it says why not.
func (c *simCluster) converged() (bool, string) {
	leader := c.leaderBroker()
	if leader == nil {
		return false, fmt.Sprintf("no established leader (controller: %d at epoch %d)", c.ctl.leader, c.ctl.leaderEpoch)
	}
	if len(c.ctl.isr) != len(c.cfg.Replicas) { // an ISR holds distinct replicas
		return false, fmt.Sprintf("ISR %v, not every replica", c.ctl.isr)
	}
	leo := leader.log.LogEndOffset()
	for _, b := range c.brokers {
		hw, bleo, _ := b.part.Offsets()
		switch {
		case b.applied < len(c.ctl.meta):
			return false, fmt.Sprintf("b%d applied metadata %d of %d", b.id, b.applied, len(c.ctl.meta))
		case bleo != leo || hw != leo:
			return false, fmt.Sprintf("b%d: LEO %d, HW %d; the leader's LEO %d", b.id, bleo, hw, leo)
		}
	}
	for _, b := range c.brokers {
		from := max(leader.log.LogStartOffset(), b.log.LogStartOffset())
		if off, ok := firstDifference(leader.log.batchesFrom(from, leo), b.log.batchesFrom(from, leo)); !ok {
			return false, fmt.Sprintf("b%d differs from the leader at offset %d", b.id, off)
		}
	}
	return true, ""
}
