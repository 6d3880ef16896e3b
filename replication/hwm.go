package replication

// HighWatermark returns the leader's high watermark given the current one,
// the log end offsets of the members of the maximal ISR (the leader included)
// and min.insync.replicas. The result is the minimum LEO over the maximal ISR,
// never less than current, and equal to current while the maximal ISR is
// smaller than minISR (Kafka 4.x, KIP-966). A member whose LEO is unknown
// (missing from leos) holds the HW where it is.
func HighWatermark(current int64, maximalISR []int32, leos map[int32]int64, minISR int32) int64 {
	if int32(len(maximalISR)) < minISR || len(maximalISR) == 0 {
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
