package sharepartition

import (
	"sync/atomic"
	"time"
)

// Acquisition locks. Every acquired record carries its lock expiry; one
// timer per partition is armed for the earliest. When it fires, the
// expired records are released (archived at the delivery limit) and that
// is written like an acknowledgement (Kafka's acquisition lock timeout
// task, which also writes the state).

// armTimerLocked arms the timer for the earliest lock expiry of a settled
// Acquired record, unless it is armed for that time or earlier already.
// Must be called with p.mu held.
func (p *Partition) armTimerLocked() {
	earliest := int64(-1)
	for i := range p.w.size() {
		r := p.w.rec(i)
		if r.state == Acquired && !r.pending && (earliest < 0 || r.lockExpiryMs < earliest) {
			earliest = r.lockExpiryMs
		}
	}
	if earliest < 0 || p.state != stateActive {
		return // a timer that finds nothing expired does nothing
	}
	if p.timerStop != nil && p.timerAtMs <= earliest {
		return
	}
	if p.timerStop != nil {
		p.timerStop()
	}
	p.timerAtMs = earliest
	d := time.Duration(earliest-p.opts.NowMs()) * time.Millisecond
	p.timerStop = p.opts.AfterFunc(max(d, 0), p.onLockTimer)
}

// onLockTimer releases the records whose lock expired. It runs on the
// timer's goroutine, which writes the release itself.
func (p *Partition) onLockTimer() {
	cfg := p.config()
	p.mu.Lock()
	p.timerStop = nil
	if p.state != stateActive {
		p.mu.Unlock()
		return
	}
	now := p.opts.NowMs()
	pw := &pendingWrite{}
	for off := p.w.start; off <= p.w.end(); off++ {
		r := p.w.at(off)
		if r.state == Acquired && !r.pending && r.lockExpiryMs <= now {
			s := stepFor(off, AckRelease, r.deliveryCount, cfg.DeliveryCountLimit)
			pw.add(off, r.state, s.to)
			r.transition(s.to, s.count)
		}
	}
	p.stats.lockTimeouts.Add(int64(pw.count))
	writer := pw.count > 0 && p.enqueueLocked(pw)
	p.armTimerLocked()
	p.mu.Unlock()
	if writer {
		p.runWriter()
	}
}

// counters are a partition's cumulative metrics.
type counters struct {
	acquired, accepted, released, archived, rejected, lockTimeouts atomic.Int64
}

// Stats is a share-partition's metrics.
type Stats struct {
	StartOffset, EndOffset int64
	// Acquired, Available and Complete count the window's records by
	// state now (Complete: acknowledged or archived, waiting for the start
	// offset to pass them).
	Acquired, Available, Complete int64
	// Lag is the records not yet delivered to completion: the high
	// watermark minus the start offset minus Complete.
	Lag int64
	// Cumulative counts since this leadership began (RejectedTotal: the
	// archivals REJECT made, within ArchivedTotal).
	AcquiredTotal, AcceptedTotal, ReleasedTotal, ArchivedTotal, RejectedTotal, LockTimeoutsTotal int64
}

// Stats returns the partition's metrics.
func (p *Partition) Stats() Stats {
	p.mu.Lock()
	s := Stats{StartOffset: p.w.start, EndOffset: p.w.end()}
	for i := range p.w.size() {
		switch st := p.w.rec(i).state; {
		case st == Acquired:
			s.Acquired++
		case st == Available:
			s.Available++
		case st.terminal():
			s.Complete++
		}
	}
	p.mu.Unlock()
	s.Lag = max(p.log.HighWatermark()-s.StartOffset-s.Complete, 0)
	s.AcquiredTotal, s.AcceptedTotal = p.stats.acquired.Load(), p.stats.accepted.Load()
	s.ReleasedTotal, s.ArchivedTotal, s.LockTimeoutsTotal = p.stats.released.Load(), p.stats.archived.Load(), p.stats.lockTimeouts.Load()
	s.RejectedTotal = p.stats.rejected.Load()
	return s
}
