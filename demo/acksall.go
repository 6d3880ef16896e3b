package demo

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// playAcksAll: the crash of playAcks1 with acks=all, min.insync.replicas=2
// and an idempotent producer. While the followers stall the leader holds
// the records without acknowledging them; it crashes; a follower leads; the
// producer retries the unacknowledged records there, each once.
func playAcksAll(ctx context.Context, r *run) error {
	cl, err := r.producer(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(45*time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	st, base, err := r.baseline(ctx, cl, 10)
	if err != nil {
		return err
	}
	leader, followers := st.leader, otherThan(st.replicas, st.leader)
	r.out.OldLeader = leader

	if err := r.stallFollowers(ctx, followers); err != nil {
		return err
	}
	inflight := values("inflight", 30)
	results := produceAsync(ctx, cl, r.topic, inflight)
	r.narr.Say("idempotent producer (acks=all) sent 30 records inflight-000..029")
	select {
	case res := <-results:
		return fmt.Errorf("%s answered (%v) while both followers were paused", res.value, res.err)
	case <-time.After(1500 * time.Millisecond):
	}
	r.narr.Say("1.5s later: none acknowledged. The leader has them, but its HW waits for the ISR")
	r.sayOffsets(ctx, st)

	if st, err = r.failover(ctx, leader, followers, "the 30 records on its disk were never acknowledged"); err != nil {
		return err
	}

	var retried []acked
	for range inflight {
		res, err := receive(ctx, results) // every promise is called: acknowledged, failed or timed out
		if err != nil {
			return err
		}
		if res.err != nil {
			r.narr.Say("record %s failed: %v (not acknowledged, so not a loss)", res.value, res.err)
			continue
		}
		retried = append(retried, acked{res.value, res.offset})
	}
	sortAcked(retried)
	r.out.Retried = len(retried)
	r.narr.Say("the producer retried the in-flight records on leader %d: %d of 30 acknowledged at offsets %s", st.leader, len(retried), offsetRange(retried))
	r.sayOffsets(ctx, st)

	got, _, err := r.account(ctx, st.leader, concat(base, retried))
	if err != nil {
		return err
	}
	r.narr.Say("read back from leader %d: %d records, %d acknowledged, %d lost, %d duplicated (the idempotent producer's sequence numbers reject a second copy)",
		st.leader, len(got), r.out.Acked, r.out.Lost, r.out.Duplicates)
	if err := r.restartAll(ctx, []int32{leader}, "it truncates its log where it diverges from the new leader's, then catches up"); err != nil {
		return err
	}
	r.narr.Say("lesson: with acks=all an acknowledgement means every in-sync replica has the record, " +
		"so a crash of the leader loses nothing acknowledged; what was in flight is retried, not lost.")
	return nil
}
