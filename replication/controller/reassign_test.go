package controller

import (
	"slices"
	"testing"
)

// PartitionReassignmentReplicas: the merged replicas are the target then the
// removing ones; adding and removing are sorted.
func TestReassignTo(t *testing.T) {
	cases := []struct {
		cur, target                []int32
		replicas, adding, removing []int32
	}{
		{[]int32{1, 2, 3}, []int32{2, 3, 4}, []int32{2, 3, 4, 1}, []int32{4}, []int32{1}},
		{[]int32{3, 1, 2}, []int32{6, 5, 4}, []int32{6, 5, 4, 1, 2, 3}, []int32{4, 5, 6}, []int32{1, 2, 3}},
		{[]int32{1, 2, 3}, []int32{3, 2, 1}, []int32{3, 2, 1}, nil, nil},
		{[]int32{1, 2, 3}, []int32{2}, []int32{2, 1, 3}, nil, []int32{1, 3}},
		{[]int32{1}, []int32{1, 2, 3}, []int32{1, 2, 3}, []int32{2, 3}, nil},
	}
	for _, c := range cases {
		a := reassignTo(c.cur, c.target)
		if !slices.Equal(a.replicas, c.replicas) || !slices.Equal(a.adding, c.adding) || !slices.Equal(a.removing, c.removing) {
			t.Errorf("%v -> %v: got %+v", c.cur, c.target, a)
		}
	}
}

func TestMaybeCompleteReassignment(t *testing.T) {
	move := reassignTo([]int32{1, 2, 3}, []int32{2, 3, 4}) // [2 3 4 1] +4 -1
	cases := []struct {
		name     string
		a        assignment
		isr      []int32
		ok       bool
		replicas []int32
		newISR   []int32
	}{
		{"none in progress", assignment{replicas: []int32{1, 2}}, []int32{1, 2}, false, nil, nil},
		{"adding not in ISR", move, []int32{1, 2, 3}, false, nil, nil},
		{"adding in ISR", move, []int32{1, 2, 3, 4}, true, []int32{2, 3, 4}, []int32{2, 3, 4}},
		{"ISR order kept", move, []int32{4, 1, 3, 2}, true, []int32{2, 3, 4}, []int32{4, 3, 2}},
		{"a kept target replica out of the ISR", move, []int32{1, 2, 4}, false, nil, nil},
		{"only removing, target in ISR", reassignTo([]int32{1, 2, 3}, []int32{2}), []int32{1, 2}, true, []int32{2}, []int32{2}},
		{"only removing, ISR all removed", reassignTo([]int32{1, 2, 3}, []int32{2}), []int32{1, 3}, false, nil, nil},
		{"only adding", reassignTo([]int32{1}, []int32{1, 2}), []int32{1, 2}, true, []int32{1, 2}, []int32{1, 2}},
	}
	for _, c := range cases {
		done, isr, ok := c.a.maybeComplete(c.isr)
		if ok != c.ok || ok && (!slices.Equal(done.replicas, c.replicas) || !slices.Equal(isr, c.newISR) || done.reassigning()) {
			t.Errorf("%s: got %+v isr %v ok=%v", c.name, done, isr, ok)
		}
		if !ok && (!done.equal(c.a) || !slices.Equal(isr, c.isr)) {
			t.Errorf("%s: not completed but changed: %+v %v", c.name, done, isr)
		}
	}
}

// PartitionReassignmentRevert.
func TestRevertReassignment(t *testing.T) {
	move := reassignTo([]int32{1, 2, 3}, []int32{2, 3, 4})
	a, isr, unclean := move.revert([]int32{1, 2, 4})
	if !slices.Equal(a.replicas, []int32{2, 3, 1}) || a.reassigning() || !slices.Equal(isr, []int32{1, 2}) || unclean {
		t.Fatalf("revert: %+v %v %v", a, isr, unclean)
	}
	a, isr, unclean = move.revert([]int32{4})
	if !slices.Equal(a.replicas, []int32{2, 3, 1}) || !slices.Equal(isr, []int32{2}) || !unclean {
		t.Fatalf("unclean revert: %+v %v %v", a, isr, unclean)
	}
}

// A completion inside buildChange elects among the target replicas and
// bumps the leader epoch when the leader stays but replicas leave.
func TestBuildChangeCompletesReassignment(t *testing.T) {
	tp := &Topic{Name: "t", ID: [16]byte{1}}
	p := &Partition{Topic: "t", Replicas: []int32{2, 3, 4, 1}, ISR: []int32{1, 2, 3}, Leader: 1,
		AddingReplicas: []int32{4}, RemovingReplicas: []int32{1}}
	c := buildChange(tp, p, changeRequest{targetISR: []int32{1, 2, 3, 4}, election: electionOnline, acceptable: live(1, 2, 3, 4)})
	if c == nil || c.Leader != 2 || !slices.Equal(c.ISR, []int32{2, 3, 4}) || !slices.Equal(c.Replicas, []int32{2, 3, 4}) ||
		c.Adding != nil || c.Removing != nil || c.BumpLeaderEpoch {
		t.Fatalf("got %+v", c)
	}
	// 2 is not acceptable: 3 leads.
	c = buildChange(tp, p, changeRequest{targetISR: []int32{1, 2, 3, 4}, election: electionOnline, acceptable: live(1, 3, 4)})
	if c == nil || c.Leader != 3 {
		t.Fatalf("got %+v", c)
	}
	q := *p
	q.Replicas, q.RemovingReplicas = []int32{1, 2, 4, 3}, []int32{3}
	c = buildChange(tp, &q, changeRequest{targetISR: []int32{1, 2, 3, 4}, election: electionOnline, acceptable: live(1, 2, 3, 4)})
	if c == nil || c.Leader != 1 || !c.BumpLeaderEpoch || !slices.Equal(c.Replicas, []int32{1, 2, 4}) {
		t.Fatalf("got %+v", c)
	}
	// Without the adding replica in the ISR, an ISR change leaves the
	// assignment alone.
	c = buildChange(tp, p, changeRequest{targetISR: []int32{1, 2}, election: electionOnline, acceptable: live(1, 2, 3, 4)})
	if c == nil || c.Replicas != nil || c.BumpLeaderEpoch || !slices.Equal(c.ISR, []int32{1, 2}) {
		t.Fatalf("got %+v", c)
	}
}
