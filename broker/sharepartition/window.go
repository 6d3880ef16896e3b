package sharepartition

// window is the in-flight records of a share-partition: every offset from
// the share-partition start offset (SPSO) to the end offset (SPEO), one
// entry each. Offsets before the SPSO are done with; offsets after the
// SPEO were never acquired. Its size is bounded by
// share.partition.max.record.locks (new records are acquired only while
// the window is smaller), so a dense array is both simple and small. The
// array is a ring: the start moving forward and the end growing reuse it,
// where a slice cut at the front and appended at the back would be
// reallocated every few thousand records.
type window struct {
	start int64 // SPSO
	buf   []inflight
	head  int // index in buf of the record at start
	n     int // records in the window
	// availFrom is at or below the first settled Available record (a
	// lower bound: nextFetchOffset scans from it, not from the start, and
	// moves it up). Whatever makes a record settled Available lowers it
	// (push, a committed release); its zero value is always right.
	availFrom int64
}

// size is the number of records in the window.
func (w *window) size() int { return w.n }

// rec returns the i-th record from the start (0 <= i < size).
func (w *window) rec(i int) *inflight {
	i += w.head
	if i >= len(w.buf) {
		i -= len(w.buf)
	}
	return &w.buf[i]
}

// end is the SPEO: the last offset in the window (start-1 when empty).
func (w *window) end() int64 { return w.start + int64(w.n) - 1 }

func (w *window) contains(off int64) bool { return off >= w.start && off <= w.end() }

// at returns the record at off, which must be in the window.
func (w *window) at(off int64) *inflight { return w.rec(int(off - w.start)) }

// push appends the record for offset end()+1.
func (w *window) push(r inflight) {
	if r.state == Available {
		w.lowerAvail(w.end() + 1)
	}
	if w.n == len(w.buf) {
		w.grow()
	}
	w.n++
	*w.rec(w.n - 1) = r
}

// grow doubles the ring, the records in order from index 0.
func (w *window) grow() {
	buf := make([]inflight, max(2*len(w.buf), 64))
	for i := range w.n {
		buf[i] = *w.rec(i)
	}
	w.buf, w.head = buf, 0
}

// popFront drops the first k records (k <= size) and moves the start.
func (w *window) popFront(k int) {
	for i := range k {
		*w.rec(i) = inflight{} // let go of member ids
	}
	w.start += int64(k)
	w.n -= k
	w.head += k
	if w.head >= len(w.buf) {
		w.head -= len(w.buf)
	}
	if w.n == 0 {
		w.buf, w.head = nil, 0 // an idle share-partition keeps no array
	}
}

// lowerAvail notes that the record at off may be settled Available now.
func (w *window) lowerAvail(off int64) { w.availFrom = min(w.availFrom, off) }

// advance moves the start past terminal, settled records and returns
// whether it moved (Kafka's maybeUpdateCachedStateAndOffsets).
func (w *window) advance() bool {
	k := 0
	for k < w.n {
		if r := w.rec(k); !r.state.terminal() || r.pending {
			break
		}
		k++
	}
	if k == 0 {
		return false
	}
	w.popFront(k)
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
		w.popFront(w.n)
		w.start = off
		return
	}
	w.popFront(int(off - w.start))
}

// tentativeStart is the start offset once every pending transition
// commits: what a state write records.
func (w *window) tentativeStart() int64 {
	k := 0
	for k < w.n && w.rec(k).state.terminal() {
		k++
	}
	return w.start + int64(k)
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
	for i := max(w.availFrom-w.start, 0); i < int64(w.n); i++ {
		if r := w.rec(int(i)); r.state == Available && !r.pending {
			w.availFrom = w.start + i
			return w.availFrom
		}
	}
	w.availFrom = w.end() + 1
	return w.availFrom
}
