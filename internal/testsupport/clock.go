package testsupport

import (
	"sort"
	"sync"
	"time"
)

// Clock is a clock that tests move by hand, with timers; safe for
// concurrent use. Its Now and AfterFunc methods are what components take
// as their injected clock. Time moves only when the test calls Advance,
// which runs the callbacks that became due, in deadline order (ties: the
// order they were armed), on the test's goroutine: a callback that blocks
// (it hands work to a component's goroutine and waits) makes Advance wait
// for it, so the test knows the effects are done when Advance returns.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	seq    uint64
	timers map[uint64]*timer
}

type timer struct {
	at time.Time
	f  func()
}

// NewClock returns a clock showing start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc schedules f at Now()+d (time.AfterFunc's contract); the
// returned function cancels it and reports whether it was still pending.
func (c *Clock) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timers == nil {
		c.timers = make(map[uint64]*timer)
	}
	c.seq++
	id := c.seq
	c.timers[id] = &timer{at: c.now.Add(d), f: f}
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, ok := c.timers[id]
		delete(c.timers, id)
		return ok
	}
}

// Pending returns how many timers are armed.
func (c *Clock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// Advance moves the clock forward by d, running every timer that falls due
// (also those the callbacks arm within the window) at its deadline.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		id, t := c.nextDueLocked(end)
		if t == nil {
			c.now = end
			c.mu.Unlock()
			return
		}
		delete(c.timers, id)
		if t.at.After(c.now) {
			c.now = t.at
		}
		c.mu.Unlock()
		t.f()
	}
}

// nextDueLocked returns the earliest timer due by end (ties: first armed).
// Must be called with c.mu held.
func (c *Clock) nextDueLocked(end time.Time) (uint64, *timer) {
	ids := make([]uint64, 0, len(c.timers))
	for id, t := range c.timers {
		if !t.at.After(end) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return 0, nil
	}
	sort.Slice(ids, func(i, j int) bool {
		a, b := c.timers[ids[i]], c.timers[ids[j]]
		if !a.at.Equal(b.at) {
			return a.at.Before(b.at)
		}
		return ids[i] < ids[j]
	})
	return ids[0], c.timers[ids[0]]
}
