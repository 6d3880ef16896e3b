package sharepartition

// window is the in-flight records of a share-partition: every offset from
// the share-partition start offset (SPSO) to the end offset (SPEO), one
// entry each. Offsets before the SPSO are done with; offsets after the
// SPEO were never acquired. Its size is bounded by
// share.partition.max.record.locks (new records are acquired only while
// the window is smaller), so a dense slice is both simple and small.
type window struct {
	start int64 // SPSO
	recs  []inflight
	// availFrom is at or below the first settled Available record (a
	// lower bound: nextFetchOffset scans from it, not from the start, and
	// moves it up). Whatever makes a record settled Available lowers it
	// (push, a committed release); its zero value is always right.
	availFrom int64
}

// end is the SPEO: the last offset in the window (start-1 when empty).
func (w *window) end() int64 { return w.start + int64(len(w.recs)) - 1 }

func (w *window) contains(off int64) bool { return off >= w.start && off <= w.end() }

// at returns the record at off, which must be in the window.
func (w *window) at(off int64) *inflight { return &w.recs[off-w.start] }

// push appends the record for offset end()+1.
func (w *window) push(r inflight) {
	if r.state == Available {
		w.lowerAvail(w.end() + 1)
	}
	w.recs = append(w.recs, r)
}

// lowerAvail notes that the record at off may be settled Available now.
func (w *window) lowerAvail(off int64) { w.availFrom = min(w.availFrom, off) }

// advance moves the start past terminal, settled records and returns
// whether it moved (Kafka's maybeUpdateCachedStateAndOffsets).
func (w *window) advance() bool {
	n := 0
	for n < len(w.recs) && w.recs[n].state.terminal() && !w.recs[n].pending {
		n++
	}
	if n == 0 {
		return false
	}
	w.start += int64(n)
	w.recs = w.recs[n:]
	if len(w.recs) == 0 {
		w.recs = nil // let the backing array go
	}
	return true
}

// dropBelow removes the records below off, which the log no longer has
// (retention or DeleteRecords moved the log start offset past the SPSO).
// Acquired records there are lost to their acquirers.
func (w *window) dropBelow(off int64) {
	if off <= w.start {
		return
	}
	if off > w.end() {
		w.start, w.recs = off, nil
		return
	}
	w.recs = w.recs[off-w.start:]
	w.start = off
}

// tentativeStart is the start offset once every pending transition
// commits: what a state write records.
func (w *window) tentativeStart() int64 {
	n := 0
	for n < len(w.recs) && w.recs[n].state.terminal() {
		n++
	}
	return w.start + int64(n)
}

// completeFrom counts the terminal records at or after from (the delivery
// complete count of KIP-1226, as the tentative state has it).
func (w *window) completeFrom(from int64) int32 {
	var n int32
	for off := max(from, w.start); off <= w.end(); off++ {
		if w.at(off).state.terminal() {
			n++
		}
	}
	return n
}

// nextFetchOffset is where the next acquisition reads: the first
// Available settled record in the window, or the offset after it.
func (w *window) nextFetchOffset() int64 {
	for i := max(w.availFrom-w.start, 0); i < int64(len(w.recs)); i++ {
		if w.recs[i].state == Available && !w.recs[i].pending {
			w.availFrom = w.start + i
			return w.availFrom
		}
	}
	w.availFrom = w.end() + 1
	return w.availFrom
}
