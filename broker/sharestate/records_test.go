package sharestate

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"testing"

	"github.com/kbroker/kbroker/internal/coordrec"
)

func sampleRecords() []Record {
	k := Key{Group: "g", TopicID: [16]byte{1, 2, 3}, Partition: 7}
	snap := State{SnapshotEpoch: 2, StateEpoch: 3, LeaderEpoch: 4, StartOffset: 100, DeliveryCompleteCount: 5,
		CreateTimestamp: 1000, WriteTimestamp: 2000, Batches: []StateBatch{sb(100, 109, DeliveryAcknowledged, 1), sb(110, 119, DeliveryAvailable, 2)}}
	upd := State{SnapshotEpoch: 2, LeaderEpoch: 4, StartOffset: -1, DeliveryCompleteCount: -1, Batches: []StateBatch{sb(120, 120, DeliveryArchived, 5)}}
	return []Record{
		stateRecord{key: k, kind: kindSnapshot, value: snap}.encode(),
		stateRecord{key: k, kind: kindUpdate, value: upd}.encode(),
		stateRecord{key: k, kind: kindTombstone}.encode(),
		stateRecord{key: Key{Group: "ünïcode", Partition: 0}, kind: kindSnapshot, value: State{StartOffset: -1, DeliveryCompleteCount: -1}}.encode(),
	}
}

// The bytes of a key and of a snapshot value, field by field, as Kafka's
// generated ShareSnapshotKey/Value write them.
func TestRecordBytes(t *testing.T) {
	k := Key{Group: "g", TopicID: [16]byte{0: 0xaa, 15: 0xbb}, Partition: 7}
	got := hex.EncodeToString(encodeKey(typeSnapshot, k))
	want := "0000" + "0001" + "67" + "aa0000000000000000000000000000bb" + "00000007"
	if got != want {
		t.Fatalf("key %s, want %s", got, want)
	}
	v := encodeSnapshot(State{SnapshotEpoch: 1, StateEpoch: 2, LeaderEpoch: 3, StartOffset: 4, DeliveryCompleteCount: -1,
		CreateTimestamp: 5, WriteTimestamp: 6, Batches: []StateBatch{sb(4, 9, DeliveryAcknowledged, 1)}})
	want = "0000" + "00000001" + "00000002" + "00000003" + "0000000000000004" + "0000000000000005" + "0000000000000006" +
		"02" + "0000000000000004" + "0000000000000009" + "02" + "0001" + "00" + // one batch and its tags
		"00" // no tagged fields: the delivery complete count is unknown
	if got := hex.EncodeToString(v); got != want {
		t.Fatalf("value %s\nwant      %s", got, want)
	}
	withCount := encodeUpdate(State{SnapshotEpoch: 1, LeaderEpoch: 3, StartOffset: 4, DeliveryCompleteCount: 9})
	want = "0000" + "00000001" + "00000003" + "0000000000000004" + "01" + "01" + "00" + "04" + "00000009"
	if got := hex.EncodeToString(withCount); got != want {
		t.Fatalf("update %s\nwant       %s", got, want)
	}
}

func TestRecordRoundTrip(t *testing.T) {
	for i, r := range sampleRecords() {
		sr, err := decodeRecord(r)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		again := sr.encode()
		if !bytes.Equal(again.Key, r.Key) || !bytes.Equal(again.Value, r.Value) || (again.Value == nil) != (r.Value == nil) {
			t.Fatalf("record %d does not round-trip", i)
		}
	}
	sr, _ := decodeRecord(sampleRecords()[0])
	want := State{SnapshotEpoch: 2, StateEpoch: 3, LeaderEpoch: 4, StartOffset: 100, DeliveryCompleteCount: 5,
		CreateTimestamp: 1000, WriteTimestamp: 2000, Batches: []StateBatch{sb(100, 109, DeliveryAcknowledged, 1), sb(110, 119, DeliveryAvailable, 2)}}
	if !reflect.DeepEqual(sr.value, want) || sr.kind != kindSnapshot || sr.key.Partition != 7 {
		t.Fatalf("decoded %+v", sr)
	}
}

func TestDecodeRejects(t *testing.T) {
	good := sampleRecords()[0]
	cases := []struct {
		name string
		r    Record
		want error
	}{
		{"short key", Record{Key: []byte{0}, Value: good.Value}, coordrec.ErrCorrupt},
		{"other record type", Record{Key: append([]byte{0, 9}, good.Key[2:]...), Value: good.Value}, errUnknownRecordType},
		{"trailing key bytes", Record{Key: append(append([]byte(nil), good.Key...), 0), Value: good.Value}, coordrec.ErrCorrupt},
		{"value version", Record{Key: good.Key, Value: append([]byte{0, 1}, good.Value[2:]...)}, coordrec.ErrCorrupt},
		{"truncated value", Record{Key: good.Key, Value: good.Value[:len(good.Value)-3]}, coordrec.ErrCorrupt},
		{"trailing value bytes", Record{Key: good.Key, Value: append(append([]byte(nil), good.Value...), 1)}, coordrec.ErrCorrupt},
		{"update tombstone", Record{Key: sampleRecords()[1].Key}, coordrec.ErrCorrupt},
		{"huge batch count", Record{Key: good.Key, Value: append(append([]byte(nil), good.Value[:38]...), 0xff, 0xff, 0xff, 0x0f)}, coordrec.ErrCorrupt},
	}
	for _, c := range cases {
		if _, err := decodeRecord(c.r); !errors.Is(err, c.want) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.want)
		}
	}
}

// Kafka's Uuid.toString and the coordinator key that places a key.
func TestPartitionFor(t *testing.T) {
	id := [16]byte{0xfb, 0xff}
	if got := TopicIDString(id); got != "-_8AAAAAAAAAAAAAAAAAAA" {
		t.Fatalf("TopicIDString = %s", got)
	}
	k := Key{Group: "g", TopicID: id, Partition: 3}
	if k.String() != "g:-_8AAAAAAAAAAAAAAAAAAA:3" {
		t.Fatalf("key %s", k)
	}
	seen := map[int32]bool{}
	for p := int32(0); p < 200; p++ {
		k.Partition = p
		n := PartitionFor(k, 50)
		if n < 0 || n >= 50 {
			t.Fatalf("partition %d", n)
		}
		seen[n] = true
	}
	if len(seen) < 25 {
		t.Fatalf("keys spread over %d partitions only", len(seen))
	}
}

func TestStateTopic(t *testing.T) {
	spec := Options{}.StateTopic(1)
	if spec.Partitions != 50 || spec.ReplicationFactor != 1 || spec.Configs["min.insync.replicas"] != "1" ||
		spec.Configs["cleanup.policy"] != "delete" || spec.Configs["retention.ms"] != "-1" || spec.Configs["segment.bytes"] != "104857600" {
		t.Fatalf("%+v", spec)
	}
	if spec := (Options{}).StateTopic(5); spec.ReplicationFactor != 3 || spec.Configs["min.insync.replicas"] != "2" {
		t.Fatalf("%+v", spec)
	}
}
