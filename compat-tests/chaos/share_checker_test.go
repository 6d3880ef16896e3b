package chaos

import (
	"strings"
	"testing"
)

func (h *hist) acquire(member, v string, count string) *hist {
	return h.add(Event{Proc: member, Type: ShareAcquire, Value: v, Info: count})
}
func (h *hist) ackOk(member, v, typ string) *hist {
	return h.add(Event{Proc: member, Type: ShareAckOk, Value: v, Info: typ})
}
func (h *hist) ackFail(member, v string) *hist {
	return h.add(Event{Proc: member, Type: ShareAckFail, Value: v, Info: "accept: NOT_LEADER_OR_FOLLOWER"})
}

// shareClean is a valid share history: a release redelivered, a failed
// acknowledgement redelivered, a record outstanding at a fault redelivered.
func shareClean() *hist {
	h := &hist{}
	h.invoke("p0", "a0").ok("p0", "a0", 0, 0)
	h.invoke("p0", "a1").ok("p0", "a1", 0, 1)
	h.invoke("p0", "a2").ok("p0", "a2", 0, 2)
	h.invoke("p0", "a3").ok("p0", "a3", 0, 3)
	h.acquire("m0", "a0", "1").ackOk("m0", "a0", ackAccept)
	h.acquire("m0", "a1", "1").ackOk("m0", "a1", ackRelease)
	h.acquire("m1", "a1", "2").ackOk("m1", "a1", ackAccept)
	h.acquire("m1", "a2", "1").ackFail("m1", "a2")
	h.acquire("m0", "a2", "2").ackOk("m0", "a2", ackAccept)
	h.acquire("m0", "a3", "1")
	h.nemesis(NemesisStart).nemesis(NemesisStop)
	h.acquire("m1", "a3", "1").ackOk("m1", "a3", ackAccept)
	h.invoke("p0", "a4").ok("p0", "a4", 1, 0)
	h.acquire("m0", "a4", "1").add(Event{Proc: "m0", Type: ShareAckFail, Value: "a4", Info: "accept: indeterminate: EOF"})
	h.add(Event{Proc: "share-final", Type: ShareSettled, Partition: 0, Offset: 4, Info: "4"})
	h.add(Event{Proc: "share-final", Type: ShareSettled, Partition: 1, Offset: 1, Info: "1"})
	return h
}

func TestCheckShareCleanHistory(t *testing.T) {
	r := CheckShare(shareClean().events)
	if len(r.Failures) > 0 {
		t.Fatalf("clean share history failed: %v", r.Failures)
	}
	want := "share: lost=0 double-accepted=0 after-accept=0 unexplained-redelivery=0 unsettled=0 accepted=4/5 maybe-accepted=1 deliveries=8 redelivered=3 released=1 ack-failures=2"
	if got := r.Summary(); got != want {
		t.Fatalf("summary\n got %s\nwant %s", got, want)
	}
}

// Each anomaly is found, and only it.
func TestCheckShareAnomalies(t *testing.T) {
	for _, c := range []struct {
		name  string
		add   func(h *hist)
		want  string
		extra int // other failures the anomaly implies
	}{
		{"lost", func(h *hist) { h.invoke("p0", "z").ok("p0", "z", 0, 9) }, "1 produced records never accepted by the share group: z", 0},
		{"lost though delivered", func(h *hist) {
			h.invoke("p0", "z").ok("p0", "z", 0, 9).acquire("m0", "z", "1").ackFail("m0", "z")
		}, "1 produced records never accepted by the share group: z", 0},
		// (a second acceptance needs a second delivery: both are reported)
		{"accepted twice", func(h *hist) { h.acquire("m1", "a0", "1").ackOk("m1", "a0", ackAccept) }, "records accepted twice: a0", 1},
		{"delivered after it was accepted", func(h *hist) { h.acquire("m1", "a2", "3") }, "records delivered after they were accepted: a2", 0},
		{"unexplained redelivery", func(h *hist) {
			h.invoke("p0", "z").ok("p0", "z", 0, 9)
			h.acquire("m0", "z", "1").acquire("m1", "z", "2").ackOk("m1", "z", ackAccept)
		}, "records delivered again with no release, failed acknowledgement or fault to explain it: z (delivery 2 by m1, after m0's unacknowledged delivery)", 0},
		{"unsettled partition", func(h *hist) {
			h.add(Event{Proc: "share-final", Type: ShareSettled, Partition: 2, Offset: 3, Info: "5"})
		}, "partitions whose records the group did not all settle: partition 2: start 3 of end 5", 0},
		{"maybe accepted in an unsettled partition", func(h *hist) {
			h.invoke("p0", "z").ok("p0", "z", 3, 0)
			h.acquire("m0", "z", "1").add(Event{Proc: "m0", Type: ShareAckFail, Value: "z", Info: "accept: indeterminate: EOF"})
		}, "1 produced records never accepted by the share group: z", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := shareClean()
			c.add(h)
			r := CheckShare(h.events)
			if len(r.Failures) != 1+c.extra || !strings.Contains(strings.Join(r.Failures, "\n"), c.want) {
				t.Fatalf("failures %q, want one with %q", r.Failures, c.want)
			}
		})
	}
}
