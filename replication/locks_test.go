package replication

import (
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testsupport"
	"github.com/kbroker/kbroker/record"
	"github.com/kbroker/kbroker/storage"
)

// gatedLog stops each slow log call (one that may fsync or delete files)
// until the test lets it go, so the test can look at the partition's locks
// while the call is in progress.
type gatedLog struct {
	ReplicaLog
	entered chan string
	release chan struct{}
}

func newGatedLog(inner ReplicaLog) *gatedLog {
	return &gatedLog{ReplicaLog: inner, entered: make(chan string), release: make(chan struct{})}
}

func (g *gatedLog) gate(op string) {
	g.entered <- op
	<-g.release
}

func (g *gatedLog) AppendAsLeader(b []record.Batch, epoch int32, opt storage.AppendOptions) (storage.AppendInfo, error) {
	g.gate("AppendAsLeader")
	return g.ReplicaLog.AppendAsLeader(b, epoch, opt)
}

func (g *gatedLog) AppendAsFollower(b []byte) (storage.AppendInfo, error) {
	g.gate("AppendAsFollower")
	return g.ReplicaLog.AppendAsFollower(b)
}

func (g *gatedLog) TruncateTo(offset int64) error {
	g.gate("TruncateTo")
	return g.ReplicaLog.TruncateTo(offset)
}

func (g *gatedLog) TruncateFullyAndStartAt(offset int64) error {
	g.gate("TruncateFullyAndStartAt")
	return g.ReplicaLog.TruncateFullyAndStartAt(offset)
}

func (g *gatedLog) SetLogStartOffset(offset int64) error {
	g.gate("SetLogStartOffset")
	return g.ReplicaLog.SetLogStartOffset(offset)
}

// Partition's lock rules (partition.go): a log call that may block on disk
// runs with roleMu held for reading, so no transition can happen under it,
// and with mu released, so readers and HW moves go on.
func TestSlowLogCallsHoldRoleMuNotMu(t *testing.T) {
	clock := testsupport.NewClock(time.Unix(1000, 0))
	for _, tc := range []struct {
		op     string
		leader bool
		call   func(p *Partition) error
	}{
		{"AppendAsLeader", true, func(p *Partition) error {
			_, err := p.AppendAsLeader(batch(1), 1, storage.AppendOptions{})
			return err
		}},
		{"SetLogStartOffset", true, func(p *Partition) error { _, err := p.DeleteRecordsBefore(-1); return err }},
		{"AppendAsFollower", false, func(p *Partition) error { return p.AppendAsFollower(1, leaderBatch(2, 1), 0, 0) }},
		{"TruncateTo", false, func(p *Partition) error { return p.TruncateTo(1, 1) }},
		{"TruncateFullyAndStartAt", false, func(p *Partition) error { return p.ResetTo(1, 5) }},
	} {
		t.Run(tc.op, func(t *testing.T) {
			log := newGatedLog(newMemLog(memLogConfig{}))
			p := NewPartition("t", 0, log, PartitionOptions{LocalID: 1, Now: clock.Now})
			if tc.leader {
				must(t, p.MakeLeader(leaderState(1, 1, 1), 1))
				go func() { p.AppendAsLeader(batch(2), 1, storage.AppendOptions{}) }()
				<-log.entered
				log.release <- struct{}{}
			} else {
				st := leaderState(1, 1, 1, 2)
				st.Leader = 2
				if _, err := p.MakeFollower(st); err != nil {
					t.Fatal(err)
				}
				go func() { p.AppendAsFollower(1, leaderBatch(0, 2), 0, 0) }()
				<-log.entered
				log.release <- struct{}{}
			}
			waitFor(t, func() bool { return p.log.LogEndOffset() == 2 })
			done := make(chan error, 1)
			go func() { done <- tc.call(p) }()
			if op := <-log.entered; op != tc.op {
				t.Fatalf("entered %s, want %s", op, tc.op)
			}
			if !p.mu.TryLock() {
				t.Fatalf("%s holds Partition.mu", tc.op)
			}
			p.mu.Unlock()
			if p.roleMu.TryLock() {
				t.Fatalf("%s does not hold roleMu: a transition could run under it", tc.op)
			}
			log.release <- struct{}{}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// leaderBatch is a batch of n records as a leader at epoch 1 wrote it at
// offset base.
func leaderBatch(base int64, n int) []byte {
	return stamp(rawBatch(n), base, 1)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond until it holds, failing after a deadline.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(time.Millisecond)
	}
}
