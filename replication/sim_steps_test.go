package replication

import (
	"slices"
	"time"
)

// The simulator's steps. Each records itself in the schedule, acts, then
// lets acks=all produces complete and checks the invariants. Fixed
// schedules call them directly; the random scheduler picks among those
// enabled.

func (c *simCluster) afterStep() {
	c.resolveProduces()
	c.trackCommitted()
	c.check()
}

// trackCommitted notes the end of the committed log (the highest HW seen)
// and turns the safety checks off once Kafka no longer promises them: after
// an unclean election, or once every ISR member has lost committed data in
// crashes (an ISR shrunk to one replica that loses its unflushed tail;
// KIP-966's eligible leader replicas would keep those).
func (c *simCluster) trackCommitted() {
	if c.unsafe {
		return
	}
	for _, b := range c.brokers {
		if b.alive {
			c.committed = max(c.committed, b.log.HighWatermark())
		}
	}
	if len(c.ctl.uncleanEpochs) > 0 {
		c.unsafe = true
		c.note("unclean election: data loss allowed from here on")
		return
	}
	if !slices.ContainsFunc(c.ctl.isr, func(id int32) bool { return c.broker(id).log.LogEndOffset() >= c.committed }) {
		c.unsafe = true
		c.note("every in-sync replica lost committed offsets below %d in crashes: data loss allowed from here on", c.committed)
	}
}

// stepProduce produces n records to broker id with acks (-1: all).
func (c *simCluster) stepProduce(id int32, acks int16, n int) {
	c.record("produce b%d acks=%d records=%d", id, acks, n)
	if b := c.broker(id); b.alive {
		c.produce(b, acks, n)
	}
	c.afterStep()
}

// stepDeleteRecords moves the log start of leader id to offset (a
// DeleteRecords; the leader refuses beyond its HW). Followers follow it, and
// one that falls behind it restarts its log there (ResetTo).
func (c *simCluster) stepDeleteRecords(id int32, offset int64) {
	c.record("delete-records b%d before %d", id, offset)
	if b := c.broker(id); b.alive {
		start, err := b.part.DeleteRecordsBefore(offset)
		if err != nil {
			c.note("%v", err)
		} else {
			c.deletedBelow = max(c.deletedBelow, start)
		}
	}
	c.afterStep()
}

// stepFetch has broker id's fetcher send its next round.
func (c *simCluster) stepFetch(id int32) {
	c.record("fetch b%d", id)
	b := c.broker(id)
	if !b.alive || b.fetcher == nil || b.fetching {
		c.note("no fetcher ready")
		c.afterStep()
		return
	}
	if r, ok := b.fetcher.nextRound(); ok {
		b.fetching = true
		m := &simMsg{kind: msgFetch, from: id, to: b.fetchLeader, fromInc: b.incarnation, f: b.fetcher, round: r}
		c.send(m)
		c.note("%v", m)
	} else {
		c.note("nothing to fetch")
	}
	c.afterStep()
}

// stepDeliver delivers message id; stepDrop loses it.
func (c *simCluster) stepDeliver(id int) {
	m := c.takeMsg(id)
	c.record("deliver %v", m)
	c.deliver(m)
	c.afterStep()
}

func (c *simCluster) stepDrop(id int) {
	m := c.takeMsg(id)
	c.record("drop %v", m)
	c.lose(m)
	c.afterStep()
}

func (c *simCluster) stepTick(d time.Duration) {
	c.record("tick %v", d)
	c.clock.Advance(d)
	c.afterStep()
}

// stepShrink runs the leader's ISR expiration check (the manager's shrink
// loop) on broker id.
func (c *simCluster) stepShrink(id int32) {
	c.record("isr-check b%d", id)
	if b := c.broker(id); b.alive {
		b.part.MaybeShrinkISR(c.cfg.LagMax)
	}
	c.afterStep()
}

// stepMeta applies the next metadata version on broker id.
func (c *simCluster) stepMeta(id int32) {
	b := c.broker(id)
	c.record("metadata b%d v%d", id, b.applied)
	st := c.ctl.meta[b.applied]
	c.note("leader %d epoch %d isr %v", st.Leader, st.LeaderEpoch, st.ISR)
	c.applyMeta(b)
	c.afterStep()
}

func (c *simCluster) stepCrash(id int32) {
	c.record("crash b%d", id)
	c.crash(c.broker(id))
	c.note("recovered to LEO %d, HW %d", c.broker(id).log.LogEndOffset(), c.broker(id).log.HighWatermark())
	c.afterStep()
}

func (c *simCluster) stepRestart(id int32) {
	c.record("restart b%d", id)
	c.restart(c.broker(id))
	c.afterStep()
}

func (c *simCluster) stepCut(a, b int32) {
	c.record("cut %s-%s", endName(a), endName(b))
	if !c.isCut(a, b) {
		c.cuts = append(c.cuts, linkOf(a, b))
	}
	c.afterStep()
}

func (c *simCluster) stepHeal(a, b int32) {
	c.record("heal %s-%s", endName(a), endName(b))
	c.cuts = slices.DeleteFunc(c.cuts, func(l [2]int32) bool { return l == linkOf(a, b) })
	c.afterStep()
}

// stepFence is the controller fencing broker id after its session expired.
func (c *simCluster) stepFence(id int32) {
	c.record("fence b%d", id)
	c.ctl.fence(id)
	c.afterStep()
}

// stepUnfence is broker id's heartbeat once it caught up.
func (c *simCluster) stepUnfence(id int32) {
	c.record("unfence b%d", id)
	c.ctl.unfence(id)
	c.afterStep()
}

func (c *simCluster) stepPreferred() {
	c.record("preferred election")
	c.ctl.preferred()
	c.afterStep()
}

// stepFlush flushes broker id's log (a segment roll, or a clean shutdown).
func (c *simCluster) stepFlush(id int32) {
	c.record("flush b%d", id)
	c.broker(id).log.flush()
	c.afterStep()
}

// stepCheckpoint writes broker id's HW checkpoint.
func (c *simCluster) stepCheckpoint(id int32) {
	c.record("hw-checkpoint b%d", id)
	c.broker(id).log.checkpointHW()
	c.afterStep()
}

func (c *simCluster) stepSlow(id int32) {
	b := c.broker(id)
	b.slow = !b.slow
	c.record("slow b%d %v", id, b.slow)
	c.afterStep()
}

// --- helpers for fixed schedules

// roundTrip runs one whole fetch of broker id: request and response.
func (c *simCluster) roundTrip(id int32) {
	c.stepFetch(id)
	c.deliverNext(msgFetch, id, c.broker(id).fetchLeader)
	c.deliverNext(msgFetchResponse, c.broker(id).fetchLeader, id)
}

// deliverNext delivers the oldest message of kind from -> to, if any.
func (c *simCluster) deliverNext(kind simMsgKind, from, to int32) {
	if m := c.findMsg(kind, from, to); m != nil {
		c.stepDeliver(m.id)
	}
}

func (c *simCluster) dropNext(kind simMsgKind, from, to int32) {
	if m := c.findMsg(kind, from, to); m != nil {
		c.stepDrop(m.id)
	}
}

func (c *simCluster) findMsg(kind simMsgKind, from, to int32) *simMsg {
	for _, m := range c.inflight {
		if m.kind == kind && m.from == from && m.to == to {
			return m
		}
	}
	return nil
}

// metaAll brings every live broker that reaches the controller up to date.
func (c *simCluster) metaAll() {
	for _, b := range c.brokers {
		for b.alive && !c.isCut(b.id, simCtlID) && b.applied < len(c.ctl.meta) {
			c.stepMeta(b.id)
		}
	}
}

// alterAll delivers ISR changes to the controller and its answers back.
func (c *simCluster) alterAll() {
	for c.err == nil {
		i := slices.IndexFunc(c.inflight, func(m *simMsg) bool { return m.kind == msgAlter || m.kind == msgAlterResponse })
		if i < 0 {
			return
		}
		c.stepDeliver(c.inflight[i].id)
	}
}
