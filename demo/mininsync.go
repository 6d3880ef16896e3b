package demo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// playMinInsync: min.insync.replicas=2. One follower stalls and leaves the
// ISR: writes go on (two in-sync copies). The other follower crashes: the
// leader is alone in the ISR and refuses acks=all writes with
// NOT_ENOUGH_REPLICAS before appending them; the producer keeps retrying.
// The crashed follower returns and catches up: writes resume. Nothing
// acknowledged is ever lost.
func playMinInsync(ctx context.Context, r *run) error {
	cl, err := r.producer(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(45*time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	s, err := r.staleOpening(ctx, cl, "isr2")
	if err != nil {
		return err
	}
	if err := r.refused(ctx, s); err != nil {
		return err
	}
	waiting, err := r.waitForISR(ctx, cl, s)
	if err != nil {
		return err
	}

	r.resume([]int32{s.stale})
	st, err := r.waitFullISR(ctx, fmt.Sprintf("broker %d back in the ISR", s.stale))
	if err != nil {
		return err
	}
	r.sayOffsets(ctx, st)
	got, _, err := r.account(ctx, st.leader, concat(s.base, s.late, waiting))
	if err != nil {
		return err
	}
	r.narr.Say("read back from leader %d: %d records; %d acknowledged, %d lost; the refused record is nowhere", st.leader, len(got), r.out.Acked, r.out.Lost)
	if _, ok := got["refused-000"]; ok {
		return errors.New("the record refused with NOT_ENOUGH_REPLICAS is in the log")
	}
	r.narr.Say("lesson: min.insync.replicas=2 with acks=all trades availability for durability: " +
		"with fewer than 2 replicas in sync the partition stops taking writes instead of acknowledging what one crash would lose.")
	return nil
}

// refused sends an acks=all batch straight to the leader, alone in the ISR,
// and checks that it is refused with NOT_ENOUGH_REPLICAS before the append.
func (r *run) refused(ctx context.Context, s staleStory) error {
	leoBefore, err := r.node(s.leader).logEndOffset(r.topic, 0)
	if err != nil {
		return err
	}
	err = r.rawProduce(ctx, r.topic, s.leader, -1, []string{"refused-000"})
	var kerrErr *kerr.Error
	if !errors.As(err, &kerrErr) || kerrErr != kerr.NotEnoughReplicas {
		return fmt.Errorf("acks=all produce with ISR %v < min.insync.replicas=2: got %v, want NOT_ENOUGH_REPLICAS", s.st.isr, err)
	}
	r.out.Refusals = append(r.out.Refusals, kerrErr.Message)
	r.narr.Say("raw ProduceRequest (acks=all) to leader %d: error %d %s", s.leader, kerrErr.Code, kerrErr.Message)
	r.sayOffsets(ctx, s.st)
	leoAfter, err := r.node(s.leader).logEndOffset(r.topic, 0)
	if err != nil {
		return err
	}
	if leoAfter != leoBefore {
		return fmt.Errorf("refused with NOT_ENOUGH_REPLICAS, yet the leader's log grew from %d to %d", leoBefore, leoAfter)
	}
	r.narr.Say("refused before the append: the leader's log still ends at %d. Only one copy would exist, so the write is not taken", leoAfter)
	return nil
}

// waitForISR has the producer send 5 records that wait, then restarts the
// crashed follower; once it is back in the ISR the records are
// acknowledged.
func (r *run) waitForISR(ctx context.Context, cl *kgo.Client, s staleStory) ([]acked, error) {
	results := produceAsync(ctx, cl, r.topic, values("waiting", 5))
	r.narr.Say("producer (acks=all) sent 5 more records waiting-000..004")
	select {
	case res := <-results:
		return nil, fmt.Errorf("%s answered (%v) with the leader alone in the ISR", res.value, res.err)
	case <-time.After(1500 * time.Millisecond):
	}
	r.narr.Say("1.5s later: none acknowledged; the client retries NOT_ENOUGH_REPLICAS until its delivery timeout")

	if err := r.node(s.inSync).start(); err != nil {
		return nil, err
	}
	r.narr.Say("restarting broker %d with its data", s.inSync)
	st, err := r.waitPartition(ctx, 60*time.Second, fmt.Sprintf("broker %d back in the ISR", s.inSync), func(st partitionState) bool {
		return st.leader == s.leader && len(st.isr) == 2
	})
	if err != nil {
		return nil, err
	}
	var waiting []acked
	for range 5 {
		res, err := receive(ctx, results)
		if err != nil {
			return nil, err
		}
		if res.err != nil {
			return nil, fmt.Errorf("record %s: %w", res.value, res.err)
		}
		waiting = append(waiting, acked{res.value, res.offset})
	}
	sortAcked(waiting)
	r.narr.Say("broker %d caught up and rejoined the ISR: the 5 waiting records were acknowledged at offsets %s", s.inSync, offsetRange(waiting))
	r.sayOffsets(ctx, st)
	return waiting, nil
}

// concat joins lists of acknowledged records into a new one.
func concat(lists ...[]acked) []acked {
	var out []acked
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}
