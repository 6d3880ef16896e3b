package chaos

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// hist builds synthetic histories; times increase by one per event.
type hist struct{ events []Event }

func (h *hist) add(e Event) *hist {
	e.Time = int64(len(h.events))
	h.events = append(h.events, e)
	return h
}
func (h *hist) invoke(proc, v string) *hist { return h.add(Event{Proc: proc, Type: Invoke, Value: v}) }
func (h *hist) ok(proc, v string, p int32, o int64) *hist {
	return h.add(Event{Proc: proc, Type: Ok, Value: v, Partition: p, Offset: o})
}
func (h *hist) fail(proc, v string) *hist {
	return h.add(Event{Proc: proc, Type: Fail, Value: v, Info: "timeout"})
}
func (h *hist) read(v string, p int32, o int64) *hist {
	return h.add(Event{Proc: "c0", Type: Read, Value: v, Partition: p, Offset: o})
}
func (h *hist) final(v string, p int32, o int64) *hist {
	return h.add(Event{Proc: "final", Type: Final, Value: v, Partition: p, Offset: o})
}
func (h *hist) nemesis(typ string) *hist {
	return h.add(Event{Proc: "nemesis", Type: typ, Info: "kill"})
}

// clean is a valid history: two producers, two partitions, one fault.
func clean() *hist {
	h := &hist{}
	h.invoke("p0", "a0").ok("p0", "a0", 0, 0)
	h.invoke("p1", "b0").ok("p1", "b0", 0, 1)
	h.nemesis(NemesisStart)
	h.invoke("p0", "a1").ok("p0", "a1", 1, 0)
	h.invoke("p1", "b1").fail("p1", "b1")
	h.nemesis(NemesisStop)
	h.invoke("p0", "a2").ok("p0", "a2", 0, 2)
	h.read("a0", 0, 0).read("b0", 0, 1)
	h.final("a0", 0, 0).final("b0", 0, 1).final("a2", 0, 2).final("a1", 1, 0)
	return h
}

func TestCheckCleanHistory(t *testing.T) {
	r := Check(clean().events, Policy{})
	if !r.Valid() {
		t.Fatalf("clean history failed: %v", r.Failures)
	}
	want := "lost=0 dup=0 reordered=0 vanished=0 diverged=0 wrong-offset=0 gaps=0 unexpected=0 unacked-appeared=0 " +
		"indeterminate=0 acked=4/5 availability=0.800 fault-availability=0.500 (1/2) ack-p99=0ms ack-max=0ms faults=1 reads=2 final=4"
	if got := r.Summary(); got != want {
		t.Fatalf("summary\n got %s\nwant %s", got, want)
	}
}

func TestCheckFindsEachAnomaly(t *testing.T) {
	for _, tc := range []struct {
		name   string
		build  func(h *hist)
		policy Policy // a policy that allows the anomaly
		count  func(r *Result) int
		names  string // must appear in the failure
	}{
		{"lost", func(h *hist) {
			h.invoke("p0", "a3").ok("p0", "a3", 1, 1)
		}, Policy{AllowLoss: true}, func(r *Result) int { return len(r.Lost) }, "acknowledged values lost: a3"},
		{"wrong offset", func(h *hist) {
			h.invoke("p0", "a3").ok("p0", "a3", 1, 5).final("a3", 1, 1)
		}, Policy{AllowLoss: true}, func(r *Result) int { return len(r.WrongOffset) }, "a3 acked at 1/5"},
		{"duplicate", func(h *hist) {
			h.final("a2", 0, 3)
		}, Policy{AllowDup: true}, func(r *Result) int { return len(r.Duplicates) }, "duplicated values: a2"},
		{"reordered", func(h *hist) {
			h.invoke("p0", "a3").ok("p0", "a3", 1, 2).invoke("p0", "a4").ok("p0", "a4", 1, 1)
			h.final("a4", 1, 1).final("a3", 1, 2)
		}, Policy{AllowReorder: true, AllowLoss: true}, func(r *Result) int { return len(r.Reordered) }, "a3 at 1/2"},
		{"vanished", func(h *hist) {
			h.invoke("p1", "b2").read("b2", 1, 1)
		}, Policy{AllowVanish: true}, func(r *Result) int { return len(r.Vanished) }, "later vanished: b2"},
		{"diverged", func(h *hist) {
			h.invoke("p1", "b2").read("b2", 1, 1).final("b2", 1, 2).final("b1", 1, 1)
		}, Policy{AllowVanish: true}, func(r *Result) int { return len(r.Diverged) }, "1/1: read b2, final b1"},
		{"gap", func(h *hist) {
			h.invoke("p1", "b2").final("b2", 1, 3)
		}, Policy{}, func(r *Result) int { return len(r.Gaps) }, "partition 1: offsets 1-2"},
		{"unexpected", func(h *hist) {
			h.final("zz", 1, 1)
		}, Policy{}, func(r *Result) int { return len(r.Unexpected) }, "values nobody produced: zz"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := clean()
			tc.build(h)
			r := Check(h.events, Policy{})
			if tc.count(r) != 1 {
				t.Fatalf("want exactly one anomaly, got %d (%s)", tc.count(r), r.Summary())
			}
			if r.Valid() || !strings.Contains(strings.Join(r.Failures, "\n"), tc.names) {
				t.Fatalf("failures %q do not name %q", r.Failures, tc.names)
			}
			if tc.policy != (Policy{}) {
				if r := Check(h.events, tc.policy); !r.Valid() {
					t.Fatalf("allowed by %+v but failed: %v", tc.policy, r.Failures)
				}
			}
		})
	}
}

// Values that failed or never got an answer may appear: counted, allowed.
func TestCheckUnackedAppearedIsAllowed(t *testing.T) {
	h := clean()
	h.invoke("p1", "b2").final("b1", 1, 1).final("b2", 1, 2)
	r := Check(h.events, Policy{})
	if !r.Valid() {
		t.Fatalf("failed: %v", r.Failures)
	}
	if r.UnackedAppeared != 2 || r.Indeterminate != 1 || r.Failed != 1 {
		t.Fatalf("unacked-appeared=%d indeterminate=%d failed=%d, want 2 1 1", r.UnackedAppeared, r.Indeterminate, r.Failed)
	}
}

// Attempts made while no fault was active do not count toward the fault
// availability; a fault still open at the end counts until the end.
func TestCheckFaultWindows(t *testing.T) {
	h := &hist{}
	h.invoke("p0", "a0").fail("p0", "a0")
	h.nemesis(NemesisStart)
	h.invoke("p0", "a1").ok("p0", "a1", 0, 0)
	h.invoke("p0", "a2").fail("p0", "a2")
	h.final("a1", 0, 0)
	r := Check(h.events, Policy{})
	if r.FaultAttempts != 2 || r.FaultAcked != 1 || r.Attempts != 3 {
		t.Fatalf("fault %d/%d of %d attempts", r.FaultAcked, r.FaultAttempts, r.Attempts)
	}
}

func TestHistoryRoundTrip(t *testing.T) {
	h := NewHistory()
	h.Add(Event{Proc: "p0", Type: Invoke, Value: "a0"})
	h.Add(Event{Proc: "p0", Type: Ok, Value: "a0", Partition: 2, Offset: 7})
	path := t.TempDir() + "/h.jsonl"
	if err := WriteHistory(path, h.Events()); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	buf.WriteString(readFile(t, path))
	got, err := ReadHistory(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[1].Offset != 7 || got[1].Partition != 2 || got[1].Value != "a0" {
		t.Fatalf("round trip: %+v", got)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
