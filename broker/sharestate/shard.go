package sharestate

import (
	"context"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/kbroker/kbroker/internal/coordkit"
)

// op is one request on one key, or (run set) an internal job of the shard
// (pruning, cold snapshots).
type op struct {
	key    Key
	decide func(cur *keyState, nowMs int64) decision
	reply  chan decision // capacity 1: the loop never blocks on it
	run    func()
}

// shard is one led __share_group_state partition. Its goroutine (loop) owns
// every field below the channels and runs the requests one batch at a
// time: the records of a batch are appended together (group commit) and
// the memory changes only after the append succeeded (write-ahead).
type shard struct {
	c      *Coordinator
	p      int32
	log    StateLog
	ctx    context.Context // cancelled on Resign: a pending append stops
	cancel context.CancelFunc

	ops  chan *op
	stop chan struct{} // closed to unload
	done chan struct{} // closed when the loop has exited
	wg   sync.WaitGroup

	// active: loaded and serving; before, requests get
	// COORDINATOR_LOAD_IN_PROGRESS.
	active atomic.Bool

	// Owned by the loop goroutine.
	states    map[Key]*keyState
	logEnd    int64 // one past the highest offset seen
	pruned    int64 // the last DeleteRecordsBefore offset
	stopTimer func() bool
}

func newShard(c *Coordinator, p int32, log StateLog) *shard {
	ctx, cancel := context.WithCancel(context.Background())
	s := &shard{
		c: c, p: p, log: log, ctx: ctx, cancel: cancel,
		ops: make(chan *op), stop: make(chan struct{}), done: make(chan struct{}),
		states: make(map[Key]*keyState),
	}
	return s
}

// start launches the loop once the partition is loaded.
func (s *shard) start() {
	s.active.Store(true)
	s.armPrune() // before the loop runs, so its owner is the loop from here on
	s.wg.Add(1)
	go s.loop()
}

func (s *shard) loop() {
	defer s.wg.Done()
	defer close(s.done)
	for {
		select {
		case <-s.stop:
			if s.stopTimer != nil {
				s.stopTimer()
			}
			return
		case o := <-s.ops:
			s.process(s.drain(o))
		}
	}
}

// drain collects the requests already waiting, up to MaxBatchOps, so that
// they share one append.
func (s *shard) drain(first *op) []*op {
	batch := []*op{first}
	for len(batch) < s.c.opts.MaxBatchOps && first.run == nil {
		select {
		case o := <-s.ops:
			if o.run != nil {
				s.process(batch)
				s.runJob(o)
				return nil
			}
			batch = append(batch, o)
		default:
			return batch
		}
	}
	return batch
}

// pending is a decided request waiting for its append.
type pending struct {
	o   *op
	d   decision
	idx int // index of its record in the batch; -1: none
}

// process decides every request of a batch against the state as the
// batch's earlier records leave it, appends all records at once, then
// applies them and answers.
func (s *shard) process(batch []*op) {
	if len(batch) == 1 && batch[0].run != nil {
		s.runJob(batch[0])
		return
	}
	now := s.c.nowMs()
	overlay := make(map[Key]*keyState)
	var records []stateRecord
	var ps []pending
	for _, o := range batch {
		cur, ok := overlay[o.key]
		if !ok {
			cur = s.states[o.key]
		}
		d := s.decideSafely(o, cur, now)
		p := pending{o: o, d: d, idx: -1}
		if d.code == 0 && d.record != nil {
			p.idx = len(records)
			records = append(records, *d.record)
			overlay[o.key] = apply(cur, *d.record, -1)
		}
		ps = append(ps, p)
	}
	s.commit(records, ps)
}

// commit appends the records (if any), applies them and answers every
// request of the batch. When the append fails every request that touched
// a key written in the batch gets the error: what it saw was not committed.
func (s *shard) commit(records []stateRecord, ps []pending) {
	code := s.appendRecords(records)
	if code != 0 {
		written := make(map[Key]bool)
		for _, r := range records {
			written[r.key] = true
		}
		for _, p := range ps {
			if p.idx >= 0 || written[p.o.key] {
				p.d = fail(code, "")
			}
			p.o.reply <- p.d
		}
		return
	}
	for _, p := range ps {
		p.o.reply <- p.d
	}
}

// appendRecords writes records as one batch and applies them; 0 or the
// code for the callers.
func (s *shard) appendRecords(records []stateRecord) int16 {
	if len(records) == 0 {
		return 0
	}
	out := make([]Record, len(records))
	for i, r := range records {
		out[i] = r.encode()
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.c.opts.WriteTimeout)
	base, err := s.log.Append(ctx, out)
	cancel()
	if err != nil {
		code := coordkit.AppendErrorCode(err, s.ctx.Err() != nil)
		s.c.log.Warn("sharestate: writing __share_group_state failed", "partition", s.p, "records", len(out), "err", err, "code", code)
		return code
	}
	nowMs := s.c.nowMs()
	for i, r := range records {
		s.applyLogged(r, base+int64(i), nowMs)
	}
	s.c.metrics.recordsWritten.Add(int64(len(records)))
	return 0
}

// applyLogged installs one committed (or replayed) record.
func (s *shard) applyLogged(r stateRecord, offset, nowMs int64) {
	next := apply(s.states[r.key], r, offset)
	if next == nil {
		delete(s.states, r.key)
	} else {
		next.lastWriteMs = nowMs
		s.states[r.key] = next
	}
	s.logEnd = max(s.logEnd, offset+1)
}

// decideSafely runs a decision; a panic is a bug of this package, logged
// and answered UNKNOWN_SERVER_ERROR so that one key cannot take the broker
// down.
func (s *shard) decideSafely(o *op, cur *keyState, nowMs int64) (d decision) {
	defer func() {
		if r := recover(); r != nil {
			s.c.log.Error("sharestate: panic deciding a request", "key", o.key.String(), "panic", r, "stack", string(debug.Stack()))
			d = fail(codeUnknownServerError, "")
		}
	}()
	return o.decide(cur, nowMs)
}

// submit runs o on the shard and waits for its answer. The code is
// NOT_COORDINATOR when the shard stopped first and REQUEST_TIMED_OUT when
// ctx ended.
func (s *shard) submit(ctx context.Context, o *op) decision {
	o.reply = make(chan decision, 1)
	select {
	case s.ops <- o:
	case <-s.done:
		return fail(codeNotCoordinator, "")
	case <-ctx.Done():
		return fail(codeCoordinatorNotAvailable, "")
	}
	select {
	case d := <-o.reply:
		return d
	case <-s.done:
		select {
		case d := <-o.reply:
			return d
		default:
			return fail(codeNotCoordinator, "")
		}
	}
}

// runJob runs an internal job and tells whoever waits for it.
func (s *shard) runJob(o *op) {
	o.run()
	if o.reply != nil {
		o.reply <- decision{}
	}
}

// unload stops the loop and waits for it.
func (s *shard) unload() {
	s.cancel()
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	s.wg.Wait()
}
