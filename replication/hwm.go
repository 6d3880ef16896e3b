package replication

// HighWatermark returns the leader's high watermark given the current one,
// the committed ISR, the maximal ISR (the committed one plus an expansion in
// flight, the leader included), the log end offsets of the maximal ISR's
// members and the effective min.insync.replicas (EffectiveMinISR). The result
// is the minimum LEO over the maximal ISR, never less than current.
//
// It does not advance while the committed ISR is smaller than minISR (Kafka
// 4.x Partition.isUnderMinIsr, KIP-966's strict min ISR). The committed ISR,
// not the maximal one, is what counts: a replica whose addition the
// controller has not committed yet is in neither the ISR nor the eligible
// leader replicas the controller would elect from if this leader failed, so
// an offset it helped past the HW could be lost with it. Holding the HW
// while the ISR is short is what makes every replica that leaves the ISR
// then an eligible leader: it holds everything below the HW.
//
// A member whose LEO is unknown (missing from leos) holds the HW where it
// is.
func HighWatermark(current int64, committedISR, maximalISR []int32, leos map[int32]int64, minISR int32) int64 {
	if int32(len(committedISR)) < minISR || len(maximalISR) == 0 {
		return current
	}
	low := int64(-1)
	for _, id := range maximalISR {
		leo, ok := leos[id]
		if !ok {
			return current
		}
		if low < 0 || leo < low {
			low = leo
		}
	}
	return max(current, low)
}

// EffectiveMinISR is min.insync.replicas capped at the number of replicas
// (Kafka's Partition.effectiveMinIsr): a topic whose min.insync.replicas
// exceeds its replication factor is not blocked for ever.
func EffectiveMinISR(minISR int32, replicas int) int32 {
	return max(min(minISR, int32(replicas)), 1)
}
