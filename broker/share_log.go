package broker

import (
	"github.com/kbroker/kbroker/broker/sharepartition"
	"github.com/kbroker/kbroker/record"
	"github.com/kbroker/kbroker/replication"
)

// The share-partition leader's view of a partition's log, and the read of
// a ShareFetch: the batches from the share-partition's next fetch offset,
// what read_committed needs of them, and the batches handed to the member.

// shareLog is a led partition's log as broker/sharepartition sees it.
type shareLog struct{ p *replication.Partition }

func (l shareLog) LogStartOffset() int64 {
	_, _, start := l.p.Offsets()
	return start
}

func (l shareLog) HighWatermark() int64 {
	hw, _, _ := l.p.Offsets()
	return hw
}

// LastStableOffset is where share.isolation.level=read_committed stops
// acquiring: the partition's last stable offset (the first offset of the
// oldest open transaction, or the high watermark).
func (l shareLog) LastStableOffset() int64 { return l.p.Log().LastStableOffset() }

func (l shareLog) OffsetForTimestamp(ts int64) (int64, bool) {
	found, err := l.p.ListOffset(ts, -1, false)
	if err != nil || found.Offset < 0 {
		return 0, false
	}
	return found.Offset, true
}

// shareAbortedTxns lists the aborted transactions overlapping [from, to]
// of a partition, from its transaction index, as a read_committed Fetch
// answers them (Kafka's AbortedTransactions): their records are archived,
// never handed out.
func shareAbortedTxns(p *replication.Partition, from, to int64) []sharepartition.AbortedTxn {
	aborted := p.Log().AbortedTransactions(from, to+1)
	out := make([]sharepartition.AbortedTxn, len(aborted))
	for i, a := range aborted {
		out[i] = sharepartition.AbortedTxn{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset}
	}
	return out
}

// shareBatches describes the batches of data (whole batches, as a read
// returns them) for an acquisition: offsets, producer, and whether a
// control batch ends a transaction with an ABORT.
func shareBatches(data []byte) []sharepartition.Batch {
	var out []sharepartition.Batch
	it := record.Batches(data)
	for it.Next() {
		h := it.Header()
		b := sharepartition.Batch{
			BaseOffset: h.BaseOffset, LastOffset: h.LastOffset(), ProducerID: h.ProducerID,
			Transactional: h.IsTransactional(), Control: h.IsControl(),
		}
		if b.Control {
			b.Abort = isAbortMarker(it.Batch())
		}
		out = append(out, b)
	}
	return out
}

// isAbortMarker reports whether a control batch holds an ABORT marker.
func isAbortMarker(batch []byte) bool {
	recs, err := record.Records(batch)
	if err != nil || !recs.Next() {
		return false
	}
	t, err := record.ParseControlKey(recs.Record().Key)
	return err == nil && t == record.ControlAbort
}

// acquiredBatches returns the batches of data that hold acquired records:
// the member gets whole batches and keeps the records of its ranges
// (ranges ascending, as Acquire returns them). When those batches lie
// next to each other in data (the usual case: an acquisition takes the
// records from the next fetch offset on), the answer is a slice of data
// itself, so the mapped log segment goes to the response without a copy
// (the caller keeps the read's reference until the response is written);
// batches with skipped ones between them are copied together.
func acquiredBatches(data []byte, ranges []sharepartition.AcquiredRange) []byte {
	var out []byte
	first, end := -1, -1 // [first, end) of data while the batches are contiguous
	pos := 0
	it := record.Batches(data)
	r := 0
	for it.Next() && r < len(ranges) {
		h := it.Header()
		b := it.Batch()
		at, next := pos, pos+len(b)
		pos = next
		for r < len(ranges) && ranges[r].LastOffset < h.BaseOffset {
			r++
		}
		if r >= len(ranges) || ranges[r].FirstOffset > h.LastOffset() {
			continue
		}
		switch {
		case out != nil:
			out = append(out, b...)
		case first < 0:
			first, end = at, next
		case end == at:
			end = next
		default: // a batch skipped between: copy from here on
			out = append(append(make([]byte, 0, end-first+len(b)), data[first:end]...), b...)
		}
	}
	if out != nil || first < 0 {
		return out
	}
	return data[first:end:end]
}
