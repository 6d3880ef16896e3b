package chaos

import (
	"fmt"
	"slices"
	"strings"
)

// Policy says which anomalies a configuration is allowed to show. The zero
// Policy is Kafka's promise for acks=all, min.insync.replicas=2, unclean
// leader election off and idempotent producers: no anomaly at all.
type Policy struct {
	// AllowLoss: acknowledged values may be lost or move (acks=1, unclean
	// election).
	AllowLoss bool
	// AllowVanish: values a consumer saw may vanish later (unclean
	// election only: a consumer reads only below the high watermark).
	AllowVanish bool
	// AllowDup: values may appear twice (producers without idempotence).
	AllowDup bool
	// AllowReorder: a producer's values may appear out of order within a
	// partition (no idempotence and several requests in flight).
	AllowReorder bool
}

// Result is what Check found in a history. Value lists name the values
// concerned (sorted); counts cover what lists do not.
type Result struct {
	Attempts      int // values invoked
	Acked         int // acknowledged
	Failed        int // failed on the client
	Indeterminate int // neither acknowledged nor failed when the run ended

	Lost        []string // acknowledged, absent from the final read
	WrongOffset []string // acknowledged at an offset where the final read does not hold them
	Duplicates  []string // at more than one offset in the final read
	Reordered   []string // after a later value of the same producer in the same partition
	Vanished    []string // read by a consumer during the run, absent from the final read
	Diverged    []string // "partition/offset: read V, final W": an offset that changed after being read
	Gaps        []string // "partition p: offsets a-b": missing from the final read
	Unexpected  []string // in the final read but never produced

	// UnackedAppeared counts values that failed or stayed indeterminate
	// but are in the final read: allowed (a timeout does not undo a write).
	UnackedAppeared int

	// FaultAttempts are values invoked while a fault was active;
	// FaultAcked those of them acknowledged.
	FaultAttempts, FaultAcked int

	// AckLatencyP99 and AckLatencyMax are over acknowledged values, from
	// invoke to acknowledgement, in milliseconds.
	AckLatencyP99, AckLatencyMax int64

	Reads        int // consumer read events
	FinalRecords int // records in the final read
	Faults       int // nemesis faults applied

	// Failures lists the anomalies the policy does not allow, each naming
	// its values. Empty means the history is valid.
	Failures []string
}

// Valid reports whether the history passed.
func (r *Result) Valid() bool { return len(r.Failures) == 0 }

// Availability is the share of all attempts acknowledged.
func (r *Result) Availability() float64 { return ratio(r.Acked, r.Attempts) }

// FaultAvailability is the share of attempts made during faults that were
// acknowledged.
func (r *Result) FaultAvailability() float64 { return ratio(r.FaultAcked, r.FaultAttempts) }

func ratio(a, b int) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}

// Summary is the one-line report of the figures.
func (r *Result) Summary() string {
	return fmt.Sprintf("lost=%d dup=%d reordered=%d vanished=%d diverged=%d wrong-offset=%d gaps=%d unexpected=%d "+
		"unacked-appeared=%d indeterminate=%d acked=%d/%d availability=%.3f fault-availability=%.3f (%d/%d) "+
		"ack-p99=%dms ack-max=%dms faults=%d reads=%d final=%d",
		len(r.Lost), len(r.Duplicates), len(r.Reordered), len(r.Vanished), len(r.Diverged), len(r.WrongOffset),
		len(r.Gaps), len(r.Unexpected), r.UnackedAppeared, r.Indeterminate, r.Acked, r.Attempts,
		r.Availability(), r.FaultAvailability(), r.FaultAcked, r.FaultAttempts,
		r.AckLatencyP99, r.AckLatencyMax, r.Faults, r.Reads, r.FinalRecords)
}

// position is a record's place in the log.
type position struct {
	partition int32
	offset    int64
}

func (p position) String() string { return fmt.Sprintf("%d/%d", p.partition, p.offset) }

// invocation is what a producer asked for one value.
type invocation struct {
	proc   string
	seq    int // rank of the value among its producer's invocations
	time   int64
	okTime int64
	acked  bool
	failed bool
	ackPos position
}

// Check analyses a history. It is a pure function of the events.
func Check(events []Event, policy Policy) *Result {
	r := &Result{}
	invoked := map[string]*invocation{}
	seqs := map[string]int{}
	finalAt := map[position]string{}
	finalPos := map[string][]position{}
	var reads []Event
	var windows [][2]int64
	for _, e := range events {
		switch e.Type {
		case Invoke:
			if _, ok := invoked[e.Value]; ok {
				continue // a value is invoked once; a second invoke is a workload bug
			}
			invoked[e.Value] = &invocation{proc: e.Proc, seq: seqs[e.Proc], time: e.Time}
			seqs[e.Proc]++
		case Ok:
			if inv := invoked[e.Value]; inv != nil {
				inv.acked, inv.ackPos, inv.okTime = true, position{e.Partition, e.Offset}, e.Time
			}
		case Fail:
			if inv := invoked[e.Value]; inv != nil {
				inv.failed = true
			}
		case Read:
			reads = append(reads, e)
		case Final:
			p := position{e.Partition, e.Offset}
			if _, seen := finalAt[p]; seen {
				continue // the same offset read twice by the final reader
			}
			finalAt[p] = e.Value
			finalPos[e.Value] = append(finalPos[e.Value], p)
		case NemesisStart:
			windows = append(windows, [2]int64{e.Time, -1})
			r.Faults++
		case NemesisStop:
			for i := len(windows) - 1; i >= 0; i-- {
				if windows[i][1] < 0 {
					windows[i][1] = e.Time
					break
				}
			}
		}
	}
	r.Reads = len(reads)
	r.FinalRecords = len(finalAt)
	r.checkProduced(invoked, finalPos, windows)
	r.checkFinal(invoked, finalAt, finalPos)
	r.checkReads(reads, finalAt, finalPos)
	r.judge(policy)
	return r
}

// checkProduced compares what producers were told with the final read.
func (r *Result) checkProduced(invoked map[string]*invocation, finalPos map[string][]position, windows [][2]int64) {
	var latencies []int64
	defer func() {
		if len(latencies) > 0 {
			slices.Sort(latencies)
			r.AckLatencyP99 = latencies[len(latencies)*99/100] / 1000
			r.AckLatencyMax = latencies[len(latencies)-1] / 1000
		}
	}()
	for v, inv := range invoked {
		r.Attempts++
		during := inFault(inv.time, windows)
		if during {
			r.FaultAttempts++
		}
		switch {
		case inv.acked:
			r.Acked++
			latencies = append(latencies, inv.okTime-inv.time)
			if during {
				r.FaultAcked++
			}
		case inv.failed:
			r.Failed++
		default:
			r.Indeterminate++
		}
		pos := finalPos[v]
		switch {
		case inv.acked && len(pos) == 0:
			r.Lost = append(r.Lost, v)
		case inv.acked && !slices.Contains(pos, inv.ackPos):
			r.WrongOffset = append(r.WrongOffset, fmt.Sprintf("%s acked at %v, final at %v", v, inv.ackPos, pos))
		case !inv.acked && len(pos) > 0:
			r.UnackedAppeared++
		}
	}
	slices.Sort(r.Lost)
	slices.Sort(r.WrongOffset)
}

func inFault(t int64, windows [][2]int64) bool {
	for _, w := range windows {
		if t >= w[0] && (w[1] < 0 || t <= w[1]) {
			return true
		}
	}
	return false
}

// checkFinal looks at the final read alone: duplicates, order, gaps and
// values nobody produced.
func (r *Result) checkFinal(invoked map[string]*invocation, finalAt map[position]string, finalPos map[string][]position) {
	for v, pos := range finalPos {
		if len(pos) > 1 {
			r.Duplicates = append(r.Duplicates, v)
		}
		if invoked[v] == nil {
			r.Unexpected = append(r.Unexpected, v)
		}
	}
	slices.Sort(r.Duplicates)
	slices.Sort(r.Unexpected)

	byPartition := map[int32][]int64{}
	for p := range finalAt {
		byPartition[p.partition] = append(byPartition[p.partition], p.offset)
	}
	parts := make([]int32, 0, len(byPartition))
	for p := range byPartition {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	for _, p := range parts {
		offsets := byPartition[p]
		slices.Sort(offsets)
		next := int64(0)
		last := map[string]int{} // producer -> highest seq so far in this partition
		for _, o := range offsets {
			if o > next {
				r.Gaps = append(r.Gaps, fmt.Sprintf("partition %d: offsets %d-%d", p, next, o-1))
			}
			next = o + 1
			v := finalAt[position{p, o}]
			inv := invoked[v]
			if inv == nil {
				continue
			}
			if prev, ok := last[inv.proc]; ok && inv.seq < prev {
				r.Reordered = append(r.Reordered, fmt.Sprintf("%s at %d/%d", v, p, o))
				continue
			}
			last[inv.proc] = inv.seq
		}
	}
}

// checkReads compares what consumers saw during the run with the final read.
func (r *Result) checkReads(reads []Event, finalAt map[position]string, finalPos map[string][]position) {
	vanished := map[string]bool{}
	diverged := map[position]string{}
	for _, e := range reads {
		if len(finalPos[e.Value]) == 0 {
			vanished[e.Value] = true
			continue
		}
		p := position{e.Partition, e.Offset}
		if w, ok := finalAt[p]; !ok || w != e.Value {
			if !ok {
				w = "nothing"
			}
			diverged[p] = fmt.Sprintf("%v: read %s, final %s", p, e.Value, w)
		}
	}
	for v := range vanished {
		r.Vanished = append(r.Vanished, v)
	}
	for _, d := range diverged {
		r.Diverged = append(r.Diverged, d)
	}
	slices.Sort(r.Vanished)
	slices.Sort(r.Diverged)
}

// judge lists the anomalies the policy does not allow.
func (r *Result) judge(p Policy) {
	fail := func(allowed bool, what string, vals []string) {
		if allowed || len(vals) == 0 {
			return
		}
		r.Failures = append(r.Failures, fmt.Sprintf("%d %s: %s", len(vals), what, names(vals, 20)))
	}
	fail(p.AllowLoss, "acknowledged values lost", r.Lost)
	fail(p.AllowLoss, "acknowledged values not at their acknowledged offset", r.WrongOffset)
	fail(p.AllowDup, "duplicated values", r.Duplicates)
	fail(p.AllowReorder, "values out of producer order", r.Reordered)
	fail(p.AllowVanish, "values read by a consumer that later vanished", r.Vanished)
	fail(p.AllowVanish, "offsets whose value changed after a consumer read it", r.Diverged)
	fail(false, "gaps in the final read", r.Gaps)
	fail(false, "values nobody produced", r.Unexpected)
}

func names(vals []string, max int) string {
	if len(vals) <= max {
		return strings.Join(vals, ", ")
	}
	return strings.Join(vals[:max], ", ") + fmt.Sprintf(", ... (%d more)", len(vals)-max)
}
