package txn

// write is a prepared transition on its way to the state log.
type write struct {
	t *txnState
	// keepPending: a failed write leaves t pending, for the caller to
	// retry (the completion of a transaction whose markers are written).
	keepPending bool
	// committed runs under the entry's mutex once t is applied; failed
	// when the write failed and this broker still serves the id.
	committed func(m *txnMetadata)
	failed    func(m *txnMetadata)
}

// writeTransition writes w.t, pending on e, to the state log and applies it
// once committed (write-ahead: memory changes only after the log did). The
// result is 0 or the code the client gets, as Kafka's appendTransactionToLog
// answers: a failed write drops the pending transition so that the client
// may retry, NOT_COORDINATOR if the partition was unloaded meanwhile.
func (c *Coordinator) writeTransition(e *entry, w write) int16 {
	s := e.s
	rec := stateRecord(e.md.id, w.t, c.valueVersion())
	err := s.log.Append(s.ctx, []Record{rec})
	e.mu.Lock()
	defer e.mu.Unlock()
	defer e.wakeLocked()
	m := e.md
	if s.resigned() {
		// The id is unloaded: its memory is gone with the shard.
		return codeNotCoordinator
	}
	if err != nil {
		code := appendErrorCode(err, false)
		c.log.Warn("txn: writing transaction state failed", "transactionalId", m.id,
			"partition", s.p, "to", w.t.state, "err", err, "code", code)
		if !w.keepPending && m.pending == w.t {
			m.abandon()
		}
		if w.failed != nil {
			w.failed(m)
		}
		return code
	}
	if err := m.complete(w.t); err != nil {
		// A bug of this package: the log has the record, memory does not
		// follow; a reload of the partition repairs it.
		c.log.Error("txn: completing a transition failed", "transactionalId", m.id, "err", err)
		m.abandon()
		return codeUnknownServerError
	}
	if w.committed != nil {
		w.committed(m)
	}
	return 0
}

func (c *Coordinator) valueVersion() int16 {
	if c.opts.TransactionVersion != nil && c.opts.TransactionVersion() == 0 {
		return valueVersionLegacy
	}
	return valueVersionCurrent
}
