package demo

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// playUnclean: min.insync.replicas=1, unclean election off at first. One
// follower stalls and leaves the ISR; records keep coming; the other
// follower crashes; more records, acknowledged by the leader alone; the
// leader crashes and the stale follower comes back. The partition stays
// offline: the stale replica is not in the ISR. Then the operator enables
// unclean.leader.election.enable and the stale replica leads: every record
// written after it left the ISR is lost, and the other replicas delete
// them too when they return.
func playUnclean(ctx context.Context, r *run) error {
	cl, err := r.producer(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(20*time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	s, err := r.staleOpening(ctx, cl, "late")
	if err != nil {
		return err
	}
	during, err := produceAll(ctx, cl, r.topic, values("during", 10))
	if err != nil {
		return fmt.Errorf("producing with an ISR of 1: %w", err)
	}
	r.narr.Say("producer (acks=all) wrote 10 records during-000..009: acknowledged by leader %d alone (ISR %v, min.insync.replicas=1), offsets %s",
		s.leader, s.st.isr, offsetRange(during))
	r.sayOffsets(ctx, s.st)
	afterStale := concat(s.late, during)
	for _, a := range afterStale {
		r.out.WrittenAfterStale = append(r.out.WrittenAfterStale, a.value)
	}

	if err := r.offline(ctx, s); err != nil {
		return err
	}
	if err := r.electUnclean(ctx, s, concat(s.base, afterStale)); err != nil {
		return err
	}
	if err := r.overwrite(ctx, afterStale); err != nil {
		return err
	}
	if err := r.restartAll(ctx, []int32{s.leader, s.inSync}, fmt.Sprintf(
		"they truncate their logs where they diverge from leader %d's, deleting the lost records from their disks too", s.stale)); err != nil {
		return err
	}
	r.narr.Say("lesson: unclean leader election chooses availability over durability: when every replica that had " +
		"acknowledged records is down, a stale one takes over without them, even with acks=all. min.insync.replicas=2 " +
		"would have refused the during-* records, but the late-* ones, on two replicas, are lost all the same; " +
		"with unclean election off the partition waits offline for an in-sync replica instead.")
	return nil
}

// offline crashes the leader, the last in-sync replica, resumes the stale
// follower and shows that the partition stays offline without unclean
// election.
func (r *run) offline(ctx context.Context, s staleStory) error {
	if err := r.crash(s.leader, "the last in-sync replica is gone"); err != nil {
		return err
	}
	r.resume([]int32{s.stale})
	if _, err := r.waitPartition(ctx, 30*time.Second, "the partition to go offline", func(st partitionState) bool { return st.leader < 0 }); err != nil {
		return err
	}
	const hold = 3 * time.Second
	deadline := time.Now().Add(hold)
	for time.Now().Before(deadline) {
		if st, err := r.describe(ctx, r.topic); err == nil {
			r.noteState(st)
			if st.leader >= 0 {
				return fmt.Errorf("broker %d elected with unclean.leader.election.enable=false", st.leader)
			}
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(200 * time.Millisecond):
		}
	}
	r.narr.Say("offline for %v with broker %d alive: it is not in the ISR and unclean.leader.election.enable=false, so the controller waits for an in-sync replica",
		hold, s.stale)
	return nil
}

// electUnclean enables unclean leader election on the topic, as an operator
// would (kafka-configs --alter), waits for the stale replica to lead and
// counts what acks, all acknowledged records, lost.
func (r *run) electUnclean(ctx context.Context, s staleStory, acks []acked) error {
	if err := r.enableUnclean(ctx); err != nil {
		return err
	}
	r.narr.Say("operator sets unclean.leader.election.enable=true on %s (IncrementalAlterConfigs)", r.topic)
	st, err := r.waitPartition(ctx, 30*time.Second, fmt.Sprintf("stale broker %d elected", s.stale), func(st partitionState) bool { return st.leader == s.stale })
	if err != nil {
		return err
	}
	r.narr.Say("unclean election: stale broker %d leads at epoch %d, ISR %v", s.stale, st.epoch, st.isr)
	r.sayOffsets(ctx, st)
	got, lost, err := r.account(ctx, s.stale, acks)
	if err != nil {
		return err
	}
	r.narr.Say("read back from leader %d: %d records", s.stale, len(got))
	r.narr.Say("LOST: %d acknowledged records, exactly those written after broker %d left the ISR: %s (offsets %s)",
		r.out.Lost, s.stale, valueRange(r.out.LostValues), offsetRange(lost))
	return nil
}

func (r *run) enableUnclean(ctx context.Context) error {
	cl, err := r.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "unclean.leader.election.enable", Value: kadm.StringPtr("true")},
	}, r.topic)
	if err == nil {
		err = resp[0].Err
	}
	if err != nil {
		return fmt.Errorf("enabling unclean leader election: %w", err)
	}
	return nil
}

// overwrite writes 5 records to the new leader: they take offsets at which
// lost records had been acknowledged.
func (r *run) overwrite(ctx context.Context, lost []acked) error {
	// A new producer: the old one's sequence numbers continue from records
	// the new leader never saw.
	cl, err := r.producer(kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		return err
	}
	defer cl.Close()
	after, err := produceAll(ctx, cl, r.topic, values("after", 5))
	if err != nil {
		return fmt.Errorf("producing to the unclean leader: %w", err)
	}
	r.out.Acked += len(after)
	r.narr.Say("a producer wrote 5 records after-000..004 to the new leader at offsets %s%s", offsetRange(after), reused(after, lost))
	return nil
}

// reused says which lost records had been acknowledged at the offsets now
// holding now's records.
func reused(now, lost []acked) string {
	at := map[int64]string{}
	for _, a := range lost {
		at[a.offset] = a.value
	}
	var was []string
	for _, a := range now {
		if v, ok := at[a.offset]; ok {
			was = append(was, v)
		}
	}
	if len(was) == 0 {
		return ""
	}
	return fmt.Sprintf(", where %s had been acknowledged: an offset no longer names the record a producer was told about", valueRange(was))
}
