package replication

import "sync"

// Events is a set of partition changes a Waiter is woken by.
type Events uint8

const (
	// LogEndMoved: records were appended (the LEO moved). A follower's
	// long poll waits for it: it reads up to the log end.
	LogEndMoved Events = 1 << iota
	// HighWatermarkMoved: the HW moved, or the ISR or min.insync.replicas
	// changed (which decide it and an acks=all answer). A consumer's long
	// poll and an acks=all produce wait for it.
	HighWatermarkMoved
	// RoleChanged: the role, leader or epoch changed. Every waiter is woken
	// by it, whatever it asked for: its answer is no longer the one it
	// waits for.
	RoleChanged

	// AllEvents wakes a waiter on every change.
	AllEvents = LogEndMoved | HighWatermarkMoved | RoleChanged
)

// Waiter is woken (without blocking the waker) when something it watches
// changes: a partition's LEO or HW, or its role. One waiter may watch many
// partitions (a fetch long-poll over several partitions).
//
// A waiter asks only for the events its answer depends on: on a replicated
// partition every produced batch moves the LEO once and the HW once more
// (when the last in-sync follower has fetched it), so a follower's fetch
// woken by HW moves, or a consumer's by appends, would read its partitions
// again for nothing on every record.
type Waiter struct {
	C      chan struct{}
	events Events
	// onChange, if set, is told of every change of a partition the waiter
	// watches, whatever its events: an append, an HW or log start move, a
	// change of role, epoch, ISR or follower states (changes.go). It runs
	// with the watchers' lock held and must take leaf locks only.
	onChange func(*Partition)
}

// NewWaiter returns a waiter woken by every event, with a one-slot wake-up
// channel.
func NewWaiter() *Waiter { return NewWaiterFor(AllEvents) }

// NewWaiterFor returns a waiter woken by events (and always by RoleChanged).
func NewWaiterFor(events Events) *Waiter {
	return &Waiter{C: make(chan struct{}, 1), events: events | RoleChanged}
}

func (w *Waiter) wake() {
	select {
	case w.C <- struct{}{}:
	default:
	}
}

// watchers is a set of waiters, notified on change.
type watchers struct {
	owner *Partition // the partition watched, told to onChange
	mu    sync.Mutex // guards set
	set   map[*Waiter]struct{}
}

func (ws *watchers) add(w *Waiter) {
	ws.mu.Lock()
	if ws.set == nil {
		ws.set = make(map[*Waiter]struct{})
	}
	ws.set[w] = struct{}{}
	ws.mu.Unlock()
}

func (ws *watchers) remove(w *Waiter) {
	ws.mu.Lock()
	delete(ws.set, w)
	ws.mu.Unlock()
}

// notify wakes the waiters that asked for any of ev.
func (ws *watchers) notify(ev Events) {
	if ev == 0 {
		return
	}
	ws.mu.Lock()
	for w := range ws.set {
		if w.onChange != nil {
			w.onChange(ws.owner)
		}
		if w.events&ev != 0 {
			w.wake()
		}
	}
	ws.mu.Unlock()
}

// changed tells the waiters with an onChange of a change that wakes no
// one: a log start move, a change of the partition's version (idle.go).
func (ws *watchers) changed() {
	ws.mu.Lock()
	for w := range ws.set {
		if w.onChange != nil {
			w.onChange(ws.owner)
		}
	}
	ws.mu.Unlock()
}
