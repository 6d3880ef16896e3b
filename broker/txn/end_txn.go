package txn

import (
	"context"
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// EndTxn handles EndTxn v0-v5. v5 is transaction version 2 (KIP-890 part
// 2): every EndTxn bumps the producer epoch and the response carries the
// producer id and epoch of the next transaction.
func (c *Coordinator) EndTxn(ctx context.Context, req *kmsg.EndTxnRequest) *kmsg.EndTxnResponse {
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	tv := TV0
	if req.Version >= 5 {
		tv = TV2
	}
	pid, epoch, code := c.endTxn(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit, tv)
	resp.ProducerID, resp.ProducerEpoch = pid, epoch
	resp.ErrorCode = fencedForVersion(code, req.Version, 2)
	return resp
}

func (c *Coordinator) endTxn(ctx context.Context, id string, pid int64, epoch int16, commit bool, tv TransactionVersion) (int64, int16, int16) {
	if id == "" {
		return noProducerID, noProducerEpoch, codeInvalidRequest
	}
	e, code := c.lookup(id, nil)
	switch {
	case code != 0:
		return noProducerID, noProducerEpoch, code
	case e == nil:
		return noProducerID, noProducerEpoch, codeInvalidProducerIDMapping
	}
	d, code := c.decide(ctx, e, func(m *txnMetadata, newPID int64) decision {
		if tv.supportsEpochBump() {
			return decideEndTxnV2(m, pid, epoch, commit, newPID, c.nowMs())
		}
		return decideEndTxnV1(m, pid, epoch, commit, c.nowMs())
	})
	switch {
	case code != 0:
		return noProducerID, noProducerEpoch, code
	case d.t == nil: // a retry of a completed EndTxn
		return d.pid, d.epoch, 0
	}
	var next *completion
	code = c.writeTransition(e, write{t: d.t, committed: func(*txnMetadata) { next = c.beginCompletion(e, c.nowMs()) }})
	if code != 0 {
		return noProducerID, noProducerEpoch, code
	}
	if next == nil {
		return noProducerID, noProducerEpoch, codeUnknownServerError
	}
	// After a TV2 overflow the client goes on with the next producer id.
	return next.done.producerID, next.done.producerEpoch, 0
}

// retried answers an EndTxn that was already applied: success with the
// current producer id and epoch.
func retried(m *txnMetadata) decision {
	return decision{pid: m.producerID, epoch: m.producerEpoch}
}

// resultState is PrepareCommit or PrepareAbort.
func resultState(commit bool) State {
	if commit {
		return PrepareCommit
	}
	return PrepareAbort
}

// decideEndTxnV1 is EndTxn v0-v4 (Kafka's endTransactionWithTV1). A commit
// or abort retried after it completed succeeds again.
func decideEndTxnV1(m *txnMetadata, pid int64, epoch int16, commit bool, nowMs int64) decision {
	switch {
	case m.producerID != pid:
		return fail(codeInvalidProducerIDMapping)
	case epoch != m.producerEpoch:
		return fail(codeProducerFenced)
	case m.pendingInProgress():
		return fail(codeConcurrentTransactions)
	}
	switch m.state {
	case Ongoing:
		return transition(m.prepareAbortOrCommit(resultState(commit), TV0, noProducerID, nowMs, false))
	case CompleteCommit, CompleteAbort:
		if commit == (m.state == CompleteCommit) {
			return retried(m)
		}
		return fail(codeInvalidTxnState)
	case PrepareCommit, PrepareAbort:
		if commit == (m.state == PrepareCommit) {
			return fail(codeConcurrentTransactions)
		}
		return fail(codeInvalidTxnState)
	case Empty:
		return fail(codeInvalidTxnState)
	}
	return decision{internal: errIllegalState(m)}
}

// decideEndTxnV2 is EndTxn v5 (Kafka's endTransaction under TV2). The epoch
// a client sends is the one of the transaction; a retry carries the epoch
// before the bump (or, after an overflow, the previous producer id with
// the last epoch), which tells it apart from the next EndTxn.
func decideEndTxnV2(m *txnMetadata, pid int64, epoch int16, commit bool, newPID, nowMs int64) decision {
	retryOnOverflow := m.prevProducerID == pid && epoch == math.MaxInt16-1 && m.producerEpoch == 0
	retryOnEpochBump := int32(m.producerEpoch) == int32(epoch)+1
	isRetry := retryOnEpochBump || retryOnOverflow
	switch {
	case m.pendingInProgress():
		// First, so that a pending overflow completes before the client's
		// new producer id is checked.
		return fail(codeConcurrentTransactions)
	case m.producerID != pid && !retryOnOverflow:
		return fail(codeInvalidProducerIDMapping)
	case !validEndTxnEpochV2(m, epoch, retryOnEpochBump, retryOnOverflow):
		return fail(codeProducerFenced)
	}
	prepare := func(to State, noPartitionAdded bool) decision {
		next := noProducerID
		if m.epochExhausted() {
			if newPID == noProducerID {
				return decision{needPID: true}
			}
			next = newPID
		}
		return transition(m.prepareAbortOrCommit(to, TV2, next, nowMs, noPartitionAdded))
	}
	switch m.state {
	case Ongoing:
		return prepare(resultState(commit), false)
	case CompleteCommit:
		switch {
		case commit && isRetry:
			return retried(m)
		case commit || isRetry:
			return fail(codeInvalidTxnState)
		}
		return prepare(PrepareAbort, true)
	case CompleteAbort:
		switch {
		case commit:
			return fail(codeInvalidTxnState)
		case isRetry:
			return retried(m)
		}
		return prepare(PrepareAbort, true)
	case PrepareCommit, PrepareAbort:
		if commit == (m.state == PrepareCommit) {
			return fail(codeConcurrentTransactions)
		}
		return fail(codeInvalidTxnState)
	case Empty:
		if commit {
			return fail(codeInvalidTxnState)
		}
		return prepare(PrepareAbort, true)
	}
	return decision{internal: errIllegalState(m)}
}

// validEndTxnEpochV2: with TV2 the same epoch in a completed state is the
// next transaction's EndTxn, the epoch before it a retry; anything else is
// fenced, a higher epoch included.
func validEndTxnEpochV2(m *txnMetadata, epoch int16, retryOnEpochBump, retryOnOverflow bool) bool {
	switch m.state {
	case PrepareCommit, PrepareAbort:
		return retryOnEpochBump
	case CompleteCommit, CompleteAbort:
		return retryOnEpochBump || retryOnOverflow || epoch == m.producerEpoch
	}
	return epoch == m.producerEpoch
}
