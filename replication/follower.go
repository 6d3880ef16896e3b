package replication

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/record"
	"github.com/kbroker/kbroker/storage"
)

// FollowerFetchState is what a replica fetcher needs to build its next fetch
// for this partition.
type FollowerFetchState struct {
	TopicID          [16]byte // zero when the metadata gave none
	Leader           int32
	LeaderEpoch      int32
	FetchOffset      int64 // our LEO
	LastFetchedEpoch int32 // epoch of our last batch, -1 if none
}

// FetchState returns the follower's position, or ok=false when this broker is
// not a follower.
func (p *Partition) FetchState() (FollowerFetchState, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.role != RoleFollower {
		return FollowerFetchState{}, false
	}
	return FollowerFetchState{
		TopicID: p.topicID, Leader: p.leader, LeaderEpoch: p.leaderEpoch,
		FetchOffset:      p.log.LogEndOffset(),
		LastFetchedEpoch: p.log.EpochCache().LatestEpoch(),
	}, true
}

// AppendAsFollower appends batches fetched from the leader at leaderEpoch and
// takes the leader's HW (bounded by our own LEO) and log start offset. A
// response for another epoch is dropped: the fetcher's view is stale. The
// append and the log start move run with roleMu held for reading and mu
// released (they may write checkpoints and delete segments); the HW moves
// under mu.
func (p *Partition) AppendAsFollower(leaderEpoch int32, batches []byte, leaderHW, leaderLogStart int64) error {
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	if err := p.checkFollowerEpoch(leaderEpoch); err != nil {
		return err
	}
	if len(batches) > 0 {
		if err := p.appendFetched(batches, leaderLogStart); err != nil {
			return fmt.Errorf("%s: follower append: %w", p, err)
		}
	}
	hw, moved := p.followLeaderHW(leaderHW)
	if leaderLogStart > p.log.LogStartOffset() && leaderLogStart <= hw {
		// DeleteRecords or retention on the leader: follow its log start.
		if err := p.log.SetLogStartOffset(leaderLogStart); err != nil {
			p.logger.Warn("following the leader's log start offset failed", "offset", leaderLogStart, "err", err)
		}
	}
	var ev Events
	if len(batches) > 0 {
		ev |= LogEndMoved
	}
	if moved {
		ev |= HighWatermarkMoved
	}
	p.watchers.notify(ev)
	return nil
}

// appendFetched appends fetched batches. A first batch that starts below
// our log end although we fetched from it means a log start (ours or the
// leader's, moved by DeleteRecords) lies inside that batch: a fetch returns
// the batch holding its offset whole. When our log is empty (Kafka's
// Partition handles this case, on an UnexpectedAppendOffsetException), or
// everything the batch overlaps of ours lies below the leader's log start
// (deleted there, so never read; Kafka would fail every fetch), we cut our
// log at the batch's base and take the batch, then get our HW and log start
// back. Must be called with roleMu held for reading.
func (p *Partition) appendFetched(batches []byte, leaderLogStart int64) error {
	_, err := p.log.AppendAsFollower(batches)
	if !errors.Is(err, storage.ErrInvalidOffset) {
		return err
	}
	h, herr := record.ParseBatchHeader(batches)
	leo, start, hw := p.log.LogEndOffset(), p.log.LogStartOffset(), p.log.HighWatermark()
	if herr != nil || h.BaseOffset >= leo || h.LastOffset() < leo || (leo != start && leo > leaderLogStart) {
		return err
	}
	p.logger.Info("the first fetched batch starts below our log end, in offsets the leader deleted; cutting our log at its base",
		"base_offset", h.BaseOffset, "log_end_offset", leo, "leader_log_start", leaderLogStart)
	if err := p.log.TruncateTo(h.BaseOffset); err != nil {
		return err
	}
	if _, err := p.log.AppendAsFollower(batches); err != nil {
		return err
	}
	p.mu.Lock()
	p.log.SetHighWatermark(hw)
	p.mu.Unlock()
	return p.log.SetLogStartOffset(start)
}

// checkFollowerEpoch refuses work for another leader epoch than the one
// this follower follows. Must be called with roleMu held, which keeps the
// answer valid until it is released.
func (p *Partition) checkFollowerEpoch(leaderEpoch int32) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.role != RoleFollower || p.leaderEpoch != leaderEpoch {
		return kerr.FencedLeaderEpoch
	}
	return nil
}

// followLeaderHW takes the leader's HW, bounded by our LEO, if it is ahead
// of ours. It returns that bound and whether our HW moved.
func (p *Partition) followLeaderHW(leaderHW int64) (int64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	hw := min(leaderHW, p.log.LogEndOffset())
	moved := hw > p.log.HighWatermark()
	if moved {
		p.log.SetHighWatermark(hw)
	}
	return hw, moved
}

// TruncateTo drops every record at or after offset (follower truncation after
// a leader change). It refuses for another epoch than the current one. The
// log is cut (and fsynced) with roleMu held for reading and mu released.
func (p *Partition) TruncateTo(leaderEpoch int32, offset int64) error {
	defer p.bumpVersion() // the fetch state moved (fetcher.go)
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	if err := p.checkFollowerEpoch(leaderEpoch); err != nil {
		return err
	}
	if offset >= p.log.LogEndOffset() {
		// Nothing to cut from the log, but an epoch this replica led without
		// appending anything may end its epoch history at the log end; the
		// leader never had it, so it must go or every fetch diverges again
		// (Kafka's UnifiedLog.truncateTo always truncates the epoch cache).
		if err := p.log.EpochCache().TruncateFromEnd(offset); err != nil {
			return fmt.Errorf("%s: truncating the epoch cache at %d: %w", p, offset, err)
		}
		return nil
	}
	p.logger.Info("truncating", "from_leo", p.log.LogEndOffset(), "to", offset, "leader_epoch", leaderEpoch)
	if err := p.log.TruncateTo(offset); err != nil {
		return fmt.Errorf("%s: truncate to %d: %w", p, offset, err)
	}
	if start := p.log.LogStartOffset(); p.log.LogEndOffset() < start {
		// The batch holding offset began below our log start (which lay
		// inside it), and went whole: a log cannot end below its start, so
		// it restarts empty there (the next fetch brings the batch back).
		p.logger.Info("truncation cut below the log start; restarting the log there", "log_start", start)
		return p.log.TruncateFullyAndStartAt(start)
	}
	return nil
}

// ResetTo empties the log and starts it at offset: the leader no longer has
// the records we would fetch next (our LEO is below its log start).
func (p *Partition) ResetTo(leaderEpoch int32, offset int64) error {
	defer p.bumpVersion() // the fetch state moved (fetcher.go)
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	if err := p.checkFollowerEpoch(leaderEpoch); err != nil {
		return err
	}
	p.logger.Info("resetting log", "start_offset", offset)
	return p.log.TruncateFullyAndStartAt(offset)
}

// TruncationPoint computes where a follower truncates given the leader's
// answer (epoch, endOffset) for the follower's last fetched epoch (Kafka's
// AbstractFetcherThread.getOffsetTruncationState). It returns the offset and
// whether truncation is complete; when not, the fetcher asks again with the
// epoch it now ends at.
func (p *Partition) TruncationPoint(leader EpochEndOffset) (offset int64, complete bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	leo := p.log.LogEndOffset()
	if leader.EndOffset < 0 {
		// The leader has no epoch at or below ours: keep only what is
		// certainly committed.
		return min(p.log.HighWatermark(), leo), true
	}
	ourEpoch, ourEnd := p.log.EpochCache().EndOffsetFor(leader.Epoch)
	if ourEpoch < 0 {
		return min(p.log.HighWatermark(), leo), true
	}
	if ourEpoch != leader.Epoch {
		// We never had the leader's epoch: cut to where our older epoch ends
		// and compare again from there.
		return min(ourEnd, leo), false
	}
	return min(leader.EndOffset, ourEnd, leo), true
}
