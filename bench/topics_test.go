package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestDeleteTopicThenFresh: after deleteTopic no broker lists the topic and
// the null broker has no file of it left; the topic created again under the
// same name starts empty, on the null broker and on kfake.
func TestDeleteTopicThenFresh(t *testing.T) {
	dir := t.TempDir()
	null := &cluster{kind: kindNull, dir: dir, addrs: startNullForTest(t, dir, 3, true)}
	fake := &cluster{kind: kindKfake, addrs: startKfakeForTest(t, 3)}
	for _, c := range []*cluster{null, fake} {
		t.Run(string(c.kind), func(t *testing.T) {
			ctx := testCtx(t)
			cfg := loadConfig{Brokers: c.addrs, Topic: "del", Partitions: 2, RF: 3, RecordBytes: 10, Acks: "1",
				Records: 300, Linger: time.Millisecond, Mode: "produce"}
			for rep := range 2 {
				if ok, err := topicExists(ctx, c.addrs, "del"); err != nil || ok {
					t.Fatalf("repetition %d: topic listed (%v, %v) before its creation", rep+1, ok, err)
				}
				if _, err := runLoad(ctx, cfg); err != nil {
					t.Fatal(err)
				}
				if ok, err := topicExists(ctx, c.addrs, "del"); err != nil || !ok {
					t.Fatalf("repetition %d: topic not listed (%v, %v) after the run", rep+1, ok, err)
				}
				if n, err := topicRecords(ctx, c.addrs, "del"); err != nil || n != 300 {
					t.Fatalf("repetition %d: the topic holds %d records (%v), want 300: the earlier one's are left", rep+1, n, err)
				}
				if err := deleteTopic(ctx, c.addrs, "del", c.dataLeft); err != nil {
					t.Fatal(err)
				}
				if n := c.dataLeft("del"); n != 0 {
					t.Fatalf("%d files of the topic left after deleteTopic", n)
				}
			}
		})
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*")); len(m) != 0 {
		t.Fatalf("the null broker kept files of a deleted topic: %v", m)
	}
}

// TestDataLeftMatchesOnlyTheTopic: w2's files are not w2-acks1's.
func TestDataLeftMatchesOnlyTheTopic(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"node-1/w2-0", "node-2/w2-11", "node-1/w2-acks1-0"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c := &cluster{kind: kindKbroker, dir: dir}
	if n := c.dataLeft("w2"); n != 2 {
		t.Fatalf("dataLeft(w2) = %d, want 2", n)
	}
	if n := c.dataLeft("w2-acks1"); n != 1 {
		t.Fatalf("dataLeft(w2-acks1) = %d, want 1", n)
	}
}
