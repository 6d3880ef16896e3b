package main

import (
	"testing"
	"time"
)

// TestGroupMembersTimedTogether: the queue workloads time the whole topic
// read by all the members at once. Members that polled while the others
// were still joining read most of the topic before the clock started; the
// run then timed a remainder (or nothing: "0 records in 0.00s") and
// counted only it.
func TestGroupMembersTimedTogether(t *testing.T) {
	addrs := startKfakeForTest(t, 1)
	for _, tc := range []struct {
		name       string
		partitions int
		share      bool
	}{
		{"classic", 4, false},
		{"share", 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			topic := "queue-" + tc.name
			fill := loadConfig{Brokers: addrs, Topic: topic, Partitions: tc.partitions, RF: 1, RecordBytes: 100, Acks: "all",
				Idempotent: true, Records: 20000, Linger: time.Millisecond, Mode: "produce"}
			if _, err := runLoad(ctx, fill); err != nil {
				t.Fatal(err)
			}
			read := loadConfig{Brokers: addrs, Topic: topic, Members: 4, Mode: map[bool]string{true: "share", false: "members"}[tc.share]}
			var clockStarted bool
			res, err := consumeMembers(ctx, read, tc.share, func() { clockStarted = true }, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !clockStarted {
				t.Fatal("the clock never started")
			}
			if res.Records < 20000 || res.Elapsed <= 0 {
				t.Fatalf("timed %d records in %v; want all 20000 read after every member was assigned", res.Records, res.Elapsed)
			}
		})
	}
}
