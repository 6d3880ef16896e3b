package demo

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// baseline writes n records with all, an acks=all producer, waits until
// every replica has them, and narrates the partition.
func (r *run) baseline(ctx context.Context, all *kgo.Client, n int) (partitionState, []acked, error) {
	base, err := produceAll(ctx, all, r.topic, values("base", n))
	if err != nil {
		return partitionState{}, nil, fmt.Errorf("producing the baseline: %w", err)
	}
	st, err := r.waitPartition(ctx, 30*time.Second, "the full ISR", func(s partitionState) bool { return s.leader >= 0 && len(s.isr) == 3 })
	if err != nil {
		return st, nil, err
	}
	r.narr.Say("producer (acks=all) wrote %d records base-000..%03d: acknowledged once all 3 replicas had them", n, n-1)
	if err := r.waitConverged(ctx, int64(n)); err != nil {
		return st, nil, err
	}
	r.sayOffsets(ctx, st)
	return st, base, nil
}

// drainFetches waits until the paused followers' last fetch requests have
// been answered: the leader holds a fetch up to replica.fetch.wait.max.ms
// (200 ms) for new records, and would send records appended meanwhile into
// the socket of a paused follower, which reads them when it resumes.
func (r *run) drainFetches(ctx context.Context) error {
	const wait = time.Second
	r.narr.Say("waiting %v for the followers' outstanding fetch requests (long polls of replica.fetch.wait.max.ms=200) to be answered; stopped, they send no new ones", wait)
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-time.After(wait):
		return nil
	}
}

// waitConverged waits until every replica's log ends at end.
func (r *run) waitConverged(ctx context.Context, end int64) error {
	return poll(ctx, 30*time.Second, fmt.Sprintf("every replica's log to end at %d", end), func() error {
		for _, n := range r.nodes {
			leo, err := n.logEndOffset(r.topic, 0)
			if err != nil {
				return err
			}
			if leo != end {
				return fmt.Errorf("node %d ends at %d", n.id, leo)
			}
		}
		return nil
	})
}

// stallFollowers pauses the followers for less than the lag time, so that
// they stay in the ISR, and lets their outstanding fetches drain.
func (r *run) stallFollowers(ctx context.Context, followers []int32) error {
	r.pause(followers, "as in a long GC pause or a stalled VM; for less than replica.lag.time.max.ms, so they stay in the ISR")
	return r.drainFetches(ctx)
}

// failover crashes the leader, resumes the stalled followers and waits for
// the controller to elect one of them.
func (r *run) failover(ctx context.Context, leader int32, followers []int32, why string) (partitionState, error) {
	if err := r.crash(leader, why); err != nil {
		return partitionState{}, err
	}
	r.resume(followers)
	st, err := r.waitPartition(ctx, 30*time.Second, "a follower to lead", func(s partitionState) bool {
		return s.leader >= 0 && s.leader != leader
	})
	if err != nil {
		return st, err
	}
	r.narr.Say("after broker.session.timeout.ms the controller fenced broker %d and elected follower %d from the ISR (a clean election)", leader, st.leader)
	return st, nil
}

// pause stalls brokers with SIGSTOP.
func (r *run) pause(ids []int32, why string) {
	for _, id := range ids {
		r.node(id).Pause()
	}
	r.narr.Say("SIGSTOP %s: paused, %s", brokers(ids), why)
}

// resume continues paused brokers with SIGCONT.
func (r *run) resume(ids []int32) {
	for _, id := range ids {
		r.node(id).Resume()
	}
	r.narr.Say("SIGCONT %s: running again", brokers(ids))
}

// crash kills a broker with SIGKILL.
func (r *run) crash(id int32, why string) error {
	if err := r.node(id).kill9(); err != nil {
		return err
	}
	r.narr.Say("kill -9 broker %d (a crash): %s", id, why)
	return nil
}

func brokers(ids []int32) string {
	if len(ids) == 1 {
		return fmt.Sprintf("broker %d", ids[0])
	}
	s := "brokers"
	for i, id := range ids {
		switch {
		case i == 0:
			s += fmt.Sprintf(" %d", id)
		case i == len(ids)-1:
			s += fmt.Sprintf(" and %d", id)
		default:
			s += fmt.Sprintf(", %d", id)
		}
	}
	return s
}

func otherThan(ids []int32, not int32) []int32 {
	var out []int32
	for _, id := range ids {
		if id != not {
			out = append(out, id)
		}
	}
	return out
}
