package sharepartition

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Persistence. Every transition other than an acquisition (or a renewal)
// is written to the share coordinator before it takes effect: the
// records wait in a pending state, one WriteShareGroupState carries the
// transitions queued meanwhile (a group commit), and its outcome commits
// or rolls them all back. One write is in flight at a time, so the start
// offsets the coordinator sees only move forward. Acquisitions are not
// written (as in Kafka): after a failover a record acquired but never
// acknowledged is available again with the delivery count last written.

// pendingWrite is the transitions of one acknowledgement, release or lock
// timeout, waiting for their write.
type pendingWrite struct {
	// ranges are the offsets of the transitions, ascending runs: a
	// transition is per record, its bookkeeping per run of records.
	ranges []offsetRange
	count  int        // offsets in ranges
	done   chan int16 // nil: nobody waits (lock timeouts)
	// tallies for the metrics once committed (rejected: archived by a
	// REJECT, counted in archived too)
	accepted, released, archived, rejected int64
}

// offsetRange is the offsets first to last.
type offsetRange struct{ first, last int64 }

// add records the transition of off, which follows the offsets added
// before.
func (pw *pendingWrite) add(off int64, from, to RecordState) {
	if n := len(pw.ranges); n > 0 && pw.ranges[n-1].last+1 == off {
		pw.ranges[n-1].last = off
	} else {
		pw.ranges = append(pw.ranges, offsetRange{off, off})
	}
	pw.count++
	switch {
	case to == Acknowledged:
		pw.accepted++
	case to == Available:
		pw.released++
	case to == Archived && from == Acquired:
		pw.archived++
	}
}

// enqueueLocked queues pw and reports whether the caller must run the
// writer (no write is in flight).
// Must be called with p.mu held.
func (p *Partition) enqueueLocked(pw *pendingWrite) bool {
	p.queue = append(p.queue, pw)
	if p.writing {
		return false
	}
	p.writing = true
	return true
}

// runWriter writes everything queued as one batch. It runs on the
// goroutine of whichever request or timer found no write in flight, which
// so answers its own request with the first write; transitions queued
// meanwhile are written by a goroutine it hands over to (it ends when the
// queue is empty, at the latest a WriteTimeout per batch later), so no
// request waits for the writes of others.
func (p *Partition) runWriter() {
	p.mu.Lock()
	batch := p.queue
	p.queue = nil
	if len(batch) == 0 {
		p.writing = false
		p.mu.Unlock()
		return
	}
	code := kerr.NotLeaderForPartition.Code
	var req *kmsg.WriteShareGroupStateRequest
	if p.state == stateActive {
		req = p.writeRequestLocked(batch)
	}
	p.mu.Unlock()

	if req != nil {
		code = p.write(req)
	}

	p.mu.Lock()
	released := p.finishLocked(batch, code)
	more := len(p.queue) > 0
	if !more {
		p.writing = false
	}
	p.mu.Unlock()
	signal(batch, persisterCodeOrZero(code))
	if released {
		p.opts.OnAvailable(p.key)
	}
	if more {
		go p.runWriter()
	}
}

func signal(batch []*pendingWrite, code int16) {
	for _, pw := range batch {
		if pw.done != nil {
			pw.done <- code
		}
	}
}

func persisterCodeOrZero(code int16) int16 {
	if code == 0 {
		return 0
	}
	return persisterCode(code)
}

// writeRequestLocked builds the WriteShareGroupState of a batch: the new
// states of its records as state batches (runs of equal state and count),
// the start offset they leave, and the delivery complete count from it.
// Must be called with p.mu held.
func (p *Partition) writeRequestLocked(batch []*pendingWrite) *kmsg.WriteShareGroupStateRequest {
	start := p.w.tentativeStart()
	req := kmsg.NewPtrWriteShareGroupStateRequest()
	req.Version = 1
	req.GroupID = p.key.Group
	rt := kmsg.NewWriteShareGroupStateRequestTopic()
	rt.TopicID = p.key.TopicID
	rp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	rp.Partition, rp.StateEpoch, rp.LeaderEpoch = p.key.Partition, p.stateEpoch, p.leaderEpoch
	rp.StartOffset, rp.DeliveryCompleteCount = start, p.w.completeFrom(start)
	rp.StateBatches = stateBatches(&p.w, batch)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// stateBatches run-length encodes the tentative states of the batch's
// offsets that are still in the window.
func stateBatches(w *window, batch []*pendingWrite) []kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch {
	ranges := batch[0].ranges
	if len(batch) > 1 { // one transition's ranges ascend already
		ranges = nil
		for _, pw := range batch {
			ranges = append(ranges, pw.ranges...)
		}
		slices.SortFunc(ranges, func(x, y offsetRange) int { return cmpOffset(x.first, y.first) })
	}
	var out []kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch
	next := w.start // offsets below are out of the window or written already
	for _, rg := range ranges {
		for off := max(rg.first, next); off <= min(rg.last, w.end()); off++ {
			r := w.at(off)
			if n := len(out); n > 0 {
				last := &out[n-1]
				if last.LastOffset+1 == off && last.DeliveryState == int8(r.state) && last.DeliveryCount == r.deliveryCount {
					last.LastOffset = off
					continue
				}
			}
			sb := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
			sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = off, off, int8(r.state), r.deliveryCount
			out = append(out, sb)
		}
		next = max(next, rg.last+1)
	}
	return out
}

// write sends one state write; 0 or the share coordinator's error code.
func (p *Partition) write(req *kmsg.WriteShareGroupStateRequest) int16 {
	ctx, cancel := context.WithTimeout(context.Background(), p.opts.WriteTimeout)
	defer cancel()
	resp, err := p.opts.Store.WriteShareGroupState(ctx, req)
	if err != nil || resp == nil {
		p.logger.Warn("sharepartition: writing the share-partition state failed", "err", err)
		return kerr.CoordinatorNotAvailable.Code
	}
	for _, t := range resp.Topics {
		for _, rp := range t.Partitions {
			if rp.ErrorCode != 0 {
				p.logger.Warn("sharepartition: the share coordinator refused a state write", "code", rp.ErrorCode)
			}
			return rp.ErrorCode
		}
	}
	return kerr.UnknownServerError.Code
}

// finishLocked commits or rolls back a written batch and reports whether
// records may be acquirable now that were not: some became Available, or
// the start offset moved (the window, bounded by
// share.partition.max.record.locks, has room for new records). A fenced
// epoch fences the partition: a newer leader or state epoch owns the
// share-partition now.
// Must be called with p.mu held.
func (p *Partition) finishLocked(batch []*pendingWrite, code int16) (released bool) {
	for _, pw := range batch {
		for _, rg := range pw.ranges {
			for off := max(rg.first, p.w.start); off <= min(rg.last, p.w.end()); off++ {
				p.finishRecordLocked(off, code, &released)
			}
		}
		if code == 0 {
			p.stats.accepted.Add(pw.accepted)
			p.stats.released.Add(pw.released)
			p.stats.archived.Add(pw.archived)
			p.stats.rejected.Add(pw.rejected)
		}
	}
	if code == kerr.FencedStateEpoch.Code || code == kerr.FencedLeaderEpoch.Code {
		if p.state == stateActive {
			p.becomeLocked(stateFenced)
			p.logger.Warn("sharepartition: fenced by the share coordinator", "code", code)
		}
	}
	moved := p.w.advance()
	if code != 0 || p.timerStop == nil {
		// A rollback gives records their locks back, which may expire
		// before the timer; commits only take locks away (a timer that
		// finds nothing expired arms itself again).
		p.armTimerLocked()
	}
	return released || moved
}

// finishRecordLocked commits (code 0) or rolls back the pending transition
// of the record at off, setting released when it became Available.
// Must be called with p.mu held.
func (p *Partition) finishRecordLocked(off int64, code int16, released *bool) {
	r := p.w.at(off)
	if !r.pending {
		return
	}
	if code != 0 {
		r.rollback()
	} else {
		r.commit()
	}
	if r.state == Available {
		p.w.lowerAvail(off)
		*released = *released || code == 0
	}
}

func cmpOffset(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
