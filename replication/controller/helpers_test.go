package controller

import (
	"log/slog"
	"os"
	"testing"
)

// testFSM applies records as consecutive Raft entries, without Raft.
type testFSM struct {
	t   testing.TB
	f   *fsm
	idx uint64
	// pol is the election policy fence uses: Kafka's model without
	// eligible leader replicas unless a test sets elr.
	pol policy
}

func newTestFSM(t testing.TB) *testFSM {
	return &testFSM{t: t, f: newFSM(testLogger(t), nil)}
}

func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("KBROKER_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("test", t.Name())
	}
	return slog.New(slog.DiscardHandler)
}

// apply applies recs as one entry and returns its index; it fails the test
// when the entry is rejected.
func (tf *testFSM) apply(recs ...record) uint64 {
	tf.t.Helper()
	if err := tf.tryApply(recs...); err != nil {
		tf.t.Fatalf("apply: %v", err)
	}
	return tf.idx
}

func (tf *testFSM) tryApply(recs ...record) error {
	tf.t.Helper()
	data, err := encodeEntry(recs...)
	if err != nil {
		tf.t.Fatalf("encode: %v", err)
	}
	tf.idx++
	return tf.f.applyCommand(tf.idx, data)
}

func (tf *testFSM) img() *Image { return tf.f.image() }

// registerLive registers and unfences brokers.
func (tf *testFSM) registerLive(ids ...int32) {
	tf.t.Helper()
	for _, id := range ids {
		idx := tf.apply(&registerBrokerRecord{ID: id, IncarnationID: uuid{byte(id)}, Listeners: []Endpoint{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9000 + id}}})
		tf.apply(&unfenceBrokerRecord{ID: id, Epoch: int64(idx)})
	}
}

// createTopic creates a topic whose partitions have the given replicas, ISR =
// replicas and leader = first replica.
func (tf *testFSM) createTopic(name string, id byte, replicas ...[]int32) {
	tf.t.Helper()
	rec := &createTopicRecord{Name: name, ID: uuid{id}}
	for _, r := range replicas {
		rec.Partitions = append(rec.Partitions, partitionRecord{Replicas: r, ISR: r, Leader: r[0]})
	}
	tf.apply(rec)
}

func (tf *testFSM) fence(id int32) {
	tf.t.Helper()
	img := tf.img()
	recs := append([]record{&fenceBrokerRecord{ID: id, Epoch: img.Brokers[id].Epoch}}, removeBrokerChanges(img, id, tf.pol)...)
	tf.apply(recs...)
}

func ptr[T any](v T) *T { return &v }
