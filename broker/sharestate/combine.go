package sharestate

import (
	"container/heap"
	"slices"
)

// combineBatches merges state batches into one sorted list of
// non-overlapping batches, as Kafka's PersisterStateBatchCombiner does:
//
//   - offsets below startOffset are dropped (startOffset -1 keeps all);
//   - where batches overlap, the one with the higher delivery count wins,
//     and at equal counts the higher delivery state (a terminal state
//     beats Available): the state of an offset only moves forward, so the
//     merge does not depend on the order the batches came in;
//   - contiguous batches with the same state and count are coalesced.
//
// It is a pure function; neither input is modified.
func combineBatches(soFar, added []StateBatch, startOffset int64) []StateBatch {
	all := make([]StateBatch, 0, len(soFar)+len(added))
	for _, list := range [][]StateBatch{soFar, added} {
		for _, b := range list {
			if b.LastOffset < b.FirstOffset || startOffset != -1 && b.LastOffset < startOffset {
				continue
			}
			if startOffset != -1 && b.FirstOffset < startOffset {
				b.FirstOffset = startOffset
			}
			all = append(all, b)
		}
	}
	if len(all) <= 1 {
		return all
	}
	slices.SortFunc(all, func(x, y StateBatch) int { return cmpInt64(x.FirstOffset, y.FirstOffset) })
	return coalesce(sweep(all))
}

// higher reports whether a's delivery information takes precedence over
// b's (Kafka's compareBatchDeliveryInfo).
func higher(a, b StateBatch) bool {
	if a.DeliveryCount != b.DeliveryCount {
		return a.DeliveryCount > b.DeliveryCount
	}
	return a.DeliveryState > b.DeliveryState
}

// sweep walks the offsets from left to right keeping the covering batches
// in a heap by precedence; each stretch between two boundaries takes the
// state of the strongest batch covering it. sorted is ordered by first
// offset.
func sweep(sorted []StateBatch) []StateBatch {
	var out []StateBatch
	active := &batchHeap{}
	next := 0
	pos := sorted[0].FirstOffset
	for next < len(sorted) || active.Len() > 0 {
		for next < len(sorted) && sorted[next].FirstOffset <= pos {
			heap.Push(active, sorted[next])
			next++
		}
		for active.Len() > 0 && (*active)[0].LastOffset < pos {
			heap.Pop(active)
		}
		if active.Len() == 0 {
			if next == len(sorted) {
				break
			}
			pos = sorted[next].FirstOffset // a gap: jump to the next batch
			continue
		}
		top := (*active)[0]
		end := top.LastOffset // the stretch ends where top ends or a batch starts
		if next < len(sorted) && sorted[next].FirstOffset-1 < end {
			end = sorted[next].FirstOffset - 1
		}
		out = append(out, StateBatch{FirstOffset: pos, LastOffset: end, DeliveryState: top.DeliveryState, DeliveryCount: top.DeliveryCount})
		if end == maxOffset {
			break
		}
		pos = end + 1
	}
	return out
}

const maxOffset = int64(^uint64(0) >> 1)

// coalesce joins contiguous batches with the same state and count.
func coalesce(in []StateBatch) []StateBatch {
	out := in[:0]
	for _, b := range in {
		if n := len(out); n > 0 {
			last := &out[n-1]
			if last.LastOffset+1 == b.FirstOffset && last.DeliveryState == b.DeliveryState && last.DeliveryCount == b.DeliveryCount {
				last.LastOffset = b.LastOffset
				continue
			}
		}
		out = append(out, b)
	}
	return out
}

// batchHeap orders batches by precedence, strongest first.
type batchHeap []StateBatch

func (h batchHeap) Len() int           { return len(h) }
func (h batchHeap) Less(i, j int) bool { return higher(h[i], h[j]) }
func (h batchHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *batchHeap) Push(x any)        { *h = append(*h, x.(StateBatch)) }
func (h *batchHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
