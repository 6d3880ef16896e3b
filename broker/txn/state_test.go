package txn

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

var allStates = []State{Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort, Dead, PrepareEpochFence}

// kafkaValidPrevious is Kafka 4's TransactionState.VALID_PREVIOUS_STATES,
// written out independently of validPrevious.
var kafkaValidPrevious = map[State][]State{
	Empty:             {Empty, CompleteCommit, CompleteAbort},
	Ongoing:           {Ongoing, Empty, CompleteCommit, CompleteAbort},
	PrepareCommit:     {Ongoing},
	PrepareAbort:      {Ongoing, PrepareEpochFence, Empty, CompleteCommit, CompleteAbort},
	CompleteCommit:    {PrepareCommit},
	CompleteAbort:     {PrepareAbort},
	Dead:              {Empty, CompleteAbort, CompleteCommit},
	PrepareEpochFence: {Ongoing},
}

// TestTransitions checks every pair of states, legal and illegal.
func TestTransitions(t *testing.T) {
	for _, to := range allStates {
		legal := map[State]bool{}
		for _, from := range kafkaValidPrevious[to] {
			legal[from] = true
		}
		for _, from := range allStates {
			err := checkTransition(from, to)
			if legal[from] != (err == nil) {
				t.Errorf("%v -> %v: legal=%v, got err=%v", from, to, legal[from], err)
			}
		}
		if err := checkTransition(State(42), to); err == nil {
			t.Errorf("unknown state -> %v allowed", to)
		}
	}
	if err := checkTransition(Empty, State(42)); err == nil {
		t.Error("Empty -> unknown state allowed")
	}
}

// TestStateCodes: the codes are Kafka's transaction_status values (and
// kmsg's), the names Kafka's admin names.
func TestStateCodes(t *testing.T) {
	want := []struct {
		s    State
		code int8
		name string
	}{
		{Empty, 0, "Empty"}, {Ongoing, 1, "Ongoing"}, {PrepareCommit, 2, "PrepareCommit"},
		{PrepareAbort, 3, "PrepareAbort"}, {CompleteCommit, 4, "CompleteCommit"},
		{CompleteAbort, 5, "CompleteAbort"}, {Dead, 6, "Dead"}, {PrepareEpochFence, 7, "PrepareEpochFence"},
	}
	for _, w := range want {
		if int8(w.s) != w.code || w.s.String() != w.name {
			t.Errorf("%v: code %d name %q, want %d %q", w.s, int8(w.s), w.s.String(), w.code, w.name)
		}
		if got, ok := StateFromName(w.name); !ok || got != w.s {
			t.Errorf("StateFromName(%q) = %v, %v", w.name, got, ok)
		}
	}
	if kmsg.TransactionState(PrepareEpochFence) != 7 {
		t.Error("kmsg disagrees")
	}
	if _, ok := StateFromName("Unknown"); ok {
		t.Error("Unknown is not a state")
	}
	if s := State(9).String(); s != "State(9)" {
		t.Errorf("String of an unknown state: %q", s)
	}
	for _, s := range allStates {
		wantExpire := s == Empty || s == CompleteCommit || s == CompleteAbort
		if s.expirationAllowed() != wantExpire {
			t.Errorf("%v expirationAllowed = %v", s, !wantExpire)
		}
	}
}

// TestPartitionFor: Java's String.hashCode over UTF-16 code units and
// Kafka's Utils.abs (Integer.MIN_VALUE -> 0); values computed with Java's
// algorithm.
func TestPartitionFor(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want int32
	}{
		{"", 0},
		{"a", 47},                   // 97
		{"hello", 22},               // 99162322
		{"txn-1", 10},               // 110810510
		{"my-transactional-id", 46}, // -959806496: abs before %
		{"polygenelubricants", 0},   // Integer.MIN_VALUE
		{"GydZG_", 0},               // Integer.MIN_VALUE
		{"\U0001F600", 49},          // surrogate pair d83d de00: 1772899
		{"\u00e9", 33},              // 233
	} {
		if got := PartitionFor(tc.id, 50); got != tc.want {
			t.Errorf("PartitionFor(%q, 50) = %d, want %d", tc.id, got, tc.want)
		}
	}
}
