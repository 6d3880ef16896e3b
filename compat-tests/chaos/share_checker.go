package chaos

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Share group events of a history (issue 16): share consumers record what
// each ShareFetch handed them and how each acknowledgement went.
const (
	// ShareAcquire: a share consumer (Proc) was handed Value at
	// Partition/Offset; Info is the delivery count.
	ShareAcquire = "share-acquire"
	// ShareAckOk: the broker answered the acknowledgement of Value
	// without error; Info is its type, "accept" or "release".
	ShareAckOk = "share-ack-ok"
	// ShareAckFail: the acknowledgement of Value failed (an error code, or
	// no answer); Info is "<type>: <error>", the error starting with
	// "indeterminate" when the acknowledgement may still have been applied
	// (no answer, REQUEST_TIMED_OUT).
	ShareAckFail = "share-ack-fail"
	// ShareSettled: after the run, the share group's start offset of
	// Partition is Offset; Info is the partition's end offset.
	ShareSettled = "share-settled"
)

// Acknowledgement types the share workload sends.
const (
	ackAccept  = "accept"
	ackRelease = "release"
)

// ShareResult is what CheckShare found in a history with share consumers.
type ShareResult struct {
	Produced    int // values acknowledged to producers
	Accepted    int // of them, accepted by a share consumer
	Deliveries  int // records handed to share consumers, redeliveries included
	Redelivered int // values handed out more than once
	Released    int // values released by a consumer (and so redelivered)
	AckFailures int // acknowledgements that failed or got no answer
	// MaybeAccepted: values whose acceptance got no answer and were not
	// delivered again; accepted if their partition settled.
	MaybeAccepted int

	// Lost: acknowledged to a producer, never accepted by a share consumer.
	Lost []string
	// DoubleAccepted: accepted (answered without error) more than once.
	DoubleAccepted []string
	// AfterAccept: handed out again after a delivery that was accepted.
	AfterAccept []string
	// Unexplained: handed out again although the delivery before was not
	// released, its acknowledgement did not fail, and no fault struck
	// while it was outstanding.
	Unexplained []string
	// Unsettled: "partition p: start s of end e": records the group
	// neither accepted nor archived when the run ended.
	Unsettled []string

	// Failures lists the anomalies, each naming its values. Empty means
	// the history is valid: every produced record accepted at least once,
	// none accepted twice, and redeliveries only of records not
	// acknowledged before a fault (or released).
	Failures []string
}

// Summary is the one-line report of the share figures.
func (r *ShareResult) Summary() string {
	return fmt.Sprintf("share: lost=%d double-accepted=%d after-accept=%d unexplained-redelivery=%d unsettled=%d accepted=%d/%d "+
		"maybe-accepted=%d deliveries=%d redelivered=%d released=%d ack-failures=%d",
		len(r.Lost), len(r.DoubleAccepted), len(r.AfterAccept), len(r.Unexplained), len(r.Unsettled), r.Accepted, r.Produced,
		r.MaybeAccepted, r.Deliveries, r.Redelivered, r.Released, r.AckFailures)
}

// delivery is one ShareAcquire of a value and what became of it.
type delivery struct {
	proc          string
	time          int64
	outcome       string // "", ShareAckOk+"/"+type, ShareAckFail
	indeterminate bool   // a failed acceptance that may have been applied
}

// CheckShare analyses the share consumers' events of a history. It is a
// pure function of the events.
func CheckShare(events []Event) *ShareResult {
	r := &ShareResult{}
	produced := map[string]int32{} // value -> partition
	deliveries := map[string][]*delivery{}
	settled := map[int32]bool{}
	var windows [][2]int64
	for _, e := range events {
		switch e.Type {
		case Ok:
			produced[e.Value] = e.Partition
		case ShareAcquire:
			deliveries[e.Value] = append(deliveries[e.Value], &delivery{proc: e.Proc, time: e.Time})
			r.Deliveries++
		case ShareAckOk, ShareAckFail:
			d := lastOpen(deliveries[e.Value], e.Proc)
			if d == nil {
				continue // an acknowledgement of nothing handed out: a workload bug
			}
			d.outcome = e.Type
			if e.Type == ShareAckOk {
				d.outcome += "/" + e.Info
			} else {
				r.AckFailures++
				d.indeterminate = strings.HasPrefix(e.Info, ackAccept+": indeterminate")
			}
		case ShareSettled:
			if strconv.FormatInt(e.Offset, 10) == e.Info {
				settled[e.Partition] = true
			} else {
				r.Unsettled = append(r.Unsettled, fmt.Sprintf("partition %d: start %d of end %s", e.Partition, e.Offset, e.Info))
			}
		case NemesisStart:
			windows = append(windows, [2]int64{e.Time, -1})
		case NemesisStop:
			for i := len(windows) - 1; i >= 0; i-- {
				if windows[i][1] < 0 {
					windows[i][1] = e.Time
					break
				}
			}
		}
	}
	r.Produced = len(produced)
	for v, p := range produced {
		ds := deliveries[v]
		switch {
		case slices.ContainsFunc(ds, isAccepted):
			r.Accepted++
		case len(ds) > 0 && ds[len(ds)-1].indeterminate && settled[p]:
			r.MaybeAccepted++
		default:
			r.Lost = append(r.Lost, v)
		}
	}
	for v, ds := range deliveries {
		r.checkDeliveries(v, ds, windows)
	}
	for _, l := range []*[]string{&r.Lost, &r.DoubleAccepted, &r.AfterAccept, &r.Unexplained, &r.Unsettled} {
		slices.Sort(*l)
	}
	r.judge()
	return r
}

func isAccepted(d *delivery) bool { return d.outcome == ShareAckOk+"/"+ackAccept }

// lastOpen is proc's latest delivery without an outcome.
func lastOpen(ds []*delivery, proc string) *delivery {
	for i := len(ds) - 1; i >= 0; i-- {
		if ds[i].proc == proc && ds[i].outcome == "" {
			return ds[i]
		}
	}
	return nil
}

// checkDeliveries judges the deliveries of one value, in the order they
// were handed out.
func (r *ShareResult) checkDeliveries(v string, ds []*delivery, windows [][2]int64) {
	accepted := 0
	for i, d := range ds {
		if d.outcome == ShareAckOk+"/"+ackRelease {
			r.Released++
		}
		if i == 0 {
			if isAccepted(d) {
				accepted++
			}
			continue
		}
		prev := ds[i-1]
		switch {
		case accepted > 0:
			r.AfterAccept = append(r.AfterAccept, v)
		case prev.outcome == ShareAckOk+"/"+ackRelease, prev.outcome == ShareAckFail:
		case !faultDuring(prev.time, d.time, windows):
			r.Unexplained = append(r.Unexplained, fmt.Sprintf("%s (delivery %d by %s, after %s's %s)", v, i+1, d.proc, prev.proc, outcomeName(prev)))
		}
		if isAccepted(d) {
			accepted++
		}
	}
	if len(ds) > 1 {
		r.Redelivered++
	}
	if accepted > 1 {
		r.DoubleAccepted = append(r.DoubleAccepted, v)
	}
}

func outcomeName(d *delivery) string {
	if d.outcome == "" {
		return "unacknowledged delivery"
	}
	return strings.TrimPrefix(d.outcome, "share-")
}

// faultDuring reports whether a fault was active at some time in [from, to].
func faultDuring(from, to int64, windows [][2]int64) bool {
	for _, w := range windows {
		if w[0] <= to && (w[1] < 0 || w[1] >= from) {
			return true
		}
	}
	return false
}

func (r *ShareResult) judge() {
	add := func(what string, vals []string) {
		if len(vals) > 0 {
			r.Failures = append(r.Failures, fmt.Sprintf("%d %s: %s", len(vals), what, names(vals, 10)))
		}
	}
	add("produced records never accepted by the share group", r.Lost)
	add("records accepted twice", r.DoubleAccepted)
	add("records delivered after they were accepted", r.AfterAccept)
	add("records delivered again with no release, failed acknowledgement or fault to explain it", r.Unexplained)
	add("partitions whose records the group did not all settle", r.Unsettled)
}
