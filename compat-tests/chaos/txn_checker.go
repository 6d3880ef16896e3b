package chaos

import (
	"fmt"
	"slices"
	"strconv"
)

// Events of the transactional workload (txn_workload_test.go). A
// transaction is named "<producer>/<n>" in Info.
const (
	// TxnProduce: Value was produced in transaction Info (acknowledged at
	// Partition/Offset when Offset >= 0; -1 when the produce failed).
	TxnProduce = "txn-produce"
	// TxnCommit: EndTransaction(commit) of Info succeeded.
	TxnCommit = "txn-commit"
	// TxnAbort: transaction Info was aborted (EndTransaction(abort)
	// succeeded, or the producer was fenced before it could end).
	TxnAbort = "txn-abort"
	// TxnUnknown: ending transaction Info failed; it may have committed or
	// not, but all or nothing.
	TxnUnknown = "txn-unknown"
	// Watermark: a read_committed consumer's fetch answered high watermark
	// Offset and last stable offset Info for Partition.
	Watermark = "watermark"
)

// TxnResult is what CheckTxn found in a history of the transactional
// workload. Lists name values or transactions.
type TxnResult struct {
	Committed, Aborted, Unknown int // transactions by outcome
	// AbortedReads are values of aborted transactions a read_committed
	// consumer was given, during the run or in the final read.
	AbortedReads []string
	// LostCommitted are values of committed transactions absent from the
	// final read_committed read.
	LostCommitted []string
	// Duplicates are values at more than one offset in the final read.
	Duplicates []string
	// Partial are transactions of unknown outcome only some of whose
	// values are in the final read (atomicity).
	Partial []string
	// Unexpected are values in the final read nobody produced.
	Unexpected []string
	// WatermarksBack are "consumer partition: hw/lso a -> b" where a
	// consumer saw the high watermark or the last stable offset move
	// back, or the last stable offset above the high watermark.
	WatermarksBack []string
	FinalRecords   int
	Failures       []string
}

// Valid reports whether the history passed.
func (r *TxnResult) Valid() bool { return len(r.Failures) == 0 }

// Summary is the one-line report.
func (r *TxnResult) Summary() string {
	return fmt.Sprintf("aborted-reads=%d lost-committed=%d dup=%d partial=%d unexpected=%d watermarks-back=%d "+
		"transactions committed=%d aborted=%d unknown=%d final=%d",
		len(r.AbortedReads), len(r.LostCommitted), len(r.Duplicates), len(r.Partial), len(r.Unexpected),
		len(r.WatermarksBack), r.Committed, r.Aborted, r.Unknown, r.FinalRecords)
}

// CheckTxn analyses a history of the transactional workload: no record of
// an aborted transaction is ever returned to read_committed, none of a
// committed one is lost or duplicated, a transaction of unknown outcome is
// all or nothing, and what consumers see of the high watermark and the
// last stable offset never moves back. It is a pure function of the events.
func CheckTxn(events []Event) *TxnResult {
	r := &TxnResult{}
	txnOf := map[string]string{}        // value -> transaction
	values := map[string][]string{}     // transaction -> values
	outcome := map[string]string{}      // transaction -> TxnCommit, TxnAbort, TxnUnknown
	finalPos := map[string][]position{} // value -> positions in the final read
	finalAt := map[position]bool{}      // final read positions seen
	var reads []string                  // values consumers read during the run
	marks := map[string][2]int64{}      // consumer/partition -> last hw, lso
	for _, e := range events {
		switch e.Type {
		case TxnProduce:
			if _, ok := txnOf[e.Value]; !ok {
				txnOf[e.Value] = e.Info
				values[e.Info] = append(values[e.Info], e.Value)
			}
		case TxnCommit, TxnAbort, TxnUnknown:
			outcome[e.Info] = e.Type
		case Read:
			reads = append(reads, e.Value)
		case Final:
			p := position{e.Partition, e.Offset}
			if !finalAt[p] {
				finalAt[p] = true
				finalPos[e.Value] = append(finalPos[e.Value], p)
			}
		case Watermark:
			r.checkWatermark(marks, e)
		}
	}
	r.FinalRecords = len(finalAt)
	for _, out := range outcome {
		switch out {
		case TxnCommit:
			r.Committed++
		case TxnAbort:
			r.Aborted++
		default:
			r.Unknown++
		}
	}
	aborted := func(v string) bool { return outcome[txnOf[v]] == TxnAbort }
	seenAborted := map[string]bool{}
	for _, v := range reads {
		if aborted(v) {
			seenAborted[v] = true
		}
	}
	for v, pos := range finalPos {
		switch {
		case txnOf[v] == "":
			r.Unexpected = append(r.Unexpected, v)
		case aborted(v):
			seenAborted[v] = true
		}
		if len(pos) > 1 {
			r.Duplicates = append(r.Duplicates, v)
		}
	}
	for v := range seenAborted {
		r.AbortedReads = append(r.AbortedReads, v)
	}
	for txn, vals := range values {
		in := 0
		for _, v := range vals {
			if len(finalPos[v]) > 0 {
				in++
			}
		}
		switch outcome[txn] {
		case TxnCommit:
			for _, v := range vals {
				if len(finalPos[v]) == 0 {
					r.LostCommitted = append(r.LostCommitted, v)
				}
			}
		case TxnUnknown, "":
			if in > 0 && in < len(vals) {
				r.Partial = append(r.Partial, fmt.Sprintf("%s (%d of %d values)", txn, in, len(vals)))
			}
		}
	}
	for _, l := range [][]string{r.AbortedReads, r.LostCommitted, r.Duplicates, r.Partial, r.Unexpected, r.WatermarksBack} {
		slices.Sort(l)
	}
	fail := func(what string, vals []string) {
		if len(vals) > 0 {
			r.Failures = append(r.Failures, fmt.Sprintf("%d %s: %s", len(vals), what, names(vals, 20)))
		}
	}
	fail("aborted records returned to read_committed", r.AbortedReads)
	fail("committed records lost", r.LostCommitted)
	fail("duplicated records", r.Duplicates)
	fail("transactions partly visible", r.Partial)
	fail("records nobody produced", r.Unexpected)
	fail("high watermark or last stable offset moves back", r.WatermarksBack)
	return r
}

// checkWatermark records what consumer e.Proc saw of partition
// e.Partition: neither the HW (Offset) nor the LSO (Info) may move back,
// and the LSO may not pass the HW.
func (r *TxnResult) checkWatermark(marks map[string][2]int64, e Event) {
	lso, err := strconv.ParseInt(e.Info, 10, 64)
	if err != nil || e.Offset < 0 || lso < 0 {
		return // an error answer carries no watermarks
	}
	key := fmt.Sprintf("%s partition %d", e.Proc, e.Partition)
	prev, ok := marks[key]
	switch {
	case lso > e.Offset:
		r.WatermarksBack = append(r.WatermarksBack, fmt.Sprintf("%s: lso %d above hw %d", key, lso, e.Offset))
	case ok && e.Offset < prev[0]:
		r.WatermarksBack = append(r.WatermarksBack, fmt.Sprintf("%s: hw %d -> %d", key, prev[0], e.Offset))
	case ok && lso < prev[1]:
		r.WatermarksBack = append(r.WatermarksBack, fmt.Sprintf("%s: lso %d -> %d", key, prev[1], lso))
	}
	marks[key] = [2]int64{max(prev[0], e.Offset), max(prev[1], lso)}
}
