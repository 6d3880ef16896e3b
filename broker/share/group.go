package share

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"sync/atomic"

	"github.com/kbroker/kbroker/internal/actor"
	"github.com/kbroker/kbroker/internal/coordkit"
)

// groupState is a share group's state (Kafka's ShareGroupState), derived
// from its members:
//
//	      first member joins          last member leaves or is fenced
//	Empty ──────────────────> Stable ───────────────────────────────> Empty
//	  │                                       DeleteGroups (Empty only)
//	  └──────────────────────────────────────────────────────────────> Dead
type groupState int8

const (
	stateEmpty groupState = iota
	stateStable
	stateDead
)

var groupStateNames = [...]string{stateEmpty: "Empty", stateStable: "Stable", stateDead: "Dead"}

func (s groupState) String() string {
	if int(s) < len(groupStateNames) {
		return groupStateNames[s]
	}
	return fmt.Sprintf("groupState(%d)", int8(s))
}

// member is a share group member: its subscription and its current
// assignment, what its two records hold.
type member struct {
	id   string
	meta memberMetadata
	cur  currentAssignment
}

func (m *member) clone() *member {
	c := *m
	c.meta.topics = slices.Clone(m.meta.topics)
	c.cur.assigned = m.cur.assigned.clone()
	return &c
}

// shareGroup is one share group. Its goroutine (loop) owns every field
// below the channels; other goroutines reach it only through run.
type shareGroup struct {
	id string
	c  *Coordinator
	s  *shard

	actor  *actor.Actor
	timers *actor.Timers // owned by the group goroutine

	summary atomic.Pointer[groupSummary]

	// Owned by the group goroutine.
	epoch           int32
	metadataHash    int64
	assignmentEpoch int32
	members         map[string]*member
	target          map[string]assignment
	state           stateMetadata
	persisted       bool // the group has records in the log
	dead            bool
}

// groupSummary is what ListGroups, GroupType and Summaries read without
// the goroutine.
type groupSummary struct {
	state   groupState
	members int
}

func newShareGroup(c *Coordinator, s *shard, id string) *shareGroup {
	a := actor.New()
	return &shareGroup{
		id: id, c: c, s: s, actor: a, timers: actor.NewTimers(a, c.opts.AfterFunc),
		members: make(map[string]*member), target: make(map[string]assignment), state: newStateMetadata(),
	}
}

func (g *shareGroup) groupState() groupState {
	switch {
	case g.dead:
		return stateDead
	case len(g.members) == 0:
		return stateEmpty
	}
	return stateStable
}

// start launches the group goroutine; a loaded group first re-arms its
// members' session timeouts (Kafka's onLoaded).
// Must be called with c.mu held (it adds to the shard's WaitGroup).
func (g *shareGroup) start(loaded bool) {
	g.refreshSummary()
	g.s.wg.Add(1)
	go g.loop(loaded)
}

func (g *shareGroup) loop(loaded bool) {
	defer g.s.wg.Done()
	if loaded {
		g.exec(func() {
			for _, id := range sortedKeys(g.members) {
				g.scheduleSessionTimeout(id)
			}
		})
	}
	g.actor.Loop(func(ev func()) {
		g.exec(ev)
		g.refreshSummary()
	}, func() bool { return g.dead }, func() {
		g.timers.CancelAll()
		g.dead = true
		g.refreshSummary()
	})
}

// exec runs one event; a panic is a bug of this package, logged so that
// one group cannot take the broker down.
func (g *shareGroup) exec(ev func()) {
	defer func() {
		if r := recover(); r != nil {
			g.c.log.Error("share: panic in group goroutine", "group", g.id, "panic", r, "stack", string(debug.Stack()))
		}
	}()
	ev()
}

// run executes fn on the group goroutine and waits for it; false if the
// group stopped (or ctx ended) before fn started.
func (g *shareGroup) run(ctx context.Context, fn func()) bool { return g.actor.Run(ctx, fn) }

// append writes records and waits until they are committed; 0 or the code
// the client gets.
func (g *shareGroup) append(records []Record) int16 {
	if len(records) == 0 {
		return 0
	}
	if err := g.s.store.Append(g.s.ctx, records); err != nil {
		code := coordkit.AppendErrorCode(err, g.s.ctx.Err() != nil)
		g.c.log.Warn("share: writing __consumer_offsets failed", "group", g.id, "partition", g.s.p, "err", err, "code", code)
		return code
	}
	g.persisted = true
	return 0
}

func (g *shareGroup) refreshSummary() {
	g.summary.Store(&groupSummary{state: g.groupState(), members: len(g.members)})
}

// discardIfUnused drops a group a request created but did not write.
func (g *shareGroup) discardIfUnused() {
	if !g.persisted && len(g.members) == 0 {
		g.markDead()
	}
}

// markDead removes the group; its goroutine exits after the current event.
func (g *shareGroup) markDead() {
	g.dead = true
	g.c.removeGroup(g)
}

func sessionKey(member string) string { return "session/" + member }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
