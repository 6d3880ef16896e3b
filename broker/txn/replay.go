package txn

import (
	"errors"
	"iter"

	"github.com/kbroker/kbroker/broker/group"
)

// replay rebuilds the ids of partition p from its records: the last value
// of every id wins and tombstones delete, which is what compaction keeps,
// so the result does not depend on compaction having run. Records of other
// types and corrupt ones are skipped with a log line.
func (c *Coordinator) replay(p int32, records iter.Seq2[Record, error]) (map[string]*txnState, error) {
	loaded := make(map[string]*txnState)
	var skipped, corrupt int
	for r, err := range records {
		if err != nil {
			return nil, err
		}
		if r.Marker != group.NoMarker {
			continue // no transaction writes here; a marker is nothing to load
		}
		id, st, err := decodeRecord(r)
		switch {
		case errors.Is(err, errUnknownKeyVersion):
			skipped++
			continue
		case err != nil:
			corrupt++
			c.log.Error("txn: skipping corrupt __transaction_state record", "partition", p, "err", err)
			continue
		}
		if st == nil || st.state == Dead {
			delete(loaded, id)
			continue
		}
		if st.state == PrepareEpochFence {
			// Kafka never writes it; a fence that did not become an abort
			// leaves the transaction open, for the next fence to abort.
			c.log.Warn("txn: loading PrepareEpochFence as Ongoing", "transactionalId", id)
			st.state = Ongoing
		}
		loaded[id] = st
	}
	if skipped > 0 || corrupt > 0 {
		c.log.Warn("txn: records not loaded", "partition", p, "unknown", skipped, "corrupt", corrupt)
	}
	return loaded, nil
}
