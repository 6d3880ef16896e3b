package txn

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *harness) list(version int16, states []string, pids []int64, durationMs int64, pattern *string) *kmsg.ListTransactionsResponse {
	req := kmsg.NewPtrListTransactionsRequest()
	req.Version, req.StateFilters, req.ProducerIDFilters = version, states, pids
	req.DurationFilterMillis, req.TransactionalIDPattern = durationMs, pattern
	return h.c.ListTransactions(req)
}

func listed(r *kmsg.ListTransactionsResponse) []string {
	var ids []string
	for _, s := range r.TransactionStates {
		ids = append(ids, s.TransactionalID+"="+s.TransactionState)
	}
	return ids
}

func TestListTransactions(t *testing.T) {
	h := newHarness(t, nil)
	h.mustInit("idle")
	po, _ := h.begin("old-open", tp0)
	h.clock.Advance(5 * time.Second)
	h.begin("new-open", tp1)
	for _, tc := range []struct {
		name       string
		version    int16
		states     []string
		pids       []int64
		durationMs int64
		pattern    *string
		want       []string
	}{
		{"all", 0, nil, nil, 0, nil, []string{"idle=Empty", "new-open=Ongoing", "old-open=Ongoing"}},
		{"state", 0, []string{"Ongoing"}, nil, 0, nil, []string{"new-open=Ongoing", "old-open=Ongoing"}},
		{"producer id", 0, nil, []int64{po}, 0, nil, []string{"old-open=Ongoing"}},
		// v0 has no duration filter: 0 there means nothing.
		{"duration ignored by v0", 0, []string{"Ongoing"}, nil, 3000, nil, []string{"new-open=Ongoing", "old-open=Ongoing"}},
		{"duration", 1, []string{"Ongoing"}, nil, 3000, nil, []string{"old-open=Ongoing"}},
		// No transaction started (-1): as Kafka, it passes the filter.
		{"duration and empty", 1, nil, nil, 3000, nil, []string{"idle=Empty", "old-open=Ongoing"}},
		{"no duration", 1, nil, nil, -1, nil, []string{"idle=Empty", "new-open=Ongoing", "old-open=Ongoing"}},
		{"pattern", 2, nil, nil, -1, strp(".*-open"), []string{"new-open=Ongoing", "old-open=Ongoing"}},
		{"pattern matches the whole id", 2, nil, nil, -1, strp("open"), nil},
		{"pattern ignored by v1", 1, nil, nil, -1, strp("nothing"), []string{"idle=Empty", "new-open=Ongoing", "old-open=Ongoing"}},
	} {
		r := h.list(tc.version, tc.states, tc.pids, tc.durationMs, tc.pattern)
		if r.ErrorCode != 0 || !slices.Equal(listed(r), tc.want) {
			t.Errorf("%s: %d %v, want %v", tc.name, r.ErrorCode, listed(r), tc.want)
		}
	}
	r := h.list(0, []string{"Ongoing", "Bogus"}, nil, 0, nil)
	if !slices.Equal(r.UnknownStateFilters, []string{"Bogus"}) || len(r.TransactionStates) != 2 {
		t.Errorf("unknown state filter: %+v", r)
	}
	if r := h.list(2, nil, nil, -1, strp("(")); r.ErrorCode != codeInvalidRegularExpression {
		t.Errorf("bad pattern: %d", r.ErrorCode)
	}
	// A partition being loaded: COORDINATOR_LOAD_IN_PROGRESS.
	release := make(chan struct{})
	done := make(chan error)
	go func() {
		done <- h.c.BecomeLeader(0, 9, &memLog{}, func(func(Record, error) bool) { <-release })
	}()
	waitFor(t, h.clock, 0, "loading", func() bool { return h.list(0, nil, nil, 0, nil).ErrorCode == codeCoordinatorLoadInProgress })
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestDescribeTransactions(t *testing.T) {
	h := newHarness(t, nil)
	pid, epoch := h.mustInit("t")
	start := h.clock.Now().UnixMilli()
	if code := h.add("t", pid, epoch, tp0, tp1, tp2); code != 0 {
		t.Fatal(code)
	}
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{"t", "unknown", ""}
	r := h.c.DescribeTransactions(req)
	d := r.TransactionStates[0]
	if d.ErrorCode != 0 || d.State != "Ongoing" || d.ProducerID != pid || d.ProducerEpoch != epoch ||
		d.TimeoutMillis != 60000 || d.StartTimestamp != start || len(d.Topics) != 2 ||
		d.Topics[0].Topic != "other" || !slices.Equal(d.Topics[1].Partitions, []int32{0, 1}) {
		t.Fatalf("describe: %+v", d)
	}
	if r.TransactionStates[1].ErrorCode != codeTransactionalIDNotFound || r.TransactionStates[2].ErrorCode != codeInvalidRequest {
		t.Fatalf("unknown and empty ids: %+v", r.TransactionStates[1:])
	}
}
