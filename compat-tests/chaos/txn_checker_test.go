package chaos

import (
	"strings"
	"testing"
)

// CheckTxn on hand-made histories: each anomaly is found, and a clean
// history passes.
func TestCheckTxn(t *testing.T) {
	produce := func(txn, v string, p int32, o int64) Event {
		return Event{Type: TxnProduce, Info: txn, Value: v, Partition: p, Offset: o}
	}
	final := func(v string, p int32, o int64) Event {
		return Event{Type: Final, Proc: "final", Value: v, Partition: p, Offset: o}
	}
	mark := func(c string, p int32, hw int64, lso string) Event {
		return Event{Type: Watermark, Proc: c, Partition: p, Offset: hw, Info: lso}
	}
	clean := []Event{
		produce("t0/0", "a", 0, 0), produce("t0/0", "b", 1, 0), {Type: TxnCommit, Info: "t0/0"},
		produce("t0/1", "c", 0, 2), {Type: TxnAbort, Info: "t0/1"},
		produce("t0/2", "d", 0, 4), produce("t0/2", "e", 1, 2), {Type: TxnUnknown, Info: "t0/2"},
		{Type: Read, Proc: "c0", Value: "a"},
		mark("c0", 0, 2, "1"), mark("c0", 0, 5, "5"),
		final("a", 0, 0), final("b", 1, 0), final("d", 0, 4), final("e", 1, 2),
	}
	if r := CheckTxn(clean); !r.Valid() || r.Committed != 1 || r.Aborted != 1 || r.Unknown != 1 {
		t.Fatalf("clean history: %s %v", r.Summary(), r.Failures)
	}
	for _, tc := range []struct {
		name  string
		extra []Event
		want  string
	}{
		{"aborted read", []Event{{Type: Read, Proc: "c1", Value: "c"}}, "aborted records returned"},
		{"aborted in the final read", []Event{final("c", 0, 2)}, "aborted records returned"},
		{"duplicate", []Event{final("a", 0, 9)}, "duplicated"},
		{"unexpected", []Event{final("zzz", 1, 7)}, "nobody produced"},
		{"hw back", []Event{mark("c0", 0, 4, "4")}, "moves back"},
		{"lso back", []Event{mark("c0", 0, 6, "3")}, "moves back"},
		{"lso above hw", []Event{mark("c1", 1, 3, "4")}, "moves back"},
	} {
		r := CheckTxn(append(append([]Event(nil), clean...), tc.extra...))
		if r.Valid() || !strings.Contains(strings.Join(r.Failures, "\n"), tc.want) {
			t.Errorf("%s: %v", tc.name, r.Failures)
		}
	}
	lost := append([]Event(nil), clean[:len(clean)-4]...)
	lost = append(lost, final("a", 0, 0), final("d", 0, 4)) // b (committed) lost, e (unknown, d's partner) missing
	r := CheckTxn(lost)
	if len(r.LostCommitted) != 1 || r.LostCommitted[0] != "b" || len(r.Partial) != 1 {
		t.Fatalf("lost and partial: %+v", r)
	}
}
