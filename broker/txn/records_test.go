package txn

import (
	"bytes"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func ongoingSample() *txnState {
	return &txnState{
		producerID: 1000, prevProducerID: 999, nextProducerID: -1, producerEpoch: 5, lastProducerEpoch: -1,
		timeoutMs: 60000, state: Ongoing, startMs: 1700000000000, lastUpdateMs: 1700000000123, clientVersion: TV2,
		partitions: map[TopicPartition]struct{}{{"t", 2}: {}, {"t", 0}: {}},
	}
}

// TestKeyGolden: TransactionLogKey v0 is | int16 0 | int16 len | id |.
func TestKeyGolden(t *testing.T) {
	want := []byte{0, 0, 0, 3, 't', 'x', 'n'}
	if got := encodeKey("txn"); !bytes.Equal(got, want) {
		t.Fatalf("key %x, want %x", got, want)
	}
	id, err := decodeKey(want)
	if err != nil || id != "txn" {
		t.Fatalf("decode: %q %v", id, err)
	}
	if _, err := decodeKey([]byte{0, 1, 0, 0}); !errors.Is(err, errUnknownKeyVersion) {
		t.Fatalf("key version 1: %v", err)
	}
	for _, bad := range [][]byte{nil, {0}, {0, 0, 0, 5, 'a'}} {
		if _, err := decodeKey(bad); !errors.Is(err, errCorruptRecord) {
			t.Fatalf("%x: %v", bad, err)
		}
	}
}

// Byte layouts of TransactionLogValue, field by field.
var (
	goldenV0 = cat(
		[]byte{0, 0},                      // version 0
		[]byte{0, 0, 0, 0, 0, 0, 3, 0xe8}, // producer_id 1000
		[]byte{0, 5},                      // producer_epoch
		[]byte{0, 0, 0xea, 0x60},          // transaction_timeout_ms 60000
		[]byte{1},                         // transaction_status Ongoing
		[]byte{0, 0, 0, 1},                // transaction_partitions: 1 topic
		[]byte{0, 1, 't'},                 //   topic
		[]byte{0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 2},    // partition_ids [0 2]
		[]byte{0, 0, 1, 0x8b, 0xcf, 0xe5, 0x68, 0x7b}, // last_update 1700000000123
		[]byte{0, 0, 1, 0x8b, 0xcf, 0xe5, 0x68, 0x00}, // start 1700000000000
	)
	goldenV1 = cat(
		[]byte{0, 1},                      // version 1 (flexible)
		[]byte{0, 0, 0, 0, 0, 0, 3, 0xe8}, // producer_id 1000
		[]byte{0, 5},                      // producer_epoch
		[]byte{0, 0, 0xea, 0x60},          // transaction_timeout_ms
		[]byte{1},                         // transaction_status Ongoing
		[]byte{2},                         // compact array: 1 topic
		[]byte{2, 't'},                    //   compact string topic
		[]byte{3, 0, 0, 0, 0, 0, 0, 0, 2}, //   compact partition_ids [0 2]
		[]byte{0},                         //   topic's tagged fields: none
		[]byte{0, 0, 1, 0x8b, 0xcf, 0xe5, 0x68, 0x7b}, // last_update
		[]byte{0, 0, 1, 0x8b, 0xcf, 0xe5, 0x68, 0x00}, // start
		[]byte{2},                               // 2 tagged fields
		[]byte{0, 8, 0, 0, 0, 0, 0, 0, 3, 0xe7}, // tag 0 previous_producer_id 999
		[]byte{2, 2, 0, 2},                      // tag 2 client_transaction_version 2
	)
	// An Empty id (producer 7, epoch 0, timeout 10000, updated at 5): the
	// partition list is null.
	emptyHead     = cat([]byte{0, 0, 0, 0, 0, 0, 0, 7}, []byte{0, 0}, []byte{0, 0, 0x27, 0x10}, []byte{0})
	goldenEmptyV0 = cat([]byte{0, 0}, emptyHead, []byte{0xff, 0xff, 0xff, 0xff}, be64(5), be64(-1))
	goldenEmptyV1 = cat([]byte{0, 1}, emptyHead, []byte{0}, be64(5), be64(-1), []byte{0})
)

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func be64(v int64) []byte {
	b := make([]byte, 8)
	for i := range 8 {
		b[i] = byte(uint64(v) >> (56 - 8*i))
	}
	return b
}

func TestValueGolden(t *testing.T) {
	st := ongoingSample()
	if got := encodeValue(st, 0); !bytes.Equal(got, goldenV0) {
		t.Errorf("v0:\n got %x\nwant %x", got, goldenV0)
	}
	if got := encodeValue(st, 1); !bytes.Equal(got, goldenV1) {
		t.Errorf("v1:\n got %x\nwant %x", got, goldenV1)
	}
	empty := &txnState{producerID: 7, prevProducerID: -1, nextProducerID: -1, timeoutMs: 10000, state: Empty,
		startMs: -1, lastUpdateMs: 5, partitions: map[TopicPartition]struct{}{}}
	if got := encodeValue(empty, 0); !bytes.Equal(got, goldenEmptyV0) {
		t.Errorf("empty v0:\n got %x\nwant %x", got, goldenEmptyV0)
	}
	if got := encodeValue(empty, 1); !bytes.Equal(got, goldenEmptyV1) {
		t.Errorf("empty v1:\n got %x\nwant %x", got, goldenEmptyV1)
	}
	for _, tc := range []struct {
		name  string
		value []byte
		want  *txnState
	}{
		{"v1", goldenV1, st},
		{"empty", goldenEmptyV1, empty},
	} {
		got, err := decodeValue(tc.value)
		if err != nil || !sameState(got, tc.want) || got.lastProducerEpoch != -1 {
			t.Errorf("%s: decoded %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	// v0 has no tagged fields: previous producer id and version default.
	got, err := decodeValue(goldenV0)
	if err != nil || got.prevProducerID != -1 || got.clientVersion != TV0 || len(got.partitions) != 2 {
		t.Errorf("v0 decoded %v, %v", got, err)
	}
}

// TestValueDecodeEdges: tombstones, unknown versions and statuses, Kafka's
// tagged field next_producer_epoch (tag 3) and unknown tags.
func TestValueDecodeEdges(t *testing.T) {
	if st, err := decodeValue(nil); st != nil || err != nil {
		t.Fatalf("tombstone: %v %v", st, err)
	}
	v := kmsg.NewTxnMetadataValue()
	v.Version, v.State, v.NextProducerEpoch = 1, 1, 3
	v.UnknownTags.Set(9, []byte{1, 2})
	v.Topics = []kmsg.TxnMetadataValueTopic{{Topic: "x", Partitions: []int32{4}}}
	st, err := decodeValue(v.AppendTo(nil))
	if err != nil || len(st.partitions) != 1 {
		t.Fatalf("tagged: %v %v", st, err)
	}
	v.Version = 2
	if _, err := decodeValue(v.AppendTo(nil)); !errors.Is(err, errCorruptRecord) {
		t.Fatalf("value v2: %v", err)
	}
	v.Version, v.State = 1, 8
	if _, err := decodeValue(v.AppendTo(nil)); !errors.Is(err, errCorruptRecord) {
		t.Fatalf("status 8: %v", err)
	}
	// Partitions of an Empty id are ignored, as Kafka does.
	v.State = 0
	st, err = decodeValue(v.AppendTo(nil))
	if err != nil || len(st.partitions) != 0 {
		t.Fatalf("empty with partitions: %v %v", st, err)
	}
	for n := range goldenV1 {
		if _, err := decodeValue(goldenV1[:n]); err == nil {
			t.Fatalf("truncated to %d bytes decoded", n)
		}
	}
}

// sameState compares two states as the log keeps them: their v1
// encodings hold every persisted field (lastProducerEpoch is not one).
func sameState(a, b *txnState) bool {
	return bytes.Equal(encodeValue(a, valueVersionCurrent), encodeValue(b, valueVersionCurrent))
}

// sampleRecords has a record of every kind the coordinator writes or
// reads, for the round trip and the fuzz seeds.
func sampleRecords() []Record {
	st := ongoingSample()
	done := st.clone()
	done.state, done.partitions = CompleteCommit, map[TopicPartition]struct{}{}
	return []Record{
		stateRecord("txn-a", st, 1),
		stateRecord("txn-a", st, 0),
		stateRecord("txn-b", done, 1),
		{Key: encodeKey("txn-c"), Value: goldenEmptyV1},
		tombstone("txn-d"),
		{Key: []byte{0, 1, 0, 1, 'x'}, Value: []byte{1}}, // another record type
	}
}

func TestRecordsRoundTrip(t *testing.T) {
	for i, r := range sampleRecords()[:5] {
		id, st, err := decodeRecord(r)
		if err != nil || id == "" {
			t.Fatalf("record %d: %q %v", i, id, err)
		}
		if (st == nil) != (r.Value == nil) {
			t.Fatalf("record %d: tombstone mismatch", i)
		}
		if st == nil {
			continue
		}
		again := stateRecord(id, st, 1)
		_, st2, err := decodeRecord(again)
		if err != nil || !sameState(st, st2) {
			t.Fatalf("record %d: %v != %v (%v)", i, st, st2, err)
		}
	}
}
