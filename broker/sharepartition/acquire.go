package sharepartition

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/broker/shareconfig"
)

// AcquiredRange is one range of records a ShareFetch hands to a member.
type AcquiredRange = kmsg.ShareFetchResponseTopicPartitionAcquiredRecord

// AcquireRequest is what a ShareFetch asks of one share-partition.
type AcquireRequest struct {
	Member string
	// MaxRecords is the most records to acquire (ShareFetch v1 MaxRecords,
	// bounded by what is left of the request's budget); <= 0 acquires
	// nothing, as Kafka.
	MaxRecords int32
	// BatchSize splits the acquired ranges (ShareFetch v1, BATCH_OPTIMIZED).
	BatchSize int32
	Mode      AcquireMode
	// Batches are the batches the broker read from the log starting at
	// NextFetchOffset, in offset order; Aborted the aborted transactions
	// of the read (read_committed).
	Batches []Batch
	Aborted []AbortedTxn
}

// Acquire gives member the Available records of the fetched batches, up
// to MaxRecords (whole batches in BatchOptimized mode) and below the high
// watermark (the last stable offset for read_committed), extending the
// window with new records while it is smaller than
// share.partition.max.record.locks. Each acquired record's delivery count
// goes up and it is locked for share.record.lock.duration.ms. Records of
// aborted transactions are archived, never handed out (read_committed).
// The code is non-zero when the partition is not Active.
func (p *Partition) Acquire(req AcquireRequest) ([]AcquiredRange, int16) {
	cfg := p.config()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state != stateActive {
		return nil, p.stateCodeLocked()
	}
	if ls := p.log.LogStartOffset(); ls > p.w.start {
		p.w.dropBelow(ls)
	}
	a := acquisition{
		p: p, cfg: cfg, member: req.Member, remaining: req.MaxRecords,
		limit: p.acquireLimit(cfg), expiry: p.opts.NowMs() + cfg.RecordLockDuration.Milliseconds(),
		batchSize: req.BatchSize, mode: req.Mode,
	}
	aborted := abortedBatches(req.Batches, req.Aborted)
	for i, b := range req.Batches {
		if a.remaining <= 0 || a.full {
			break
		}
		a.batch(b, cfg.ReadCommitted && aborted[i], req.Mode)
	}
	p.w.advance()
	if a.acquired > 0 && (p.timerStop == nil || p.timerAtMs > a.expiry) {
		// The timer, when armed, is for the earliest lock of the window
		// (armTimerLocked), which these new locks cannot precede unless
		// the clock went back.
		p.armTimerLocked()
	}
	p.stats.acquired.Add(int64(a.acquired))
	return a.ranges, 0
}

// acquisition is one Acquire in progress.
type acquisition struct {
	p         *Partition
	cfg       shareconfig.Config
	member    string
	remaining int32
	limit     int64 // first offset that may not be acquired
	expiry    int64
	full      bool // the window reached its record locks
	batchSize int32
	mode      AcquireMode
	ranges    []AcquiredRange // what was acquired (appendAcquired)
	acquired  int
}

// batch acquires what it may of one fetched batch. In RecordLimit mode it
// stops at the record budget; in BatchOptimized mode it finishes the batch.
func (a *acquisition) batch(b Batch, aborted bool, mode AcquireMode) {
	w := &a.p.w
	last := min(b.LastOffset, a.limit-1)
	for off := max(b.BaseOffset, w.start); off <= last; off++ {
		if mode == RecordLimit && a.remaining <= 0 {
			return
		}
		if off > w.end() && !a.extend(off) {
			a.full = true
			return
		}
		r := w.at(off)
		if r.state != Available || r.pending {
			continue
		}
		if aborted && !b.Control || r.deliveryCount >= a.cfg.DeliveryCountLimit {
			// Settled at once: the same fetch decides the same way after a
			// failover, so there is nothing to write.
			checkTransition(Available, Archived)
			r.state = Archived
			a.p.stats.archived.Add(1)
			continue
		}
		checkTransition(Available, Acquired)
		r.state, r.member, r.lockExpiryMs = Acquired, a.member, a.expiry
		r.deliveryCount++
		a.ranges = appendAcquired(a.ranges, off, r.deliveryCount, a.batchSize, a.mode)
		a.acquired++
		a.remaining--
	}
}

// extend grows the window to off: offsets between the end and off that
// the log does not have (compacted away) enter as archived gaps. It
// reports false when the window is full.
func (a *acquisition) extend(off int64) bool {
	w := &a.p.w
	for w.end() < off {
		if int32(w.size()) >= a.cfg.PartitionMaxRecordLocks {
			return false
		}
		if w.end()+1 < off {
			w.push(inflight{state: Archived})
			continue
		}
		w.push(inflight{state: Available})
	}
	return true
}

// abortedBatches marks the transactional batches of aborted transactions,
// as a read_committed consumer does (Kafka's Fetcher): an aborted
// transaction's producer is aborted from the transaction's first offset
// until its ABORT marker.
func abortedBatches(batches []Batch, aborted []AbortedTxn) []bool {
	out := make([]bool, len(batches))
	if len(aborted) == 0 {
		return out
	}
	sorted := slices.Clone(aborted)
	slices.SortFunc(sorted, func(x, y AbortedTxn) int { return int(min(max(x.FirstOffset-y.FirstOffset, -1), 1)) })
	open := make(map[int64]bool)
	j := 0
	for i, b := range batches {
		for j < len(sorted) && sorted[j].FirstOffset <= b.LastOffset {
			open[sorted[j].ProducerID] = true
			j++
		}
		switch {
		case b.Control && b.Abort:
			delete(open, b.ProducerID)
		case b.Transactional && !b.Control:
			out[i] = open[b.ProducerID]
		}
	}
	return out
}

// appendAcquired adds an acquired offset (above the ones before) to
// ranges of equal delivery count, split at batchSize records in
// BatchOptimized mode (KIP-1206).
func appendAcquired(out []AcquiredRange, off int64, count int16, batchSize int32, mode AcquireMode) []AcquiredRange {
	if n := len(out); n > 0 {
		last := &out[n-1]
		size := last.LastOffset - last.FirstOffset + 1
		split := mode == BatchOptimized && batchSize > 0 && size >= int64(batchSize)
		if last.LastOffset+1 == off && last.DeliveryCount == count && !split {
			last.LastOffset = off
			return out
		}
	}
	ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
	ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = off, off, count
	return append(out, ar)
}
