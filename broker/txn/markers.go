package txn

import (
	"context"
	"time"
)

// Completion of a transaction, as Kafka's TransactionMarkerChannelManager:
// once PrepareCommit or PrepareAbort is committed, CompleteCommit or
// CompleteAbort becomes the pending transition (requests get
// CONCURRENT_TRANSACTIONS meanwhile), a goroutine of the shard writes the
// markers to every partition of the transaction, retrying those that fail
// for a retriable reason, and then writes the completion to the state log.

// completion is one transaction being completed.
type completion struct {
	e      *entry
	marker Marker
	done   *txnState // the pending CompleteX
	start  time.Time
}

// prepareCompletion prepares CompleteX for e's PrepareX transaction and the
// marker to write. The caller holds e.mu (or e is not visible yet).
func (c *Coordinator) prepareCompletion(e *entry, nowMs int64) *completion {
	m := e.md
	done, err := m.prepareComplete(nowMs)
	if err != nil {
		c.log.Error("txn: cannot complete transaction", "transactionalId", m.id, "err", err)
		return nil
	}
	return &completion{e: e, done: done, start: c.opts.Now(), marker: Marker{
		ProducerID: m.producerID, ProducerEpoch: m.producerEpoch, CoordinatorEpoch: e.s.epoch,
		Commit: m.state == PrepareCommit, TransactionVersion: m.clientVersion, Partitions: m.sortedPartitions(),
	}}
}

// settle wakes the requests waiting for the completion (awaitSettled):
// one that stopped leaves CompleteX pending, to a new producer or
// coordinator, and they answer CONCURRENT_TRANSACTIONS.
func (comp *completion) settle() {
	comp.e.mu.Lock()
	defer comp.e.mu.Unlock()
	comp.e.wakeLocked()
}

// beginCompletionLocked prepares the completion of e and starts it.
// Must be called with c.mu held (at load, before e is visible).
func (c *Coordinator) beginCompletionLocked(e *entry, nowMs int64) *completion {
	comp := c.prepareCompletion(e, nowMs)
	if comp != nil && !c.spawnLocked(e.s, comp.run(c)) {
		e.wakeLocked()
	}
	return comp
}

// beginCompletion is beginCompletionLocked for a caller that holds e.mu.
func (c *Coordinator) beginCompletion(e *entry, nowMs int64) *completion {
	comp := c.prepareCompletion(e, nowMs)
	if comp != nil && !c.spawn(e.s, comp.run(c)) {
		e.wakeLocked()
	}
	return comp
}

// markerOutcome is what a partition's marker result means (Kafka's
// TransactionMarkerRequestCompletionHandler).
type markerOutcome int8

const (
	markerDone  markerOutcome = iota // written, or nothing to write
	markerRetry                      // retriable: send again
	markerStop                       // the producer or coordinator epoch moved on: give up
	markerFatal                      // unexpected: logged, retried
)

func classifyMarker(code int16) markerOutcome {
	switch code {
	case codeNone, codeUnsupportedForMessageFormat, codeUnsupportedVersion:
		// A partition that cannot take markers cannot hold the
		// transaction's data either.
		return markerDone
	case codeUnknownTopicOrPartition, codeNotLeaderOrFollower, codeNotEnoughReplicas,
		codeNotEnoughReplicasAfter, codeRequestTimedOut, codeKafkaStorageError:
		return markerRetry
	case codeInvalidProducerEpoch, codeTransactionCoordinatorFenced:
		return markerStop
	}
	return markerFatal
}

func (comp *completion) run(c *Coordinator) func() {
	return func() {
		defer comp.settle()
		if comp.writeMarkers(c) {
			marked := c.opts.Now()
			if comp.writeCompletion(c) {
				c.stats.completions.Add(1)
				c.stats.markerNanos.Add(int64(marked.Sub(comp.start)))
				c.stats.completionNanos.Add(int64(c.opts.Now().Sub(comp.start)))
			}
		}
	}
}

// writeMarkers writes the markers until every partition has its own; false
// if the completion must stop.
func (comp *completion) writeMarkers(c *Coordinator) bool {
	s, m := comp.e.s, comp.marker
	for len(m.Partitions) > 0 {
		results := c.markers.WriteMarkers(s.ctx, m)
		var retry []TopicPartition
		for _, tp := range m.Partitions {
			code, answered := results[tp]
			outcome := classifyMarker(code)
			if !answered {
				outcome = markerRetry
			}
			switch outcome {
			case markerDone:
				comp.markerWritten(tp)
			case markerStop:
				c.log.Info("txn: transaction markers fenced; the transaction is left to the new producer or coordinator",
					"transactionalId", comp.e.md.id, "partition", tp, "code", code)
				return false
			case markerFatal:
				c.log.Error("txn: unexpected error writing a transaction marker; retrying",
					"transactionalId", comp.e.md.id, "partition", tp, "code", code)
				retry = append(retry, tp)
			default:
				retry = append(retry, tp)
			}
		}
		m.Partitions = retry
		if len(retry) > 0 && !c.sleep(s.ctx, c.opts.MarkerRetryBackoff) {
			return false
		}
	}
	return true
}

// markerWritten drops a partition from the transaction as Kafka's
// removePartition: DescribeTransactions shows what is left to mark.
func (comp *completion) markerWritten(tp TopicPartition) {
	comp.e.mu.Lock()
	defer comp.e.mu.Unlock()
	if comp.e.md.pending == comp.done {
		delete(comp.e.md.partitions, tp)
	}
}

// writeCompletion writes CompleteX, retrying until it is committed (true)
// or the partition is unloaded (the new leader completes it then).
func (comp *completion) writeCompletion(c *Coordinator) bool {
	for {
		code := c.writeTransition(comp.e, write{t: comp.done, keepPending: true, committed: comp.count(c)})
		if code == 0 || code == codeNotCoordinator {
			return code == 0
		}
		if !c.sleep(comp.e.s.ctx, c.opts.MarkerRetryBackoff) {
			return false
		}
	}
}

// awaitSettled waits until settled is closed (the pending transition the
// caller met ended), the deadline passes, ctx ends or the partition is
// unloaded; true if it was closed (the caller decides again).
func (c *Coordinator) awaitSettled(ctx context.Context, e *entry, settled chan struct{}, deadline time.Time) bool {
	d := deadline.Sub(c.opts.Now())
	if d <= 0 {
		return false
	}
	c.stats.waits.Add(1)
	fired := make(chan struct{})
	stop := c.opts.AfterFunc(d, func() { close(fired) })
	defer stop()
	select {
	case <-settled:
		return true
	case <-fired:
	case <-ctx.Done():
	case <-e.s.ctx.Done():
	}
	return false
}

func (comp *completion) count(c *Coordinator) func(*txnMetadata) {
	return func(m *txnMetadata) {
		if m.state == CompleteCommit {
			c.stats.commits.Add(1)
		} else {
			c.stats.aborts.Add(1)
		}
	}
}

// sleep waits d on the coordinator's clock; false if ctx ended first.
func (c *Coordinator) sleep(ctx context.Context, d time.Duration) bool {
	fired := make(chan struct{})
	stop := c.opts.AfterFunc(d, func() { close(fired) })
	select {
	case <-fired:
		return true
	case <-ctx.Done():
		stop()
		return false
	}
}
