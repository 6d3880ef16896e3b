package protocol

import (
	"time"
)

// Muting (KIP-219). A client over a quota is answered at once, the
// response carrying throttle_time_ms, and the broker then reads nothing
// more from the connection for that long: a client that honours the
// throttle loses nothing, one that ignores it (or speaks a version from
// before KIP-219) has its next requests wait unread. Kafka mutes the
// channel when the quota manager throttles it and unmutes it once the
// throttle time has passed and the response is sent; here the reader
// goroutine waits out the mute before it handles the next request.

// Throttle mutes the connection for d from now: no request read after this
// call is handled before then. Mutes do not add up: the later end wins.
// Safe from any goroutine (a deferred response throttles from the writer).
func (c *ConnInfo) Throttle(d time.Duration) {
	if d <= 0 {
		return
	}
	until := time.Now().Add(d).UnixNano()
	for {
		cur := c.mutedUntil.Load()
		if cur >= until || c.mutedUntil.CompareAndSwap(cur, until) {
			return
		}
	}
}

// MutedFor returns how long the connection stays muted, 0 if it is not.
func (c *ConnInfo) MutedFor() time.Duration {
	return max(time.Until(time.Unix(0, c.mutedUntil.Load())), 0)
}

// waitUnmuted blocks until the connection's mute ends; false if the
// connection closes first.
func (c *conn) waitUnmuted() bool {
	for {
		d := c.info.MutedFor()
		if d <= 0 {
			return true
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-c.ctx.Done():
			t.Stop()
			return false
		}
	}
}
