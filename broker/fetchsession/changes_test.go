package fetchsession

import (
	"testing"
	"time"
)

// countedIdle is an idle mark whose checks are counted.
type countedIdle struct {
	changed bool
	checks  *int
}

func (m *countedIdle) Unchanged() bool { *m.checks++; return !m.changed }
func (m *countedIdle) Release()        {}

// toldTracker names the marks a test says changed.
type toldTracker struct{ told []Idle }

func (t *toldTracker) Begin()   {}
func (t *toldTracker) Fetched() {}
func (t *toldTracker) Changed(out []Idle) []Idle {
	out = append(out, t.told...)
	t.told = t.told[:0]
	return out
}

// incrementalFetch is an incremental fetch of session id at epoch listing
// nothing; it answers every partition read quietly, marking it idle with
// marks[partition] when marks has one. It returns the partitions read.
func incrementalFetch(t *testing.T, c *Cache, id, epoch int32, marks map[int32]Idle) []int32 {
	t.Helper()
	x := c.NewContext(Request{Version: 12, SessionID: id, Epoch: epoch, Follower: true})
	if x.Kind != Incremental {
		t.Fatalf("kind %v, want incremental", x.Kind)
	}
	read := make([]int32, x.Len())
	res := make([]Result, x.Len())
	for i := range res {
		read[i] = x.Partition(i).Partition
		res[i] = quiet(10)
		if m, ok := marks[read[i]]; ok {
			res[i].Idle = m
		}
	}
	x.Respond(res, make([]bool, x.Len()))
	return read
}

// A fetch of a follower's session checks only the idle marks its tracker
// names as changed, not every mark, and reads those that changed (in the
// session's order) with the partitions that hold no mark; every mark is
// checked once per fullCheckInterval.
func TestIdleFetchChecksOnlyTheMarksToldChanged(t *testing.T) {
	const n = 100
	tr := &toldTracker{}
	clk := &clock{t: time.Unix(1000, 0)}
	c := New(Options{MaxSlots: 4, Now: clk.now, NewID: ids(), NewTracker: func() Tracker { return tr }})
	id := open(t, c, true, parts("t", n, 0))
	checks := 0
	marks := map[int32]Idle{}
	for i := range int32(n) {
		marks[i] = &countedIdle{checks: &checks}
	}
	if read := incrementalFetch(t, c, id, 1, marks); len(read) != n {
		t.Fatalf("first incremental fetch read %d partitions, want %d", len(read), n)
	}
	checks = 0
	for epoch := int32(2); epoch < 5; epoch++ {
		if read := incrementalFetch(t, c, id, epoch, nil); len(read) != 0 || checks != 0 {
			t.Fatalf("idle fetch: read %v, %d marks checked; want none, 0", read, checks)
		}
	}
	// Two marks change; the tracker names them, and a third unchanged one.
	marks[40].(*countedIdle).changed = true
	marks[7].(*countedIdle).changed = true
	tr.told = append(tr.told, marks[40], marks[7], marks[8])
	read := incrementalFetch(t, c, id, 5, nil)
	if len(read) != 2 || read[0] != 7 || read[1] != 40 || checks != 3 {
		t.Fatalf("after changes: read %v, %d marks checked; want [7 40], 3", read, checks)
	}
	// Partition 7 is answered without a mark: read every fetch, alone.
	checks = 0
	for epoch := int32(6); epoch < 8; epoch++ {
		if read := incrementalFetch(t, c, id, epoch, nil); len(read) != 2 || checks != 0 {
			t.Fatalf("fetch %d: read %v, %d marks checked; want the 2 unmarked, 0", epoch, read, checks)
		}
	}
	// A record answer moves a partition to the back: the order follows.
	clk.advance(fullCheckInterval)
	if read := incrementalFetch(t, c, id, 8, nil); len(read) != 2 || checks != n-2 {
		t.Fatalf("full check: read %v, %d marks checked; want 2, %d", read, checks, n-2)
	}
}

// A partition answered with records goes behind the others, and the
// partitions read by an idle fetch keep that order.
func TestIdleFetchKeepsTheReadingOrder(t *testing.T) {
	tr := &toldTracker{}
	clk := &clock{t: time.Unix(1000, 0)}
	c := New(Options{MaxSlots: 4, Now: clk.now, NewID: ids(), NewTracker: func() Tracker { return tr }})
	id := open(t, c, true, parts("t", 10, 0))
	checks := 0
	marks := map[int32]Idle{}
	for i := range int32(10) {
		if i != 2 && i != 5 {
			marks[i] = &countedIdle{checks: &checks}
		}
	}
	incrementalFetch(t, c, id, 1, marks)
	// Partition 2 answers records: it moves behind 5.
	x := c.NewContext(Request{Version: 12, SessionID: id, Epoch: 2, Follower: true})
	res := make([]Result, x.Len())
	for i := range res {
		res[i] = quiet(10)
		if x.Partition(i).Partition == 2 {
			res[i].Records = true
		}
	}
	x.Respond(res, make([]bool, x.Len()))
	marks[3].(*countedIdle).changed = true
	tr.told = append(tr.told, marks[3])
	if read := incrementalFetch(t, c, id, 3, nil); len(read) != 3 || read[0] != 3 || read[1] != 5 || read[2] != 2 {
		t.Fatalf("read %v, want [3 5 2]", read)
	}
}
