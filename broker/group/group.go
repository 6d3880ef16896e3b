package group

import (
	"context"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// group is one group id on a led partition: a classic group, a KIP-848
// consumer group, or (both nil) a group that was just created. Its goroutine
// (loop) owns every field below the channels; other goroutines reach the
// state only through run.
type group struct {
	id string
	c  *Coordinator
	s  *shard

	events   chan func()   // work for the group goroutine
	stop     chan struct{} // closed to unload the group
	stopOnce sync.Once
	done     chan struct{} // closed when the goroutine has exited

	// summary is what ListGroups shows; written by the group goroutine.
	summary atomic.Pointer[groupSummary]

	// Owned by the group goroutine.
	classic  *classicGroup
	consumer *consumerGroup
	offsets  map[string]map[int32]offsetValue
	// pendingTxn holds the offsets of open transactions by producer id;
	// seq is the last write's order (txn_offsets.go).
	pendingTxn map[int64]map[topicPartition]offsetValue
	seq        int64
	// fresh: created by a request and not written to the log yet.
	fresh    bool
	dead     bool
	timers   map[string]timerEntry
	timerSeq uint64
	deferred []func() // events to run after the current one
	regexes  map[string]*compiledRegex
}

type timerEntry struct {
	seq  uint64
	stop func() bool
}

// groupSummary is the part of a group ListGroups needs.
type groupSummary struct {
	state        string
	protocolType string
	groupType    string // "classic" or "consumer"
}

func newGroup(c *Coordinator, s *shard, id string) *group {
	return &group{
		id: id, c: c, s: s,
		events:  make(chan func()),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		offsets: make(map[string]map[int32]offsetValue),
		timers:  make(map[string]timerEntry),
	}
}

// start launches the group goroutine; loaded groups first re-arm their
// timers (Kafka's onLoaded).
// Must be called with c.mu held (it adds to the shard's WaitGroup).
func (g *group) start(loaded bool) {
	g.refreshSummary()
	g.s.wg.Add(1)
	go g.loop(loaded)
}

func (g *group) loop(loaded bool) {
	defer g.s.wg.Done()
	defer close(g.done)
	if loaded {
		g.exec(g.onLoaded)
		g.refreshSummary()
	}
	for {
		select {
		case <-g.stop:
			g.unload()
			return
		case ev := <-g.events:
			g.exec(ev)
			if g.dead {
				g.stopTimers()
				return
			}
		}
	}
}

// exec runs one event, then the zero-delay timers it armed; a panic is a
// bug in this package, logged so that one group cannot take the broker down.
func (g *group) exec(ev func()) {
	defer func() {
		if r := recover(); r != nil {
			g.c.log.Error("group: panic in group goroutine", "group", g.id, "panic", r, "stack", string(debug.Stack()))
		}
	}()
	ev()
	for len(g.deferred) > 0 && !g.dead {
		next := g.deferred[0]
		g.deferred = g.deferred[1:]
		next()
	}
}

// run executes fn on the group goroutine and waits for it (and for the
// zero-delay timers it armed). It returns false if the group stopped (or ctx
// ended) before fn started.
func (g *group) run(ctx context.Context, fn func()) bool {
	finished := make(chan struct{})
	ev := func() {
		defer close(finished)
		defer g.refreshSummary()
		g.exec(fn)
	}
	select {
	case g.events <- ev:
	case <-g.done:
		return false
	case <-ctx.Done():
		return false
	}
	<-finished
	return true
}

// schedule arms the timer key (replacing an armed one) to run fn on the
// group goroutine after d. A timer that fires after being replaced or
// cancelled does nothing.
func (g *group) schedule(key string, d time.Duration, fn func()) {
	g.cancelTimer(key)
	g.timerSeq++
	seq := g.timerSeq
	fire := func() {
		if t, ok := g.timers[key]; !ok || t.seq != seq {
			return
		}
		delete(g.timers, key)
		fn()
	}
	if d <= 0 {
		g.timers[key] = timerEntry{seq: seq, stop: func() bool { return true }}
		g.deferred = append(g.deferred, fire)
		return
	}
	// The timer goroutine waits for fire to finish, so a test clock that
	// fires timers knows their effects are done when it returns.
	stop := g.c.opts.AfterFunc(d, func() { g.run(context.Background(), fire) })
	g.timers[key] = timerEntry{seq: seq, stop: stop}
}

func (g *group) cancelTimer(key string) {
	if t, ok := g.timers[key]; ok {
		t.stop()
		delete(g.timers, key)
	}
}

func (g *group) stopTimers() {
	for key := range g.timers {
		g.cancelTimer(key)
	}
}

// append writes records to the partition and waits until they are
// committed; the error code is 0 or what the client should get.
func (g *group) append(records []Record) int16 {
	if len(records) == 0 {
		return 0
	}
	if err := g.s.store.Append(g.s.ctx, records); err != nil {
		code := appendErrorCode(err, g.s.ctx.Err() != nil)
		g.c.log.Warn("group: writing __consumer_offsets failed", "group", g.id, "partition", g.s.p, "err", err, "code", code)
		return code
	}
	g.fresh = false
	return 0
}

// markDead removes the group after its tombstones were written; the
// goroutine exits after the current event.
func (g *group) markDead() {
	if g.classic != nil && !g.classic.is(classicDead) {
		g.classic.becomeDead(g.c.nowMs())
	}
	g.dead = true
	g.c.removeGroup(g)
}

// discardIfUnused drops a group a request created but that ended up holding
// nothing worth keeping (for example a JoinGroup that failed validation).
func (g *group) discardIfUnused() {
	if !g.fresh || len(g.offsets) > 0 || len(g.pendingTxn) > 0 {
		return
	}
	if g.classic != nil && (len(g.classic.members) > 0 || len(g.classic.pendingJoin) > 0) {
		return
	}
	if g.consumer != nil && len(g.consumer.members) > 0 {
		return
	}
	g.markDead()
}

// isEmpty: no members (Empty state), so the group may be deleted.
func (g *group) isEmpty() bool {
	switch {
	case g.classic != nil:
		return g.classic.is(classicEmpty)
	case g.consumer != nil:
		return len(g.consumer.members) == 0
	}
	return true
}

func (g *group) refreshSummary() {
	sum := &groupSummary{state: "Empty", groupType: "classic"}
	switch {
	case g.classic != nil:
		sum.state, sum.protocolType = g.classic.state.String(), g.classic.protocolType
	case g.consumer != nil:
		sum.state, sum.protocolType, sum.groupType = g.consumer.state().String(), "consumer", "consumer"
	}
	if g.dead {
		sum.state = "Dead"
	}
	g.summary.Store(sum)
}

// onLoaded re-arms the timers of a group loaded from the log: session
// timeouts of every member, rebalance timeouts of members that must revoke.
func (g *group) onLoaded() {
	if cg := g.classic; cg != nil {
		for _, m := range cg.allMembers() {
			g.rescheduleClassicHeartbeat(m, msDuration(m.sessionTimeoutMs))
		}
		if int32(len(cg.members)) > g.c.opts.MaxGroupSize {
			g.prepareRebalance()
		}
	}
	if cg := g.consumer; cg != nil {
		for _, m := range cg.members {
			g.scheduleConsumerSessionTimeout(m.id)
			if m.state == memberUnrevokedPartitions {
				g.scheduleConsumerRebalanceTimeout(m)
			}
		}
	}
}

// unload answers parked requests NOT_COORDINATOR (Kafka's onUnloaded) and
// stops the timers.
func (g *group) unload() {
	g.stopTimers()
	if cg := g.classic; cg != nil {
		for _, m := range cg.allMembers() {
			r := newJoinResponse()
			r.MemberID, r.ErrorCode = m.id, codeNotCoordinator
			cg.completeJoin(m, r)
			cg.completeSync(m, syncError(codeNotCoordinator))
		}
		if !cg.is(classicDead) {
			cg.becomeDead(g.c.nowMs())
		}
	}
	g.dead = true
	g.refreshSummary()
}
