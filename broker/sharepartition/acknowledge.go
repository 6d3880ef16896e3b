package sharepartition

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ValidateAckBatches checks a partition's acknowledgement batches the way
// Kafka's KafkaApis does before they reach the partition: each batch has
// first <= last, one type or one per offset, types that exist (RENEW only
// when allowRenew: ShareFetch/ShareAcknowledge v2 with IsRenewAck), and the
// batches ascend without overlapping. Any failure is INVALID_REQUEST for
// the partition.
func ValidateAckBatches(batches []AckBatch, allowRenew bool) int16 {
	prevLast := int64(-1)
	maxType := AckReject
	if allowRenew {
		maxType = AckRenew
	}
	for i, b := range batches {
		switch {
		case b.FirstOffset < 0 || b.LastOffset < b.FirstOffset:
			return kerr.InvalidRequest.Code
		case i > 0 && b.FirstOffset <= prevLast:
			return kerr.InvalidRequest.Code
		case len(b.Types) == 0:
			return kerr.InvalidRequest.Code
		case len(b.Types) > 1 && int64(len(b.Types)) != b.LastOffset-b.FirstOffset+1:
			return kerr.InvalidRequest.Code
		}
		for _, t := range b.Types {
			if t < AckGap || t > maxType {
				return kerr.InvalidRequest.Code
			}
		}
		prevLast = b.LastOffset
	}
	return 0
}

// step is one planned record transition of an acknowledgement.
type step struct {
	off    int64
	to     RecordState
	count  int16
	renew  bool // RENEW: the lock is extended, the state stays
	reject bool // REJECT (for the metrics: a rejection archives)
}

// planAcks decides what the batches do to the window, or fails without
// changing anything (Kafka rolls the partition's whole acknowledgement
// back on an error): offsets below the start offset are not acquired
// (INVALID_RECORD_STATE), offsets past the end offset were never fetched
// (INVALID_REQUEST), and every record must be Acquired by member and not
// in a pending transition (INVALID_RECORD_STATE). It is a pure function of
// the window; the plan's steps are made as they are walked (ackPlan.each),
// with nothing allocated per record.
func planAcks(w *window, member string, batches []AckBatch, deliveryLimit int16) (ackPlan, int16) {
	for _, b := range batches {
		switch {
		case w.size() == 0 || b.FirstOffset < w.start:
			return ackPlan{}, kerr.InvalidRecordState.Code
		case b.LastOffset > w.end():
			return ackPlan{}, kerr.InvalidRequest.Code
		}
		for off := b.FirstOffset; off <= b.LastOffset; off++ {
			r := w.at(off)
			if r.state != Acquired || r.pending || r.member != member {
				return ackPlan{}, kerr.InvalidRecordState.Code
			}
		}
	}
	return ackPlan{w: w, batches: batches, limit: deliveryLimit}, 0
}

// ackPlan is the validated acknowledgement of planAcks.
type ackPlan struct {
	w       *window
	batches []AckBatch
	limit   int16
}

// each calls fn with every step of the plan, in offset order, computed
// from the window as planAcks saw it (fn may change the record of the
// step it gets, not the later ones).
func (pl ackPlan) each(fn func(step)) {
	for _, b := range pl.batches {
		for off := b.FirstOffset; off <= b.LastOffset; off++ {
			t := b.Types[0]
			if len(b.Types) > 1 {
				t = b.Types[off-b.FirstOffset]
			}
			fn(stepFor(off, t, pl.w.at(off).deliveryCount, pl.limit))
		}
	}
}

// stepFor maps an acknowledgement type to a record transition (Kafka's
// SharePartition.updateRecordState): GAP and REJECT archive, ACCEPT
// acknowledges, RELEASE makes the record available again unless it was
// delivered delivery.count.limit times.
func stepFor(off int64, t AckType, count, limit int16) step {
	switch t {
	case AckAccept:
		return step{off: off, to: Acknowledged, count: count}
	case AckRelease:
		if count >= limit {
			return step{off: off, to: Archived, count: count}
		}
		return step{off: off, to: Available, count: count}
	case AckRenew:
		return step{off: off, to: Acquired, count: count, renew: true}
	case AckReject:
		return step{off: off, to: Archived, count: count, reject: true}
	}
	return step{off: off, to: Archived, count: count} // GAP
}

// Acknowledge applies member's acknowledgements to this partition and
// returns once their state is written (0), or the error for the whole
// partition with nothing changed: INVALID_REQUEST for malformed batches,
// INVALID_RECORD_STATE for records member does not hold, the share
// coordinator's mapped error when the write fails. allowRenew is true for
// requests with IsRenewAck (v2).
func (p *Partition) Acknowledge(ctx context.Context, member string, batches []AckBatch, allowRenew bool) int16 {
	return p.StartAcknowledge(member, batches, allowRenew)(ctx)
}

// StartAcknowledge is Acknowledge in two steps: the records make their
// transitions (pending) before it returns, so that an acquisition that
// follows sees them; the returned function writes them, if no write is in
// flight, and waits for the outcome (the code Acknowledge returns).
// ShareFetch acquires while its acknowledgements are written, as Kafka's
// KafkaApis handles both at once.
func (p *Partition) StartAcknowledge(member string, batches []AckBatch, allowRenew bool) (wait func(context.Context) int16) {
	done := func(code int16) func(context.Context) int16 { return func(context.Context) int16 { return code } }
	cfg := p.config()
	if code := ValidateAckBatches(batches, allowRenew && cfg.RenewAcknowledge); code != 0 {
		return done(code)
	}
	p.mu.Lock()
	if p.state != stateActive {
		defer p.mu.Unlock()
		return done(p.stateCodeLocked())
	}
	plan, code := planAcks(&p.w, member, batches, cfg.DeliveryCountLimit)
	if code != 0 {
		p.mu.Unlock()
		return done(code)
	}
	pw := &pendingWrite{done: make(chan int16, 1)}
	renewTo := p.opts.NowMs() + cfg.RecordLockDuration.Milliseconds()
	plan.each(func(s step) {
		r := p.w.at(s.off)
		if s.renew {
			r.lockExpiryMs = renewTo
			return
		}
		pw.add(s.off, r.state, s.to)
		if s.reject {
			pw.rejected++
		}
		r.transition(s.to, s.count)
	})
	return p.queueWrite(pw) // only renewals: nothing to write
}

// writeAndWait queues pw (unless it is empty), runs the writer if no write
// is in flight, and waits for pw's outcome. It unlocks p.mu.
// Must be called with p.mu held.
func (p *Partition) writeAndWait(ctx context.Context, pw *pendingWrite) int16 {
	return p.queueWrite(pw)(ctx)
}

// queueWrite queues pw (unless it is empty) and returns what writes it
// (when no write is in flight) and waits for its outcome. It unlocks
// p.mu.
// Must be called with p.mu held.
func (p *Partition) queueWrite(pw *pendingWrite) func(context.Context) int16 {
	if pw.count == 0 {
		p.mu.Unlock()
		return func(context.Context) int16 { return 0 }
	}
	writer := p.enqueueLocked(pw)
	p.mu.Unlock()
	return func(ctx context.Context) int16 {
		if writer {
			p.runWriter()
		}
		select {
		case code := <-pw.done:
			return code
		case <-ctx.Done():
			// The write goes on; its outcome is not this request's to report.
			return kerr.RequestTimedOut.Code
		}
	}
}

// ReleaseMember makes every record member holds available again (archived
// at the delivery limit) and writes that: the member closed its share
// session, left, or its connection closed (Kafka's
// releaseAcquiredRecords). It returns the write's code.
func (p *Partition) ReleaseMember(ctx context.Context, member string) int16 {
	cfg := p.config()
	p.mu.Lock()
	if p.state != stateActive {
		defer p.mu.Unlock()
		return p.stateCodeLocked()
	}
	pw := &pendingWrite{done: make(chan int16, 1)}
	for off := p.w.start; off <= p.w.end(); off++ {
		r := p.w.at(off)
		if r.state == Acquired && !r.pending && r.member == member {
			s := stepFor(off, AckRelease, r.deliveryCount, cfg.DeliveryCountLimit)
			pw.add(off, r.state, s.to)
			r.transition(s.to, s.count)
		}
	}
	return p.writeAndWait(ctx, pw)
}
