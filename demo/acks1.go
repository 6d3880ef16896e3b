package demo

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// playAcks1: with acks=1 the leader acknowledges a record once it is in its
// own log. Both followers stall (SIGSTOP, shorter than the lag time, so they
// stay in the ISR), a producer with acks=1 gets 50 records acknowledged by
// the leader alone, the leader crashes (SIGKILL), the followers come back
// and one of them leads without those records: acknowledged, yet lost.
func playAcks1(ctx context.Context, r *run) error {
	allAcks, err := r.producer(kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		return err
	}
	defer allAcks.Close()
	st, base, err := r.baseline(ctx, allAcks, 10)
	if err != nil {
		return err
	}
	leader, followers := st.leader, otherThan(st.replicas, st.leader)
	r.out.OldLeader = leader

	// Seeded with the leader only, so that its first metadata request does
	// not go to a paused broker.
	one, err := r.producer(kgo.SeedBrokers(r.node(leader).clientAddr),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	if err != nil {
		return err
	}
	defer one.Close()
	if err := r.stallFollowers(ctx, followers); err != nil {
		return err
	}
	start := time.Now()
	acks1, err := produceAll(ctx, one, r.topic, values("acks1", 50))
	if err != nil {
		return fmt.Errorf("producing with acks=1: %w", err)
	}
	r.narr.Say("producer (acks=1) wrote 50 records acks1-000..049: all 50 acknowledged by leader %d alone in %v, at offsets %s",
		leader, time.Since(start).Round(time.Millisecond), offsetRange(acks1))
	r.sayOffsets(ctx, st)
	r.narr.Say("the HW stays at %d: consumers cannot read the new records yet, but the producer was told they are written", base[len(base)-1].offset+1)

	if st, err = r.failover(ctx, leader, followers, "the records acknowledged since the pause exist on its disk only"); err != nil {
		return err
	}
	r.sayOffsets(ctx, st)
	got, _, err := r.account(ctx, st.leader, concat(base, acks1))
	if err != nil {
		return err
	}
	r.narr.Say("read back from new leader %d: %d records; every acks=all record is there", st.leader, len(got))
	if r.out.Lost > 0 {
		r.narr.Say("LOST: %d records acknowledged with acks=1: %s", r.out.Lost, valueRange(r.out.LostValues))
	}
	if kept := len(acks1) - r.out.Lost; kept > 0 {
		r.narr.Say("(%d acks=1 records survived: the followers had fetched them just before they stalled)", kept)
	}

	if err := r.restartAll(ctx, []int32{leader}, "it truncates its log where it diverges from the new leader's, then catches up"); err != nil {
		return err
	}
	r.narr.Say("lesson: acks=1 means \"the leader has it\", not \"it survives the leader\". " +
		"A follower that had not fetched yet becomes leader, and the old leader discards what only it had.")
	return nil
}
