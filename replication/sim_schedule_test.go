package replication

import "time"

// The random scheduler: at each step it lists what could happen now, each
// with a weight, and the seeded generator picks one. Faults (crashes,
// partitions, drops, slow followers) are rare beside the traffic they
// disturb, so that schedules make progress between them.

// simChoice is a step the scheduler may take, with its weight.
type simChoice struct {
	weight float64
	kind   simChoiceKind
	id     int32 // the broker (or a link's first end)
	peer   int32 // a link's other end
	msg    int
}

type simChoiceKind int8

const (
	choiceProduceAll simChoiceKind = iota
	choiceProduceOne
	choiceShrink
	choiceFetch
	choiceMeta
	choiceUnfence
	choiceDeliver
	choiceDrop
	choiceTick
	choiceSettleTick
	choiceCrash
	choiceFlush
	choiceCheckpoint
	choiceSlow
	choiceRestart
	choiceFence
	choiceCut
	choiceHeal
	choicePreferred
	choiceDeleteRecords
)

type simChoices []simChoice

func (cs *simChoices) add(w float64, kind simChoiceKind, id, peer int32, msg int) {
	if w > 0 {
		*cs = append(*cs, simChoice{weight: w, kind: kind, id: id, peer: peer, msg: msg})
	}
}

// pick runs one of cs, drawn by weight.
func (c *simCluster) pick(cs simChoices) {
	total := 0.0
	for _, ch := range cs {
		total += ch.weight
	}
	x := c.rng.Float64() * total
	for _, ch := range cs {
		if x -= ch.weight; x < 0 {
			c.run(ch)
			return
		}
	}
	c.run(cs[len(cs)-1])
}

func (c *simCluster) run(ch simChoice) {
	switch ch.kind {
	case choiceProduceAll:
		c.stepProduce(ch.id, -1, 1+c.rng.IntN(3))
	case choiceProduceOne:
		c.stepProduce(ch.id, 1, 1+c.rng.IntN(3))
	case choiceShrink:
		c.stepShrink(ch.id)
	case choiceFetch:
		c.stepFetch(ch.id)
	case choiceMeta:
		c.stepMeta(ch.id)
	case choiceUnfence:
		c.stepUnfence(ch.id)
	case choiceDeliver:
		c.stepDeliver(ch.msg)
	case choiceDrop:
		c.stepDrop(ch.msg)
	case choiceTick:
		c.stepTick(c.randomTick())
	case choiceSettleTick:
		// Settling: time only moves past backoffs, never past the lag limit.
		c.stepTick(time.Duration(50+c.rng.IntN(450)) * time.Millisecond)
	default:
		c.runFault(ch)
	}
}

func (c *simCluster) runFault(ch simChoice) {
	switch ch.kind {
	case choiceCrash:
		c.stepCrash(ch.id)
	case choiceFlush:
		c.stepFlush(ch.id)
	case choiceCheckpoint:
		c.stepCheckpoint(ch.id)
	case choiceSlow:
		c.stepSlow(ch.id)
	case choiceRestart:
		c.stepRestart(ch.id)
	case choiceFence:
		c.stepFence(ch.id)
	case choiceCut:
		c.stepCut(ch.id, ch.peer)
	case choiceHeal:
		c.stepHeal(ch.id, ch.peer)
	case choicePreferred:
		c.stepPreferred()
	case choiceDeleteRecords:
		hw, _, start := c.broker(ch.id).part.Offsets()
		c.stepDeleteRecords(ch.id, start+c.rng.Int64N(hw-start+1))
	}
}

// randomStep takes one step of any kind.
func (c *simCluster) randomStep() {
	cs := c.choices[:0]
	c.trafficChoices(&cs, true)
	c.faultChoices(&cs)
	c.choices = cs
	c.pick(cs)
}

// trafficChoices are the steps of a healthy cluster: fetch, deliver,
// metadata, unfencing, the ISR check, time. random adds produces and
// message drops.
func (c *simCluster) trafficChoices(cs *simChoices, random bool) {
	for _, b := range c.brokers {
		if !b.alive {
			continue
		}
		if role, _ := b.roleEpoch(); role == RoleLeader {
			if random {
				cs.add(4, choiceProduceAll, b.id, 0, 0)
				cs.add(2, choiceProduceOne, b.id, 0, 0)
			}
			cs.add(1, choiceShrink, b.id, 0, 0)
		}
		if b.fetcher != nil && !b.fetching && !c.clock.Now().Before(b.readyAt) {
			cs.add(slowWeight(b, 8), choiceFetch, b.id, 0, 0)
		}
		if b.applied < len(c.ctl.meta) && !c.isCut(b.id, simCtlID) {
			cs.add(5, choiceMeta, b.id, 0, 0)
		}
		if !c.ctl.live(b.id) && !c.isCut(b.id, simCtlID) {
			cs.add(3, choiceUnfence, b.id, 0, 0)
		}
	}
	for _, m := range c.inflight {
		w := 5.0
		if end := c.brokerEnd(m); end != nil && end.slow {
			w = 0.3
		}
		cs.add(w, choiceDeliver, 0, 0, m.id)
		if random {
			cs.add(0.15, choiceDrop, 0, 0, m.id)
		}
	}
	if random {
		cs.add(2, choiceTick, 0, 0, 0)
	} else {
		cs.add(1, choiceSettleTick, 0, 0, 0)
	}
}

func slowWeight(b *simBroker, w float64) float64 {
	if b.slow {
		return w / 20
	}
	return w
}

// brokerEnd is the follower end of a fetch, or nil.
func (c *simCluster) brokerEnd(m *simMsg) *simBroker {
	switch m.kind {
	case msgFetch:
		return c.broker(m.from)
	case msgFetchResponse:
		return c.broker(m.to)
	}
	return nil
}

// randomTick is mostly short, sometimes past the lag limit.
func (c *simCluster) randomTick() time.Duration {
	if c.rng.IntN(8) == 0 {
		return c.cfg.LagMax/2 + time.Duration(c.rng.Int64N(int64(c.cfg.LagMax)))
	}
	return time.Duration(50+c.rng.IntN(1500)) * time.Millisecond
}

func (c *simCluster) faultChoices(cs *simChoices) {
	dead := 0
	for _, b := range c.brokers {
		if !b.alive {
			dead++
		}
	}
	for _, b := range c.brokers {
		switch {
		case b.alive:
			if role, _ := b.roleEpoch(); role == RoleLeader {
				cs.add(0.15, choiceDeleteRecords, b.id, 0, 0)
			}
			cs.add(0.4, choiceCrash, b.id, 0, 0)
			cs.add(0.3, choiceFlush, b.id, 0, 0)
			cs.add(0.8, choiceCheckpoint, b.id, 0, 0)
			cs.add(0.2, choiceSlow, b.id, 0, 0)
		case !c.isCut(b.id, simCtlID):
			cs.add(1.5+float64(dead), choiceRestart, b.id, 0, 0)
		}
		if c.ctl.live(b.id) && (!b.alive || c.isCut(b.id, simCtlID)) {
			cs.add(2, choiceFence, b.id, 0, 0)
		}
	}
	ends := len(c.brokers) + 1 // the controller is end 0
	a, b := int32(c.rng.IntN(ends)), int32(c.rng.IntN(ends))
	if a != b && !c.isCut(a, b) {
		cs.add(0.4, choiceCut, a, b, 0)
	}
	for _, l := range c.cuts {
		cs.add(0.8, choiceHeal, l[0], l[1], 0)
	}
	cs.add(0.3, choicePreferred, 0, 0, 0)
}

// settle heals every fault and runs the healthy cluster until it has
// converged, then once more after a last acks=all produce: logs converge
// after healing, and every replica rejoins the ISR.
func (c *simCluster) settle() {
	c.record("--- heal everything and settle")
	c.cuts = nil
	for _, b := range c.brokers {
		b.slow = false
		if !b.alive {
			c.stepRestart(b.id)
		}
	}
	if !c.settleUntilConverged() || c.err != nil {
		return
	}
	// A produce may still meet a shrink sent before the heal
	// (NOT_ENOUGH_REPLICAS_AFTER_APPEND): the producer retries.
	for range 3 {
		acked := len(c.acked)
		c.stepProduce(c.ctl.leader, -1, 1)
		if !c.settleUntilConverged() || len(c.acked) > acked {
			return
		}
	}
	c.fail("the final acks=all produce was never acknowledged")
}

// simSettleSteps bounds the healthy steps convergence may take.
const simSettleSteps = 600

func (c *simCluster) settleUntilConverged() bool {
	for range simSettleSteps {
		if c.err != nil {
			return false
		}
		if ok, _ := c.converged(); ok {
			return true
		}
		cs := c.choices[:0]
		c.trafficChoices(&cs, false)
		c.choices = cs
		c.pick(cs)
	}
	_, why := c.converged()
	c.fail("no convergence within %d steps after healing: %s", simSettleSteps, why)
	return false
}
