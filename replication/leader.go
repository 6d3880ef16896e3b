package replication

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/record"
	"github.com/kbroker/kbroker/storage"
)

// AppendAsLeader appends a produce request's batches, parsed and validated
// by the broker (record.ParseProduce): they reach the log as they are. With acks=-1 it refuses
// with NOT_ENOUGH_REPLICAS, before appending, when the ISR is smaller than
// min.insync.replicas (Kafka checks the committed ISR). The append runs with
// roleMu held for reading and mu released: the log may flush (flush.messages)
// or write its epoch checkpoint.
func (p *Partition) AppendAsLeader(batches []record.Batch, acks int16, opts storage.AppendOptions) (storage.AppendInfo, error) {
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	epoch, err := p.leaderAppendEpoch(acks)
	if err != nil {
		return storage.AppendInfo{}, err
	}
	if !p.leaderAppends.isOpen() {
		// Checked after the role: a refusal for another reason says so.
		p.logger.Debug("append as leader held: the broker does not serve yet", "leader_epoch", epoch)
		return storage.AppendInfo{}, kerr.NotLeaderForPartition
	}
	info, err := p.log.AppendAsLeader(batches, epoch, opts)
	if err != nil {
		return info, err
	}
	if acks != -1 && p.log.Durable() {
		// acks=0/1 in durable mode: answered once the leader's copy is on
		// disk (acks=all waits for the HW, which counts flushed copies).
		if err := p.log.WaitDurable(); err != nil {
			return info, err
		}
	}
	ev := LogEndMoved
	if p.maybeAdvanceSoleHW() {
		ev |= HighWatermarkMoved
	}
	p.watchers.notify(ev)
	return info, nil
}

// leaderAppendEpoch checks that this replica may take an append with acks
// and returns the epoch to stamp. Must be called with roleMu held (which
// keeps the answer valid until it is released).
func (p *Partition) leaderAppendEpoch(acks int16) (int32, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	switch {
	case p.role != RoleLeader:
		return -1, kerr.NotLeaderForPartition
	case acks == -1 && int32(len(p.isr.committed)) < p.effectiveMinISRLocked():
		return -1, kerr.NotEnoughReplicas
	}
	return p.leaderEpoch, nil
}

// maybeAdvanceSoleHW moves the HW after an append when the leader alone is
// the ISR (the HW follows its LEO), and reports whether it moved. It looks
// at the ISR after the append has published the new LEO, so a shrink
// committed meanwhile either sees that LEO or is seen here.
func (p *Partition) maybeAdvanceSoleHW() bool {
	p.mu.RLock()
	single := len(p.isr.maximal()) == 1
	p.mu.RUnlock()
	if !single {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.maybeAdvanceHWLocked()
}

// WaitForHW blocks until the HW passes offset (acks=all: the batch is on
// every ISR member), answering nil; NOT_ENOUGH_REPLICAS_AFTER_APPEND once the
// ISR has shrunk below min.insync.replicas meanwhile; NOT_LEADER_OR_FOLLOWER
// if leadership moved; REQUEST_TIMED_OUT when ctx ends.
func (p *Partition) WaitForHW(ctx context.Context, offset int64) error {
	return p.WaitForHWUntil(ctx, nil, offset)
}

// WaitForHWUntil is WaitForHW that also gives up, with REQUEST_TIMED_OUT,
// once expired delivers or is closed (a produce request's timeout: one
// timer for all its partitions, instead of a context each).
func (p *Partition) WaitForHWUntil(ctx context.Context, expired <-chan time.Time, offset int64) error {
	if done, err := p.hwReached(offset); done {
		return err
	}
	w := NewWaiterFor(HighWatermarkMoved)
	p.watchers.add(w)
	defer p.watchers.remove(w)
	for {
		if done, err := p.hwReached(offset); done {
			return err
		}
		select {
		case <-w.C:
		case <-expired:
			return kerr.RequestTimedOut
		case <-ctx.Done():
			return kerr.RequestTimedOut
		}
	}
}

func (p *Partition) hwReached(offset int64) (bool, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	switch {
	case p.role != RoleLeader:
		return true, kerr.NotLeaderForPartition
	case p.log.HighWatermark() > offset:
		return true, nil
	case int32(len(p.isr.maximal())) < p.effectiveMinISRLocked():
		return true, kerr.NotEnoughReplicasAfterAppend
	}
	return false, nil
}

// ReadResult is what a fetch gets from a partition.
type ReadResult struct {
	storage.ReadResult
	HighWatermark  int64
	LogStartOffset int64
	LogEndOffset   int64
	// LastStableOffset is the partition's LSO (for every isolation level,
	// as Kafka answers it); Aborted lists the aborted transactions that
	// overlap the records read, for a read_committed consumer only.
	LastStableOffset int64
	Aborted          []storage.AbortedTxn
	// Diverging is set (and no data returned) when a follower's log diverges
	// from the leader's at its LastFetchedEpoch (KIP-320/KIP-595).
	Diverging *EpochEndOffset
	// Idle is set for a follower fetch of a session (FollowerFetch.Session)
	// that found the partition idle: the session may skip it while the mark
	// is unchanged (idle.go).
	Idle *IdleMark
}

// EpochEndOffset is an answer of OffsetForLeaderEpoch.
type EpochEndOffset struct {
	Epoch     int32
	EndOffset int64
}

// Isolation is a consumer's isolation level (Fetch and ListOffsets).
type Isolation int8

const (
	// ReadUncommitted reads up to the HW, aborted transactions included.
	ReadUncommitted Isolation = 0
	// ReadCommitted reads up to the last stable offset, with the aborted
	// transactions of the records read, for the client to skip.
	ReadCommitted Isolation = 1
)

// ReadForConsumer reads committed data (below the HW) for a
// read_uncommitted consumer.
func (p *Partition) ReadForConsumer(offset int64, maxBytes int32, currentLeaderEpoch int32, minOneBatch bool) (ReadResult, error) {
	return p.ReadForConsumerAt(ReadUncommitted, offset, maxBytes, currentLeaderEpoch, minOneBatch)
}

// ReadForConsumerAt reads for a consumer at isolation level iso: below
// the HW, or below the LSO with the aborted transactions that overlap the
// batches read (Kafka's fetch with isolation_level=read_committed). An
// empty read has no aborted transactions.
func (p *Partition) ReadForConsumerAt(iso Isolation, offset int64, maxBytes int32, currentLeaderEpoch int32, minOneBatch bool) (ReadResult, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.role != RoleLeader {
		return ReadResult{}, kerr.NotLeaderForPartition
	}
	if err := p.checkEpochLocked(currentLeaderEpoch); err != nil {
		return ReadResult{}, err
	}
	if err := p.checkHWCaughtUpLocked(); err != nil {
		return ReadResult{}, err
	}
	return p.readConsumerLocked(p.offsetsLocked(), iso, offset, maxBytes, minOneBatch)
}

// checkHWCaughtUpLocked refuses consumer fetches (OFFSET_NOT_AVAILABLE,
// retriable) while a new leader's HW is below the offset its epoch started
// at: the HW it took over (its own, or a checkpoint after a restart) can be
// older than the one its predecessor served, and consumers must never see
// the high watermark or the last stable offset move back. The HW reaches
// the epoch start once the ISR has fetched up to it. Kafka refuses
// ListOffsets so ("the leader is not able to guarantee monotonically
// increasing offsets due to a recent leader election and high-water mark
// lag"; ListOffsetAt's lagging rule); kbroker refuses consumer fetches too.
// Must be called with mu held.
func (p *Partition) checkHWCaughtUpLocked() error {
	if p.log.HighWatermark() < p.leaderEpochStartOffset {
		return kerr.OffsetNotAvailable
	}
	return nil
}

// BeginTxnVerification starts the verification of a transactional
// produce (storage.Log.BeginTxnVerification): the zero guard when the
// producer's transaction is already open here at epoch.
func (p *Partition) BeginTxnVerification(producerID int64, epoch int16, epochBump bool) storage.VerificationGuard {
	return p.log.BeginTxnVerification(producerID, epoch, epochBump)
}

// FollowerFetch is one partition of a follower's fetch.
type FollowerFetch struct {
	ReplicaID int32
	// ReplicaEpoch is the follower's broker epoch (Fetch v15+ ReplicaState);
	// 0 or -1: not given.
	ReplicaEpoch       int64
	FetchOffset        int64
	LastFetchedEpoch   int32 // -1: not given
	CurrentLeaderEpoch int32 // -1: not given
	MaxBytes           int32
	MinOneBatch        bool
	// Session is the follower's incremental fetch session, nil for a full
	// or sessionless fetch: an idle partition gets a mark of it (idle.go).
	Session *FollowerSession
}

// FetchReplica returns the replica id and broker epoch a Fetch request
// carries: ReplicaState from v15 (KIP-903), ReplicaID before, with the
// epoch unknown (-1). A consumer's id is -1.
func FetchReplica(req *kmsg.FetchRequest) (id int32, brokerEpoch int64) {
	if req.GetVersion() >= 15 {
		return req.ReplicaState.ID, req.ReplicaState.Epoch
	}
	return req.ReplicaID, -1
}

// UpdateFollowerAndRead serves a follower's fetch in Kafka's two steps. It
// records the follower's fetch offset as its LEO, which may move the HW and
// propose an ISR expansion (updateFollowerFetchState), then reads from the
// log up to the leader's LEO (readFromLog), answering the HW as it stands
// after the first step. A fetch the read would refuse (an offset outside
// the log) and one whose log diverges at LastFetchedEpoch (it gets the
// epoch and end offset to truncate to instead of data) are not recorded,
// as in Kafka, which reads first. Each step checks the role and leader
// epoch under mu.
func (p *Partition) UpdateFollowerAndRead(f FollowerFetch) (ReadResult, error) {
	epoch, answer, answered, err := p.updateFollowerFetchState(f)
	if err != nil || answered {
		return answer, err
	}
	res, err := p.readForFollower(f, epoch)
	if err != nil || len(res.Data) > 0 {
		if answer.Idle != nil {
			answer.Idle.Release()
		}
		return res, err
	}
	res.Idle = answer.Idle
	return res, nil
}

// updateFollowerFetchState validates a follower fetch and records it. It
// returns the leader epoch it was checked against, or the answer (answered
// set) when there is nothing to read.
func (p *Partition) updateFollowerFetchState(f FollowerFetch) (epoch int32, answer ReadResult, answered bool, err error) {
	p.mu.Lock()
	epoch = p.leaderEpoch
	answer, answered, err = p.unreadableFetchLocked(f)
	if err != nil || answered {
		p.mu.Unlock()
		return epoch, answer, answered, err
	}
	moved, change, idle := p.observeFollowerLocked(f.ReplicaID, f.ReplicaEpoch, f.FetchOffset, f.Session)
	p.mu.Unlock()
	if moved {
		p.watchers.notify(HighWatermarkMoved)
	}
	if change != nil && p.proposeISR != nil {
		p.proposeISR(p, *change)
	}
	return epoch, ReadResult{Idle: idle}, false, nil
}

// unreadableFetchLocked answers a follower fetch there is nothing to read
// for (answered set, or an error): refused (not leader, epoch, not a
// replica), diverging, or out of the log's range. Neither: the fetch may be
// recorded and read. Must be called with mu held.
func (p *Partition) unreadableFetchLocked(f FollowerFetch) (answer ReadResult, answered bool, err error) {
	if err := p.checkFollowerFetchLocked(f); err != nil {
		return ReadResult{}, false, err
	}
	offsets := p.offsetsLocked()
	if f.LastFetchedEpoch >= 0 {
		div, err := p.divergenceLocked(f.LastFetchedEpoch, f.FetchOffset)
		if err != nil {
			return ReadResult{}, false, err
		}
		if div != nil {
			offsets.Diverging = div
			return offsets, true, nil
		}
	}
	if f.FetchOffset < offsets.LogStartOffset || f.FetchOffset > offsets.LogEndOffset {
		// Not the follower's position: it may lie past our log end, on a
		// log without epochs to tell where it diverges.
		return offsets, true, kerr.OffsetOutOfRange
	}
	return ReadResult{}, false, nil
}

// checkFollowerFetchLocked refuses a fetch from a replica of another epoch
// or outside the assignment, or when this broker does not lead. Must be
// called with mu held.
func (p *Partition) checkFollowerFetchLocked(f FollowerFetch) error {
	if p.role != RoleLeader {
		return kerr.NotLeaderForPartition
	}
	if err := p.checkEpochLocked(f.CurrentLeaderEpoch); err != nil {
		return err
	}
	if !slices.Contains(p.replicas, f.ReplicaID) {
		return kerr.NotLeaderForPartition
	}
	return nil
}

// readForFollower reads for a follower whose fetch was recorded at epoch;
// a leadership that changed in between answers NOT_LEADER_OR_FOLLOWER (or
// FENCED_LEADER_EPOCH when the fetch named the old epoch).
func (p *Partition) readForFollower(f FollowerFetch, epoch int32) (ReadResult, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.role != RoleLeader {
		return ReadResult{}, kerr.NotLeaderForPartition
	}
	if err := p.checkEpochLocked(f.CurrentLeaderEpoch); err != nil {
		return ReadResult{}, err
	}
	if p.leaderEpoch != epoch {
		return ReadResult{}, kerr.NotLeaderForPartition
	}
	res := p.offsetsLocked()
	return p.readLocked(res, f.FetchOffset, f.MaxBytes, res.LogEndOffset, f.MinOneBatch)
}

// divergenceLocked compares a follower's last fetched epoch with our epoch
// history: if our log ends that epoch before the follower's fetch offset, or
// never had it, the follower must truncate (KIP-320). When we cannot tell
// where the epoch ends (it is newer than ours, or we have no history), the
// answer is OFFSET_OUT_OF_RANGE as Kafka's, and the follower compares log
// ends instead.
func (p *Partition) divergenceLocked(lastFetchedEpoch int32, fetchOffset int64) (*EpochEndOffset, error) {
	epoch, end := p.log.EpochCache().EndOffsetFor(lastFetchedEpoch)
	switch {
	case epoch < 0 || end < 0:
		return nil, kerr.OffsetOutOfRange
	case epoch < lastFetchedEpoch || end < fetchOffset:
		return &EpochEndOffset{Epoch: epoch, EndOffset: end}, nil
	}
	return nil, nil
}

// observeFollowerLocked records a follower's fetch at fetchOffset against
// the leader's LEO now, then moves the HW and proposes an ISR expansion if
// the follower caught up. A fetch of a session (non-nil s) that finds the
// partition idle gets a mark for the session (idle.go). Must be called with
// mu held for writing.
func (p *Partition) observeFollowerLocked(id int32, brokerEpoch, fetchOffset int64, s *FollowerSession) (hwMoved bool, change *AlterISR, idle *IdleMark) {
	f, ok := p.followers[id]
	if !ok {
		f = &FollowerProgress{ID: id, LEO: -1}
		p.followers[id] = f
	}
	prev := f.takeIdle()
	leo := p.log.LogEndOffset()
	f.observeFetch(fetchOffset, leo, p.now())
	f.BrokerEpoch = brokerEpoch
	if brokerEpoch <= 0 {
		f.BrokerEpoch = -1
	}
	moved := p.maybeAdvanceHWLocked()
	change = p.maybeExpandISRLocked(f)
	if s != nil && p.idleLocked(f, fetchOffset, leo) {
		idle = p.markIdleLocked(f, s, leo)
	}
	p.rewatchIdleLocked(prev, idle)
	if idle != nil {
		// A change between the read of the offsets above and the
		// registration of the mark told no one of it (changes.go).
		idle.s.recheck(idle)
	}
	return moved, change, idle
}

// AlterISR is an ISR change for the controller (AlterPartition).
type AlterISR struct {
	Topic          string
	TopicID        [16]byte
	Partition      int32
	LeaderEpoch    int32
	PartitionEpoch int32
	NewISR         []int32
	// NewISREpochs are the broker epochs of NewISR's members as their
	// fetches gave them (-1: unknown, the leader's own included), for
	// AlterPartition v3's NewEpochISR (KIP-903).
	NewISREpochs []int64
}

// maybeExpandISRLocked proposes adding f to the ISR if it caught up. Must be
// called with mu held for writing.
func (p *Partition) maybeExpandISRLocked(f *FollowerProgress) *AlterISR {
	if p.isr.kind != isrCommitted || slices.Contains(p.isr.committed, f.ID) || p.now().Before(p.isrRetryAfter) {
		return nil
	}
	if !CanJoinISR(f, p.log.HighWatermark(), p.leaderEpochStartOffset) {
		return nil
	}
	proposed := append(slices.Clone(p.isr.committed), f.ID)
	p.isr.kind, p.isr.proposed = isrPendingExpand, proposed
	p.bumpVersionLocked()
	p.logger.Info("proposing ISR expansion", "follower", f.ID, "isr", p.isr.committed, "proposed", proposed)
	// KIP-497: the new member counts for the HW at once.
	p.maybeAdvanceHWLocked()
	return p.alterLocked(proposed)
}

func (p *Partition) alterLocked(isr []int32) *AlterISR {
	epochs := make([]int64, len(isr))
	for i, id := range isr {
		epochs[i] = -1
		if f, ok := p.followers[id]; ok {
			epochs[i] = f.BrokerEpoch
		}
	}
	return &AlterISR{Topic: p.Topic, TopicID: p.topicID, Partition: p.Index,
		LeaderEpoch: p.leaderEpoch, PartitionEpoch: p.partitionEpoch, NewISR: slices.Clone(isr), NewISREpochs: epochs}
}

// isrRetryBackoff is how long a leader waits before proposing again after
// the controller refused an ISR change (or could not be reached).
const isrRetryBackoff = 500 * time.Millisecond

// MaybeShrinkISR proposes removing followers that have lagged more than
// lagMax (replica.lag.time.max.ms). Called periodically by the manager.
func (p *Partition) MaybeShrinkISR(lagMax time.Duration) {
	p.mu.Lock()
	if p.role != RoleLeader || p.isr.kind != isrCommitted || p.now().Before(p.isrRetryAfter) {
		p.mu.Unlock()
		return
	}
	out := ShrinkCandidates(p.localID, p.isr.committed, p.followers, p.now(), lagMax)
	if len(out) == 0 {
		p.mu.Unlock()
		return
	}
	proposed := without(p.isr.committed, out)
	p.isr.kind, p.isr.proposed = isrPendingShrink, proposed
	p.bumpVersionLocked()
	p.logger.Info("proposing ISR shrink", "lagging", out, "isr", p.isr.committed, "proposed", proposed)
	change := p.alterLocked(proposed)
	p.mu.Unlock()
	if p.proposeISR != nil {
		p.proposeISR(p, *change)
	}
}

// ISRResult applies the controller's answer to an AlterPartition. On success
// the answer carries the new committed state. On failure the pending change
// is dropped only when the controller certainly did not apply it; otherwise
// it stays pending (its new member keeps counting for the HW, KIP-497),
// either until metadata settles it or, when the answer was lost, until the
// caller sends it again: ISRResult then returns true (Kafka's
// Partition.handleAlterPartitionError and AlterPartitionManager's retries).
func (p *Partition) ISRResult(sent AlterISR, isr []int32, leaderEpoch, partitionEpoch int32, err error) (resend bool) {
	p.mu.Lock()
	applied, shrink, resend := p.isrResultLocked(sent, isr, leaderEpoch, partitionEpoch, err)
	p.mu.Unlock()
	p.watchers.notify(HighWatermarkMoved) // the ISR decides the HW and acks=all answers
	if applied && p.onISRChange != nil {
		p.onISRChange(p, shrink)
	}
	return resend
}

// isrResultLocked applies an AlterPartition answer and reports whether it
// committed a change, whether that was a shrink, and whether the change is
// to be sent again. Must be called with mu held for writing.
func (p *Partition) isrResultLocked(sent AlterISR, isr []int32, leaderEpoch, partitionEpoch int32, err error) (applied, shrink, resend bool) {
	if !p.pendingLocked(sent) {
		return false, false, false // a newer state has superseded this change
	}
	p.bumpVersionLocked()
	if err != nil {
		switch isrFailure(err) {
		case isrNotApplied:
			p.logger.Warn("ISR change refused", "proposed", sent.NewISR, "err", err)
			p.isr = isrState{committed: p.isr.committed}
			p.isrRetryAfter = p.now().Add(isrRetryBackoff)
		case isrAwaitMetadata:
			p.logger.Info("ISR change failed; awaiting newer metadata", "proposed", sent.NewISR, "err", err)
		default:
			p.logger.Warn("ISR change unanswered; sending it again", "proposed", sent.NewISR, "err", err)
			return false, false, true
		}
		return false, false, false
	}
	if leaderEpoch != p.leaderEpoch || partitionEpoch <= p.partitionEpoch {
		p.isr = isrState{committed: p.isr.committed}
		return false, false, false
	}
	p.partitionEpoch = partitionEpoch
	shrink = len(isr) < len(p.isr.committed)
	p.isr = isrState{committed: slices.Clone(isr)}
	p.logger.Info("ISR updated", "isr", isr, "partition_epoch", partitionEpoch)
	p.maybeAdvanceHWLocked()
	return true, shrink, false
}

// pendingLocked reports whether sent is the change still in flight for the
// current leadership. Must be called with mu held.
func (p *Partition) pendingLocked(sent AlterISR) bool {
	return p.role == RoleLeader && p.leaderEpoch == sent.LeaderEpoch && p.isr.kind != isrCommitted &&
		slices.Equal(p.isr.proposed, sent.NewISR)
}

// stillPending reports whether sent is still the change in flight (a
// caller about to send it again checks first).
func (p *Partition) stillPending(sent AlterISR) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.pendingLocked(sent)
}

// errNoController is the answer when there is no controller to ask: the
// change was certainly not applied.
var errNoController = errors.New("no controller to send AlterPartition to")

type isrFailureKind int8

const (
	isrUnanswered    isrFailureKind = iota // lost or unexpected: maybe applied
	isrNotApplied                          // the controller says it did not apply it
	isrAwaitMetadata                       // our view is stale: metadata will say
)

// isrFailure classifies an AlterPartition failure as Kafka's leader does.
// OPERATION_NOT_ATTEMPTED and INELIGIBLE_REPLICA promise the change was not
// applied; the epoch and topic errors mean the controller has moved on and
// its metadata will reach us; anything else (a timeout, a lost connection,
// NOT_CONTROLLER) may have been applied, so only sending it again is safe.
func isrFailure(err error) isrFailureKind {
	switch {
	case errors.Is(err, errNoController), errors.Is(err, kerr.OperationNotAttempted), errors.Is(err, kerr.IneligibleReplica):
		return isrNotApplied
	case errors.Is(err, kerr.FencedLeaderEpoch), errors.Is(err, kerr.InvalidUpdateVersion),
		errors.Is(err, kerr.UnknownTopicOrPartition), errors.Is(err, kerr.UnknownTopicID),
		errors.Is(err, kerr.InvalidRequest), errors.Is(err, kerr.NewLeaderElected):
		return isrAwaitMetadata
	}
	return isrUnanswered
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch: the largest epoch <= epoch
// in this replica's history and the offset where it ended.
func (p *Partition) EndOffsetForEpoch(epoch, currentLeaderEpoch int32, fromFollower bool) (EpochEndOffset, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.role != RoleLeader && !fromFollower {
		return EpochEndOffset{-1, -1}, kerr.NotLeaderForPartition
	}
	if err := p.checkEpochLocked(currentLeaderEpoch); err != nil {
		return EpochEndOffset{-1, -1}, err
	}
	e, end := p.log.EpochCache().EndOffsetFor(epoch)
	return EpochEndOffset{Epoch: e, EndOffset: end}, nil
}
