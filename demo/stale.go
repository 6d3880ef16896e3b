package demo

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// staleStory is the opening of the stale-replica scenarios (mininsync,
// unclean): one follower stalls and leaves the ISR, records keep coming,
// then the other follower crashes and the leader is alone in the ISR.
type staleStory struct {
	leader, inSync, stale int32
	base                  []acked // acknowledged by all three replicas
	late                  []acked // acknowledged by leader and inSync, after stale left the ISR
	st                    partitionState
}

// staleOpening plays that opening with cl, an acks=all producer; the
// records written after the stale follower left are named prefix-NNN.
func (r *run) staleOpening(ctx context.Context, cl *kgo.Client, prefix string) (staleStory, error) {
	var s staleStory
	st, base, err := r.baseline(ctx, cl, 10)
	if err != nil {
		return s, err
	}
	followers := otherThan(st.replicas, st.leader)
	s.leader, s.inSync, s.stale, s.base = st.leader, followers[0], followers[1], base
	r.out.OldLeader = s.leader

	if st, err = r.staleFollower(ctx, s.stale); err != nil {
		return s, err
	}
	if s.late, err = produceAll(ctx, cl, r.topic, values(prefix, 10)); err != nil {
		return s, fmt.Errorf("producing with an ISR of 2: %w", err)
	}
	r.narr.Say("producer (acks=all) wrote 10 records %s-000..009: acknowledged by the ISR %v at offsets %s (min.insync.replicas=%d)",
		prefix, st.isr, offsetRange(s.late), r.minISR)
	r.sayOffsets(ctx, st)

	if err := r.crash(s.inSync, "the leader is now the only replica that is up and in sync"); err != nil {
		return s, err
	}
	if s.st, err = r.waitOutOfISR(ctx, s.inSync, fmt.Sprintf("broker %d to leave the ISR", s.inSync)); err != nil {
		return s, err
	}
	r.narr.Say("broker %d fenced after broker.session.timeout.ms and removed from the ISR: ISR %v", s.inSync, s.st.isr)
	return s, nil
}

// staleFollower pauses follower stale past replica.lag.time.max.ms and
// waits until the leader has dropped it from the ISR.
func (r *run) staleFollower(ctx context.Context, stale int32) (partitionState, error) {
	r.pause([]int32{stale}, "and kept paused past replica.lag.time.max.ms")
	start := time.Now()
	st, err := r.waitPartition(ctx, 30*time.Second, fmt.Sprintf("broker %d to leave the ISR", stale), func(s partitionState) bool {
		return s.leader >= 0 && !slices.Contains(s.isr, stale)
	})
	if err != nil {
		return st, err
	}
	r.narr.Say("broker %d fell behind: after %.1fs the leader shrank the ISR to %v (AlterPartition, committed by the controller)",
		stale, time.Since(start).Seconds(), st.isr)
	return st, nil
}

// waitOutOfISR waits for the controller to notice a dead broker (after
// broker.session.timeout.ms) and to drop it from the ISR.
func (r *run) waitOutOfISR(ctx context.Context, id int32, what string) (partitionState, error) {
	return r.waitPartition(ctx, 30*time.Second, what, func(s partitionState) bool {
		return !slices.Contains(s.isr, id) && s.leader != id
	})
}

// restartAll restarts crashed brokers with their data and waits until all
// three replicas are in sync with identical log ends.
func (r *run) restartAll(ctx context.Context, ids []int32, why string) error {
	var ends []string
	for _, id := range ids {
		leo, err := r.node(id).logEndOffset(r.topic, 0)
		if err != nil {
			return err
		}
		ends = append(ends, fmt.Sprintf("%d (log end %d)", id, leo))
		if err := r.node(id).start(); err != nil {
			return err
		}
	}
	who, whose := "broker ", "its"
	if len(ids) > 1 {
		who, whose = "brokers ", "their"
	}
	r.narr.Say("restarting %s%s with %s data: %s", who, strings.Join(ends, " and "), whose, why)
	st, err := r.waitFullISR(ctx, "all replicas back in the ISR")
	if err != nil {
		return err
	}
	r.sayOffsets(ctx, st)
	return nil
}

// waitFullISR waits until all three replicas are in the ISR and their logs
// end at the same offset.
func (r *run) waitFullISR(ctx context.Context, what string) (partitionState, error) {
	st, err := r.waitPartition(ctx, 60*time.Second, what, func(s partitionState) bool {
		return s.leader >= 0 && len(s.isr) == 3
	})
	if err != nil {
		return st, err
	}
	leo, err := r.node(st.leader).logEndOffset(r.topic, 0)
	if err != nil {
		return st, err
	}
	return st, r.waitConverged(ctx, leo)
}
