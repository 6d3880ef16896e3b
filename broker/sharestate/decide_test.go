package sharestate

import (
	"reflect"
	"testing"
)

var key = Key{Group: "g", TopicID: topicA, Partition: 0}

func ks(stateEpoch, leaderEpoch int32, updates int, s State) *keyState {
	s.StateEpoch, s.LeaderEpoch = stateEpoch, leaderEpoch
	return &keyState{state: s, stateEpoch: stateEpoch, leaderEpoch: leaderEpoch, updates: updates}
}

func TestCheckKey(t *testing.T) {
	exists := func(id [16]byte, p int32) bool { return id == topicA && p < 3 }
	cases := []struct {
		k    Key
		want int16
	}{
		{Key{Group: "g", TopicID: topicA, Partition: 0}, 0},
		{Key{TopicID: topicA}, codeInvalidGroupID},
		{Key{Group: "g", TopicID: topicA, Partition: -1}, codeInvalidRequest},
		{Key{Group: "g", TopicID: topicA, Partition: 3}, codeUnknownTopicOrPartition},
		{Key{Group: "g", TopicID: topicB}, codeUnknownTopicOrPartition},
	}
	for _, c := range cases {
		if got, _ := checkKey(c.k, exists); got != c.want {
			t.Errorf("checkKey(%v) = %d, want %d", c.k, got, c.want)
		}
	}
}

func TestDecideInitialize(t *testing.T) {
	cases := []struct {
		name      string
		cur       *keyState
		epoch     int32
		start     int64
		code      int16
		snapEpoch int32
		dcc       int32
	}{
		{"new key, no start", nil, 1, -1, 0, 0, -1},
		{"new key with start (AlterShareGroupOffsets)", nil, 1, 42, 0, 0, 0},
		{"re-initialize bumps snapshot epoch", ks(1, 5, 2, State{SnapshotEpoch: 4}), 2, 10, 0, 5, 0},
		{"same state epoch is allowed", ks(2, 5, 0, State{}), 2, -1, 0, 1, -1},
		{"older state epoch is fenced", ks(3, 5, 0, State{}), 2, -1, codeFencedStateEpoch, 0, 0},
	}
	for _, c := range cases {
		d := decideInitialize(c.cur, key, c.epoch, c.start, 99)
		if d.code != c.code {
			t.Fatalf("%s: code %d, want %d", c.name, d.code, c.code)
		}
		if c.code != 0 {
			if d.record != nil {
				t.Fatalf("%s: a fenced request wrote", c.name)
			}
			continue
		}
		v := d.record.value
		if d.record.kind != kindSnapshot || v.SnapshotEpoch != c.snapEpoch || v.StateEpoch != c.epoch || v.StartOffset != c.start ||
			v.DeliveryCompleteCount != c.dcc || len(v.Batches) != 0 || v.CreateTimestamp != 99 || v.WriteTimestamp != 99 {
			t.Fatalf("%s: record %+v", c.name, d.record)
		}
	}
}

func TestDecideWrite(t *testing.T) {
	cur := ks(2, 5, 1, State{SnapshotEpoch: 3, StartOffset: 10, DeliveryCompleteCount: 4, Batches: []StateBatch{sb(10, 19, av, 1)}})
	full := ks(2, 5, 3, cur.state)
	w := func(stateEpoch, leaderEpoch int32, start int64, bs ...StateBatch) writeData {
		return writeData{stateEpoch: stateEpoch, leaderEpoch: leaderEpoch, startOffset: start, deliveryCompleteCount: -1, batches: bs}
	}
	cases := []struct {
		name string
		cur  *keyState
		w    writeData
		code int16
		kind recordKind
		want State
	}{
		// Kafka 4.1+ (KAFKA-19338): a key the group coordinator never
		// initialized is not written.
		{"uninitialized key", nil, w(2, 5, 10, sb(12, 13, ac, 1)), codeInvalidRequest, 0, State{}},
		{"update holds only the request batches", cur, w(2, 5, 12, sb(12, 13, ac, 1)), 0, kindUpdate,
			State{SnapshotEpoch: 3, LeaderEpoch: 5, StartOffset: 12, DeliveryCompleteCount: -1, Batches: []StateBatch{sb(12, 13, ac, 1)}}},
		{"after N updates a merged snapshot", full, w(2, 6, 12, sb(12, 13, ac, 1)), 0, kindSnapshot,
			State{SnapshotEpoch: 4, StateEpoch: 2, LeaderEpoch: 6, StartOffset: 12, DeliveryCompleteCount: 4, CreateTimestamp: 7, WriteTimestamp: 7,
				Batches: []StateBatch{sb(12, 13, ac, 1), sb(14, 19, av, 1)}}},
		{"-1 fields keep the current ones in a snapshot", full, w(-1, -1, -1), 0, kindSnapshot,
			State{SnapshotEpoch: 4, StateEpoch: 2, LeaderEpoch: 5, StartOffset: 10, DeliveryCompleteCount: 4, CreateTimestamp: 7, WriteTimestamp: 7,
				Batches: []StateBatch{sb(10, 19, av, 1)}}},
		{"older leader epoch is fenced", cur, w(2, 4, 10), codeFencedLeaderEpoch, 0, State{}},
		{"older state epoch is fenced", cur, w(1, 5, 10), codeFencedStateEpoch, 0, State{}},
		{"unset epochs are not checked", cur, w(-1, -1, -1), 0, kindUpdate, State{SnapshotEpoch: 3, LeaderEpoch: -1, StartOffset: -1, DeliveryCompleteCount: -1, Batches: []StateBatch{}}},
	}
	for _, c := range cases {
		d := decideWrite(c.cur, key, c.w, 7, 3)
		if d.code != c.code {
			t.Fatalf("%s: code %d, want %d", c.name, d.code, c.code)
		}
		if c.code != 0 {
			continue
		}
		if d.record.kind != c.kind || !reflect.DeepEqual(d.record.value, c.want) {
			t.Fatalf("%s: %s %+v\nwant %s %+v", c.name, d.record.kind, d.record.value, c.kind, c.want)
		}
	}
}

func TestDecideRead(t *testing.T) {
	cur := ks(2, 5, 0, State{StartOffset: 10, Batches: []StateBatch{sb(10, 19, av, 1)}})
	cases := []struct {
		name        string
		cur         *keyState
		leaderEpoch int32
		code        int16
		start       int64
		writes      bool
	}{
		{"no state (uninitialized, KAFKA-19338)", nil, 3, codeInvalidRequest, 0, false},
		{"same leader", cur, 5, 0, 10, false},
		{"new leader records its epoch", cur, 6, 0, 10, true},
		{"older leader is fenced", cur, 4, codeFencedLeaderEpoch, 0, false},
		{"no epoch is older than any", cur, -1, codeFencedLeaderEpoch, 0, false},
	}
	for _, c := range cases {
		d := decideRead(c.cur, key, c.leaderEpoch, 7, 3)
		if d.code != c.code || (d.record != nil) != c.writes {
			t.Fatalf("%s: %+v", c.name, d)
		}
		if c.code == 0 && d.state.StartOffset != c.start {
			t.Fatalf("%s: start %d", c.name, d.state.StartOffset)
		}
		if c.writes && (d.record.value.LeaderEpoch != c.leaderEpoch || len(d.record.value.Batches) != 0 || d.record.kind != kindUpdate) {
			t.Fatalf("%s: record %+v", c.name, d.record)
		}
	}
}

func TestDecideDeleteAndSummary(t *testing.T) {
	if d := decideDelete(nil, key); d.code != 0 || d.record != nil {
		t.Fatalf("delete of nothing: %+v", d)
	}
	cur := ks(2, 5, 0, State{StartOffset: 10, DeliveryCompleteCount: 3})
	if d := decideDelete(cur, key); d.record == nil || d.record.kind != kindTombstone {
		t.Fatalf("delete: %+v", d)
	}
	if s := summary(nil); s.StartOffset != -1 || s.DeliveryCompleteCount != -1 || s.StateEpoch != 0 {
		t.Fatalf("summary of nothing %+v", s)
	}
	if s := summary(cur); s.StartOffset != 10 || s.DeliveryCompleteCount != 3 || s.LeaderEpoch != 5 {
		t.Fatalf("summary %+v", s)
	}
}

// Replay of a sequence of records gives the merged state, whatever mix of
// snapshots and updates wrote it.
func TestApply(t *testing.T) {
	snap := stateRecord{key: key, kind: kindSnapshot, value: State{SnapshotEpoch: 1, StateEpoch: 2, LeaderEpoch: 3, StartOffset: 0, DeliveryCompleteCount: -1, Batches: []StateBatch{sb(0, 9, av, 1)}}}
	upd := stateRecord{key: key, kind: kindUpdate, value: State{SnapshotEpoch: 1, LeaderEpoch: 4, StartOffset: 5, DeliveryCompleteCount: 2, Batches: []StateBatch{sb(5, 6, ac, 1)}}}
	s := apply(nil, snap, 10)
	s = apply(s, upd, 11)
	want := State{SnapshotEpoch: 1, StateEpoch: 2, LeaderEpoch: 4, StartOffset: 5, DeliveryCompleteCount: 2, Batches: []StateBatch{sb(5, 6, ac, 1), sb(7, 9, av, 1)}}
	if !reflect.DeepEqual(s.state, want) || s.updates != 1 || s.snapshotOffset != 10 || s.leaderEpoch != 4 || s.stateEpoch != 2 {
		t.Fatalf("apply = %+v", s)
	}
	if apply(s, stateRecord{key: key, kind: kindTombstone}, 12) != nil {
		t.Fatal("tombstone kept the state")
	}
	// An older snapshot epoch's leader epoch never lowers the recorded one.
	s2 := apply(s, stateRecord{key: key, kind: kindSnapshot, value: State{StateEpoch: 1, LeaderEpoch: 0}}, 13)
	if s2.leaderEpoch != 4 || s2.stateEpoch != 2 || s2.updates != 0 {
		t.Fatalf("snapshot lowered epochs: %+v", s2)
	}
}
