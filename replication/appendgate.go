package replication

import "sync/atomic"

// LeaderAppendGate holds the appends as leader of a broker's partitions
// until the broker serves.
//
// A broker that restarts applies the partition roles of the metadata image
// it replays before it has registered again. After an unclean shutdown
// (a power cut) that image may still name it the leader at the epoch it
// led before, with a log that lost its unflushed tail, while the other
// replicas hold that epoch's records it lost. Its registration then takes
// it out of the ISR and the controller elects another leader at a new
// epoch (KIP-966's handleBrokerUncleanShutdown), but until then an append
// would write a batch of the old epoch at offsets where the new leader has
// other batches of the same epoch: (epoch, offset) no longer names one
// batch, and no OffsetsForLeaderEpoch or diverging-epoch answer can find
// the divergence. A follower so diverged fetched the new leader's batch
// holding its log end, which started below it, was refused
// (storage.ErrInvalidOffset) and backed off forever, out of the ISR (the
// txn-power-loss chaos scenario: the restarted broker's transaction
// coordinator wrote a transaction marker to a partition it led at the old
// epoch, before it served).
//
// Kafka's broker processes no request before the controller has
// acknowledged it caught up (BrokerServer enables request processing
// last), so neither a produce nor a WriteTxnMarkers reaches it; kbroker's
// coordinators append to the partitions they lead directly, so the hold
// is here, for every path: produce, markers and the coordinators' own logs.
// An append refused meanwhile gets NOT_LEADER_OR_FOLLOWER, which every
// writer retries.
type LeaderAppendGate struct {
	open atomic.Bool
}

// NewLeaderAppendGate returns a gate, held.
func NewLeaderAppendGate() *LeaderAppendGate { return &LeaderAppendGate{} }

// Open lets every append as leader through from now on.
func (g *LeaderAppendGate) Open() { g.open.Store(true) }

// isOpen reports whether appends may go through; a nil gate holds none.
func (g *LeaderAppendGate) isOpen() bool { return g == nil || g.open.Load() }
