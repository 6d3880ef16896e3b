package replication

import "sync"

// Waiter is woken (without blocking the waker) when something it watches
// changes: a partition's LEO or HW, or its role. One waiter may watch many
// partitions (a fetch long-poll over several partitions).
type Waiter struct {
	C chan struct{}
}

// NewWaiter returns a waiter with a one-slot wake-up channel.
func NewWaiter() *Waiter { return &Waiter{C: make(chan struct{}, 1)} }

func (w *Waiter) wake() {
	select {
	case w.C <- struct{}{}:
	default:
	}
}

// watchers is a set of waiters, notified on change.
type watchers struct {
	mu  sync.Mutex // guards set
	set map[*Waiter]struct{}
}

func (ws *watchers) add(w *Waiter) func() {
	ws.mu.Lock()
	if ws.set == nil {
		ws.set = make(map[*Waiter]struct{})
	}
	ws.set[w] = struct{}{}
	ws.mu.Unlock()
	return func() {
		ws.mu.Lock()
		delete(ws.set, w)
		ws.mu.Unlock()
	}
}

func (ws *watchers) notify() {
	ws.mu.Lock()
	for w := range ws.set {
		w.wake()
	}
	ws.mu.Unlock()
}
