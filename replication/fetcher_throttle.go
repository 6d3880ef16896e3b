package replication

// The follower side of replication throttling (throttle.go), in the
// fetcher: a partition is left out of a round while the follower quota
// says so (ReplicaFetcherThread.buildFetch), and each fetch's bytes of a
// throttled partition are recorded (processPartitionData). A replica is in
// sync, never throttled, once its log end has reached the leader's high
// watermark of its last fetch (PartitionFetchState.isReplicaInSync).

// throttled reports whether p sits out this round. Called with f.mu held.
func (f *fetcher) throttled(p *Partition, fp *fetchPartition) bool {
	return f.opts.Throttle.ShouldThrottle(p.Topic, p.Index, fp.lag == 0)
}

// fetched notes a fetch's records and the leader's HW for p.
func (f *fetcher) fetched(p *Partition, bytes int, leaderHW int64) {
	if q := f.opts.Throttle; q != nil && q.IsThrottled(p.Topic, p.Index) {
		q.Record(bytes)
	}
	lag := max(leaderHW-p.log.LogEndOffset(), 0)
	f.mu.Lock()
	if fp, ok := f.partitions[p]; ok {
		fp.lag = lag
		if f.opts.Throttle != nil && lag != 0 {
			f.recheck[p] = struct{}{} // its turn depends on the quota
		}
	}
	f.mu.Unlock()
}
