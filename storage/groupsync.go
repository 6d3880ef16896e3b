package storage

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Durable appends and group commit (issue 19).
//
// A log whose flush.messages is 1 is durable: an append is acknowledged
// only once it is on disk. Flushing inline, as Kafka does, costs one round
// of fsyncs per append per partition. Instead the log dir's groupSyncer
// collects the logs appended since its last round and flushes them all in
// the next one: every append that arrived while a round ran waits for the
// next, so the cost is rounds per second (bounded by the disk's fsync
// latency), not appends per second, and a round covers every partition of
// the dir that has new data. A round flushes each dirty log once (msync of
// the new ranges of its active segment and indexes, the directory if files
// changed); see Log.Flush.
//
// Leaders do not wait in the append: the HW counts the leader's flushed
// offset (Log.DurableEnd), and the round calls the log's flush listener so
// that the partition moves its HW. Followers append a whole fetch response
// and then wait (WaitDurable) before their next fetch, whose offset
// therefore counts only flushed data: that is how a follower reports its
// flushed offset without a protocol field.
//
// A failed flush is never retried (after a failed fsync Linux drops the
// dirty pages, so a retry can succeed without the data): the log fails
// (ErrLogFailed) and the syncer reports the failure to its owner, which
// takes the whole log dir offline as Kafka does.
type groupSyncer struct {
	// onFailure is called (once per failing log, outside mu) with the
	// flush error.
	onFailure func(l *Log, err error)
	// onRound, if not nil, is told of each round's duration and logs.
	onRound roundObserver

	mu      sync.Mutex // guards the following
	wake    *sync.Cond // on mu: work queued, a round done, or stop
	pending map[*Log]struct{}
	// started and done count rounds: a log queued before round n started
	// is flushed by the end of round n.
	started, done uint64
	stopped       bool

	finished chan struct{} // closed when run returns

	rounds atomic.Int64 // rounds run
	syncs  atomic.Int64 // logs flushed
}

func newGroupSyncer(onFailure func(*Log, error), onRound roundObserver) *groupSyncer {
	g := &groupSyncer{onFailure: onFailure, onRound: onRound, pending: map[*Log]struct{}{}, finished: make(chan struct{})}
	g.wake = sync.NewCond(&g.mu)
	go g.run()
	return g
}

// queue marks l dirty and returns the round that will cover it.
func (g *groupSyncer) queue(l *Log) uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pending[l] = struct{}{}
	g.wake.Broadcast()
	return g.started + 1
}

// wait blocks until round n is done (or the syncer stopped). It reports
// whether the round ran.
func (g *groupSyncer) wait(n uint64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.done < n && !g.stopped {
		g.wake.Wait()
	}
	return g.done >= n
}

// run is the syncer's goroutine: one round per wake-up with work.
func (g *groupSyncer) run() {
	defer close(g.finished)
	g.mu.Lock()
	for {
		for len(g.pending) == 0 && !g.stopped {
			g.wake.Wait()
		}
		if g.stopped {
			g.mu.Unlock()
			return
		}
		batch := g.pending
		g.pending = map[*Log]struct{}{}
		g.started++
		g.mu.Unlock()

		g.rounds.Add(1)
		g.syncs.Add(int64(len(batch)))
		// The logs' flushes run in parallel: a round lasts as long as the
		// slowest, not the sum (the disk queues them together). The
		// goroutines end with the round.
		start := time.Now()
		var wg sync.WaitGroup
		for l := range batch {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := l.Flush(); err != nil && !isClosedErr(err) && g.onFailure != nil {
					g.onFailure(l, err)
				}
				l.notifyFlushed()
			}()
		}
		wg.Wait()
		if g.onRound != nil {
			g.onRound(time.Since(start), len(batch))
		}

		g.mu.Lock()
		g.done = g.started
		g.wake.Broadcast()
	}
}

// stop ends the goroutine; waiters return. Logs still queued were not
// flushed by it (Close flushes them).
func (g *groupSyncer) stop() {
	g.mu.Lock()
	g.stopped = true
	g.wake.Broadcast()
	g.mu.Unlock()
	<-g.finished
}

func isClosedErr(err error) bool { return errors.Is(err, ErrLogClosed) }

// GroupSyncStats counts the group commit rounds of a Manager's log dirs.
type GroupSyncStats struct {
	Rounds int64 // flush rounds (a round flushes every log queued since the last)
	Syncs  int64 // log flushes in those rounds
}
