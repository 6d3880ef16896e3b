package txn

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The API handlers. Each takes the decoded request at the client's version
// and returns the response at the same version; Kafka protocol errors are
// error codes in it. They block while the state log is written (acks=all)
// but never while markers are: EndTxn answers once PrepareCommit or
// PrepareAbort is committed, as Kafka does.

// InitProducerID handles InitProducerId v0-v5. Without a transactional id
// it hands out a new producer id with epoch 0 (an idempotent producer).
func (c *Coordinator) InitProducerID(ctx context.Context, req *kmsg.InitProducerIDRequest) *kmsg.InitProducerIDResponse {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = noProducerID, noProducerEpoch
	var code int16
	if req.TransactionalID == nil {
		resp.ProducerID, code = c.allocate(ctx)
		if code == 0 {
			resp.ProducerEpoch = 0
		}
	} else {
		resp.ProducerID, resp.ProducerEpoch, code = c.initProducerID(ctx, *req.TransactionalID, req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch)
	}
	if code != 0 {
		resp.ProducerID, resp.ProducerEpoch = noProducerID, noProducerEpoch
	}
	resp.ErrorCode = fencedForVersion(code, req.Version, 4)
	return resp
}

// allocate returns a new producer id. Failures answer
// COORDINATOR_LOAD_IN_PROGRESS, as Kafka's producer id manager does while
// it has no block: the client retries.
func (c *Coordinator) allocate(ctx context.Context) (int64, int16) {
	id, err := c.ids.AllocateProducerID(ctx)
	if err != nil {
		c.log.Warn("txn: allocating a producer id failed", "err", err)
		return noProducerID, codeCoordinatorLoadInProgress
	}
	return id, 0
}

// producerIDAndEpoch is what a producer recovering from an error sends
// (KIP-360, InitProducerId v3+).
type producerIDAndEpoch struct {
	id    int64
	epoch int16
}

func (c *Coordinator) initProducerID(ctx context.Context, id string, timeoutMs int32, pid int64, epoch int16) (int64, int16, int16) {
	var expected *producerIDAndEpoch
	switch {
	case id == "":
		return noProducerID, noProducerEpoch, codeInvalidRequest
	case timeoutMs <= 0 || int64(timeoutMs) > c.opts.MaxTimeout.Milliseconds():
		return noProducerID, noProducerEpoch, codeInvalidTransactionTimeout
	case pid == noProducerID && epoch == noProducerEpoch:
	case pid == noProducerID || epoch == noProducerEpoch:
		return noProducerID, noProducerEpoch, codeInvalidRequest
	default:
		expected = &producerIDAndEpoch{pid, epoch}
	}
	e, code := c.lookupOrCreate(ctx, id, timeoutMs)
	if code != 0 {
		return noProducerID, noProducerEpoch, code
	}
	d, code := c.decide(ctx, e, func(m *txnMetadata, newPID int64) decision {
		return decideInit(m, timeoutMs, expected, newPID, c.nowMs())
	})
	switch {
	case code != 0:
		return noProducerID, noProducerEpoch, code
	case d.fence:
		return noProducerID, noProducerEpoch, c.writeFenceAbort(e, d.t, "InitProducerId")
	}
	if code := c.writeTransition(e, write{t: d.t}); code != 0 {
		return noProducerID, noProducerEpoch, code
	}
	c.log.Info("txn: initialized transactional id", "transactionalId", id, "producerId", d.t.producerID,
		"producerEpoch", d.t.producerEpoch, "partition", e.s.p)
	return d.t.producerID, d.t.producerEpoch, 0
}

// lookupOrCreate finds the entry of id, creating it with a new producer id
// (and no epoch yet) when it is unknown.
func (c *Coordinator) lookupOrCreate(ctx context.Context, id string, timeoutMs int32) (*entry, int16) {
	e, code := c.lookup(id, nil)
	if code != 0 || e != nil {
		return e, code
	}
	pid, code := c.allocate(ctx)
	if code != 0 {
		return nil, code
	}
	// Another request may have created it meanwhile: then pid is unused.
	return c.lookup(id, newTxnMetadata(id, pid, timeoutMs, c.nowMs()))
}

// decision is what a request does to a transactional id: answer code
// without writing (with pid and epoch, for EndTxn v5), or write t (fence: t
// fences the producer and aborts its transaction), or first get a new
// producer id (needPID).
type decision struct {
	code     int16
	t        *txnState
	fence    bool
	needPID  bool
	pid      int64
	epoch    int16
	internal error // a bug: the transition was illegal
}

// decide runs fn under e's mutex; when fn needs a new producer id, it is
// allocated without the mutex and fn runs again with it.
func (c *Coordinator) decide(ctx context.Context, e *entry, fn func(m *txnMetadata, newPID int64) decision) (decision, int16) {
	newPID := noProducerID
	var deadline time.Time
	for {
		e.mu.Lock()
		d := fn(e.md, newPID)
		var settled chan struct{}
		if d.code == codeConcurrentTransactions && e.md.pendingInProgress() && c.opts.ConcurrentWait > 0 {
			settled = e.settledLocked()
		}
		e.mu.Unlock()
		if settled != nil {
			// A state write or the previous transaction's markers are in
			// flight: wait for them rather than have the client back off
			// and retry (Kafka's leaders retry a produce's verification
			// every add.partitions.to.txn.retry.backoff.ms for a while).
			if deadline.IsZero() {
				deadline = c.opts.Now().Add(c.opts.ConcurrentWait)
			}
			if c.awaitSettled(ctx, e, settled, deadline) {
				continue
			}
		}
		switch {
		case d.internal != nil:
			c.log.Error("txn: illegal transition", "transactionalId", e.md.id, "err", d.internal)
			return d, codeUnknownServerError
		case d.needPID && newPID == noProducerID:
			var code int16
			if newPID, code = c.allocate(ctx); code != 0 {
				return d, code
			}
			continue
		}
		return d, d.code
	}
}

func fail(code int16) decision { return decision{code: code} }

func transition(t *txnState, err error) decision {
	if err != nil {
		return decision{internal: err}
	}
	return decision{t: t}
}

// decideInit is InitProducerId on an existing id (Kafka's
// prepareInitProducerIdTransit).
func decideInit(m *txnMetadata, timeoutMs int32, expected *producerIDAndEpoch, newPID int64, nowMs int64) decision {
	switch {
	case m.pendingInProgress():
		return fail(codeConcurrentTransactions)
	case expected != nil && !validExpectedProducerID(m, expected):
		return fail(codeProducerFenced)
	}
	switch m.state {
	case PrepareAbort, PrepareCommit:
		return fail(codeConcurrentTransactions)
	case CompleteAbort, CompleteCommit, Empty:
		if m.epochExhausted() && (expected == nil || expected.epoch == m.producerEpoch) {
			if newPID == noProducerID {
				return decision{needPID: true}
			}
			return transition(m.prepareProducerIDRotation(newPID, timeoutMs, nowMs, expected != nil))
		}
		var expectedEpoch *int16
		if expected != nil {
			expectedEpoch = &expected.epoch
		}
		t, code, err := m.prepareIncrementProducerEpoch(timeoutMs, expectedEpoch, nowMs)
		if code != 0 {
			return fail(code)
		}
		return transition(t, err)
	case Ongoing:
		// Abort the open transaction first, with an epoch never returned to
		// anybody, and answer CONCURRENT_TRANSACTIONS: the retry bumps the
		// epoch again (or rotates the producer id if that exhausted it).
		d := transition(prepareFenceAbort(m, nowMs))
		d.fence = true
		return d
	}
	return decision{internal: errIllegalState(m)}
}

// validExpectedProducerID: the producer id a recovering producer sent may
// go on (the id was just created, it is the current one, or it is the
// previous one and this retries a rotation that exhausted it).
func validExpectedProducerID(m *txnMetadata, expected *producerIDAndEpoch) bool {
	return m.producerEpoch == noProducerEpoch || expected.id == m.producerID ||
		(expected.id == m.prevProducerID && epochExhausted(expected.epoch))
}

// prepareFenceAbort fences the producer of m's open transaction (epoch
// bump) and prepares the abort of the transaction, as Kafka's
// prepareFenceProducerEpoch followed by endTransaction(ABORT) from the
// coordinator itself. Under TV0/TV1 the fenced epoch is what the abort
// carries (and memory keeps it even if the write fails: hasFailedEpochFence
// then stops a second bump). Under TV2 the abort's own epoch bump is the
// fence (Kafka 4.1: one bump, not two).
func prepareFenceAbort(m *txnMetadata, nowMs int64) (*txnState, error) {
	fence, err := m.prepareFenceProducerEpoch()
	if err != nil {
		return nil, err
	}
	m.abandon()
	if m.clientVersion.supportsEpochBump() {
		return m.prepareAbortOrCommit(PrepareAbort, m.clientVersion, noProducerID, nowMs, false)
	}
	m.producerEpoch, m.lastProducerEpoch = fence.producerEpoch, noProducerEpoch
	return m.prepareAbortOrCommit(PrepareAbort, TV0, noProducerID, nowMs, false)
}

// writeFenceAbort writes a fencing abort and starts its markers. The code
// is CONCURRENT_TRANSACTIONS once it is written: the producer that asked
// retries, and gets its epoch when the abort is complete.
func (c *Coordinator) writeFenceAbort(e *entry, t *txnState, why string) int16 {
	c.stats.fenced.Add(1)
	c.log.Info("txn: fencing producer and aborting its transaction", "transactionalId", e.md.id,
		"producerId", t.producerID, "fencedEpoch", t.producerEpoch, "by", why)
	code := c.writeTransition(e, write{
		t:         t,
		committed: func(*txnMetadata) { c.beginCompletion(e, c.nowMs()) },
		failed:    func(m *txnMetadata) { m.hasFailedEpochFence = true },
	})
	if code != 0 {
		return code
	}
	return codeConcurrentTransactions
}

// errIllegalState is a state a request never meets (Dead,
// PrepareEpochFence): Kafka throws IllegalStateException.
func errIllegalState(m *txnMetadata) error {
	return &illegalState{id: m.id, state: m.state}
}

type illegalState struct {
	id    string
	state State
}

func (e *illegalState) Error() string {
	return "txn: transactional id " + e.id + " found in state " + e.state.String() + ", which requests never meet"
}
