package txn

// The periodic scans, as Kafka's TransactionCoordinator schedules them:
// abortTimedOut every transaction.abort.timed.out.transaction.cleanup.interval.ms,
// removeExpired every transaction.remove.expired.transaction.cleanup.interval.ms.
// A scan only decides, under each id's mutex; the writes run on goroutines
// of the shards, so a slow partition holds up neither the scan nor Close.

// abortTimedOut aborts every transaction open longer than its timeout,
// bumping the producer epoch so that the producer that opened it is fenced.
func (c *Coordinator) abortTimedOut() {
	entries, _ := c.entries()
	now := c.nowMs()
	for _, e := range entries {
		e.mu.Lock()
		m := e.md
		if m.pendingInProgress() || m.state != Ongoing || m.startMs+int64(m.timeoutMs) >= now {
			e.mu.Unlock()
			continue
		}
		pid, epoch, openMs, timeoutMs := m.producerID, m.producerEpoch, now-m.startMs, m.timeoutMs
		t, err := prepareFenceAbort(m, now)
		e.mu.Unlock()
		if err != nil {
			c.log.Error("txn: cannot abort timed out transaction", "transactionalId", m.id, "err", err)
			continue
		}
		c.log.Info("txn: aborting transaction that timed out", "transactionalId", m.id, "producerId", pid,
			"producerEpoch", epoch, "openMs", openMs, "timeoutMs", timeoutMs)
		c.spawn(e.s, func() {
			if c.writeFenceAbort(e, t, "timeout") == codeConcurrentTransactions {
				c.stats.timedOut.Add(1)
			}
		})
	}
}

// removeExpired expires the ids without an open transaction that were not
// used for transactional.id.expiration.ms: one batch of tombstones per
// partition, and the ids leave memory once it is committed.
func (c *Coordinator) removeExpired() {
	entries, _ := c.entries()
	cutoff := c.nowMs() - c.opts.IDExpiration.Milliseconds()
	byShard := make(map[*shard][]expiry)
	for _, e := range entries {
		e.mu.Lock()
		m := e.md
		if !m.pendingInProgress() && m.state.expirationAllowed() && m.lastUpdateMs <= cutoff {
			if t, err := m.prepareDead(); err == nil {
				byShard[e.s] = append(byShard[e.s], expiry{e, t})
			}
		}
		e.mu.Unlock()
	}
	for s, expired := range byShard {
		if !c.spawn(s, func() { c.writeTombstones(s, expired) }) {
			abandonAll(expired)
		}
	}
}

type expiry struct {
	e    *entry
	dead *txnState
}

func (c *Coordinator) writeTombstones(s *shard, expired []expiry) {
	recs := make([]Record, len(expired))
	for i, x := range expired {
		recs[i] = tombstone(x.e.md.id)
	}
	err := s.log.Append(s.ctx, recs)
	if err != nil || s.resigned() {
		c.log.Warn("txn: writing tombstones of expired transactional ids failed", "partition", s.p, "ids", len(expired), "err", err)
		abandonAll(expired)
		return
	}
	for _, x := range expired {
		x.e.mu.Lock()
		if x.e.md.pending == x.dead {
			c.removeEntry(x.e)
			c.stats.expired.Add(1)
		}
		x.e.mu.Unlock()
	}
	c.log.Info("txn: expired transactional ids", "partition", s.p, "ids", len(expired))
}

func abandonAll(expired []expiry) {
	for _, x := range expired {
		x.e.mu.Lock()
		if x.e.md.pending == x.dead {
			x.e.md.abandon()
		}
		x.e.mu.Unlock()
	}
}
