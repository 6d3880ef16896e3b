// Package actor is the one-goroutine-owns-the-state pattern of kbroker's
// coordinators: an Actor runs functions one at a time on its goroutine,
// and its Timers run functions on it after a delay through an injected
// AfterFunc. Whoever starts the goroutine (Loop) owns it and stops it
// (Stop); every send also selects on the goroutine's end, so nothing blocks
// on a stopped actor.
package actor

import (
	"context"
	"sync"
	"time"
)

// Actor runs functions on its goroutine.
type Actor struct {
	events   chan func()
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

// New returns an actor whose goroutine is not started yet.
func New() *Actor {
	return &Actor{events: make(chan func()), stop: make(chan struct{}), done: make(chan struct{})}
}

// Loop is the actor's goroutine: it runs events until Stop, or until
// after (called after each event) returns true. onStop runs on it last.
func (a *Actor) Loop(exec func(func()), after func() bool, onStop func()) {
	defer close(a.done)
	for {
		select {
		case <-a.stop:
			onStop()
			return
		case ev := <-a.events:
			exec(ev)
			if after() {
				onStop()
				return
			}
		}
	}
}

// Run executes fn on the actor's goroutine and waits for it; false if the
// actor ended (or ctx did) before fn started.
func (a *Actor) Run(ctx context.Context, fn func()) bool {
	finished := make(chan struct{})
	ev := func() {
		defer close(finished)
		fn()
	}
	select {
	case a.events <- ev:
	case <-a.done:
		return false
	case <-ctx.Done():
		return false
	}
	<-finished
	return true
}

// Stop ends the goroutine after its current event; safe to call twice.
func (a *Actor) Stop() { a.stopOnce.Do(func() { close(a.stop) }) }

// Done is closed once the goroutine has ended.
func (a *Actor) Done() <-chan struct{} { return a.done }

// Timers are an actor's named timers. They belong to the actor's
// goroutine: call them only from it.
type Timers struct {
	a         *Actor
	afterFunc func(time.Duration, func()) func() bool
	seq       uint64
	armed     map[string]timer
}

type timer struct {
	seq  uint64
	stop func() bool
}

// NewTimers returns the timers of a.
func NewTimers(a *Actor, afterFunc func(time.Duration, func()) func() bool) *Timers {
	return &Timers{a: a, afterFunc: afterFunc, armed: make(map[string]timer)}
}

// Schedule arms timer key (replacing an armed one) to run fn on the actor
// after d. A timer replaced or cancelled before it fires does nothing. The
// timer's goroutine waits for fn, so a test clock that fires it knows its
// effects are done.
func (t *Timers) Schedule(key string, d time.Duration, fn func()) {
	t.Cancel(key)
	t.seq++
	seq := t.seq
	stop := t.afterFunc(d, func() {
		t.a.Run(context.Background(), func() {
			if cur, ok := t.armed[key]; ok && cur.seq == seq {
				delete(t.armed, key)
				fn()
			}
		})
	})
	t.armed[key] = timer{seq: seq, stop: stop}
}

// Cancel disarms timer key.
func (t *Timers) Cancel(key string) {
	if cur, ok := t.armed[key]; ok {
		cur.stop()
		delete(t.armed, key)
	}
}

// CancelAll disarms every timer.
func (t *Timers) CancelAll() {
	for key := range t.armed {
		t.Cancel(key)
	}
}
