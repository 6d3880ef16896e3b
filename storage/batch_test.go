package storage

import (
	"errors"
	"testing"
)

func TestParseBatchHeader(t *testing.T) {
	s := spec(3, 1000).idempotent(7, 2, 40)
	s.baseOffset, s.leaderEpoch = 100, 5
	b := s.build(t)
	h, err := ParseBatchHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	want := BatchHeader{BaseOffset: 100, BatchLength: int32(len(b) - 12), PartitionLeaderEpoch: 5, Magic: 2,
		CRC: h.CRC, LastOffsetDelta: 2, BaseTimestamp: 1000, MaxTimestamp: 1002, ProducerID: 7, ProducerEpoch: 2,
		BaseSequence: 40, RecordCount: 3}
	if h != want {
		t.Fatalf("header\n got %+v\nwant %+v", h, want)
	}
	if h.LastOffset() != 102 || h.NextOffset() != 103 || h.Size() != len(b) || h.LastSequence() != 42 {
		t.Fatalf("helpers: last %d next %d size %d lastSeq %d", h.LastOffset(), h.NextOffset(), h.Size(), h.LastSequence())
	}
	if h.Compression() != CompressionNone || h.TimestampType() != CreateTime || h.IsTransactional() || h.IsControl() {
		t.Fatal("attribute helpers")
	}
	if _, err := ParseBatchHeader(b[:60]); !errors.Is(err, ErrTruncatedBatch) {
		t.Fatalf("short header: %v", err)
	}
}

func TestAttributes(t *testing.T) {
	h := BatchHeader{Attributes: int16(CompressionZstd) | attrTimestampType | attrTransactional | attrControl}
	if h.Compression() != CompressionZstd || h.TimestampType() != LogAppendTime || !h.IsTransactional() || !h.IsControl() {
		t.Fatalf("attributes %+v", h)
	}
}

func TestLastSequenceWraps(t *testing.T) {
	// Kafka DefaultRecordBatch.lastSequence: sequences wrap to 0 after MaxInt32.
	h := BatchHeader{BaseSequence: 1<<31 - 2, LastOffsetDelta: 3}
	if got := h.LastSequence(); got != 1 {
		t.Fatalf("last sequence %d, want 1", got)
	}
}

func TestValidateBatch(t *testing.T) {
	good := spec(2, 5).build(t)
	if err := ValidateBatch(good); err != nil {
		t.Fatal(err)
	}
	if err := ValidateProduceBatch(good); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		mutate func([]byte) []byte
		want   error
	}{
		{"crc", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, ErrCorruptBatch},
		{"magic", func(b []byte) []byte { b[16] = 1; return b }, ErrUnsupportedMagic},
		{"short", func(b []byte) []byte { return b[:len(b)-1] }, ErrTruncatedBatch},
		{"long", func(b []byte) []byte { return append(b, 0) }, ErrCorruptBatch},
		{"length", func(b []byte) []byte { b[8], b[9], b[10], b[11] = 0, 0, 0, 3; return b }, ErrCorruptBatch},
		{"negative delta", func(b []byte) []byte { b[23] = 0xff; return b }, ErrCorruptBatch},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := c.mutate(append([]byte(nil), good...))
			if err := ValidateBatch(b); !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
}

func TestValidateProduceBatchRecordCount(t *testing.T) {
	// Compacted batches may cover more offsets than they hold records, so
	// only the produce check rejects recordCount != lastOffsetDelta+1.
	b := spec(3, 5).build(t)
	b[60] = 2 // recordCount 2, lastOffsetDelta 2
	SetLogAppendTime(b, 5)
	if err := ValidateBatch(b); err != nil {
		t.Fatalf("ValidateBatch: %v", err)
	}
	if err := ValidateProduceBatch(b); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("ValidateProduceBatch: %v", err)
	}
}

func TestSettersKeepCRC(t *testing.T) {
	b := spec(2, 5).build(t)
	SetBaseOffset(b, 1<<40)
	SetPartitionLeaderEpoch(b, 9)
	if err := ValidateBatch(b); err != nil {
		t.Fatalf("setters broke the batch: %v", err)
	}
	h, _ := ParseBatchHeader(b)
	if h.BaseOffset != 1<<40 || h.PartitionLeaderEpoch != 9 {
		t.Fatalf("header %+v", h)
	}
	SetLogAppendTime(b, 12345)
	if err := ValidateBatch(b); err != nil {
		t.Fatalf("SetLogAppendTime left a bad CRC: %v", err)
	}
	h, _ = ParseBatchHeader(b)
	if h.TimestampType() != LogAppendTime || h.MaxTimestamp != 12345 || h.BaseTimestamp != 5 {
		t.Fatalf("header %+v", h)
	}
}

func TestBatchesIterator(t *testing.T) {
	a, b := spec(1, 1).build(t), spec(2, 2).build(t)
	buf := append(append([]byte(nil), a...), b...)
	it := Batches(buf)
	var n int
	for it.Next() {
		n++
	}
	if n != 2 || it.Err() != nil || it.Pos() != len(buf) {
		t.Fatalf("n=%d err=%v pos=%d", n, it.Err(), it.Pos())
	}

	stops := []struct {
		name string
		tail []byte
		want error
	}{
		{"torn batch", b[:len(b)-5], ErrTruncatedBatch},
		{"torn header", b[:7], ErrTruncatedBatch},
		{"zeroed", make([]byte, 100), ErrZeroedBatch},
		{"garbage length", []byte{0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 1, 2, 3}, ErrCorruptBatch},
	}
	for _, c := range stops {
		t.Run(c.name, func(t *testing.T) {
			buf := append(append([]byte(nil), a...), c.tail...)
			it := Batches(buf)
			n := 0
			for it.Next() {
				n++
			}
			if n != 1 || !errors.Is(it.Err(), c.want) || it.Pos() != len(a) {
				t.Fatalf("n=%d err=%v pos=%d", n, it.Err(), it.Pos())
			}
		})
	}

	// CRC errors are only seen by the verifying iterator.
	bad := append([]byte(nil), buf...)
	bad[len(bad)-1] ^= 0xff
	it = Batches(bad)
	for it.Next() {
	}
	if it.Err() != nil {
		t.Fatalf("structural iterator checked CRC: %v", it.Err())
	}
	it = VerifiedBatches(bad)
	for it.Next() {
	}
	if !errors.Is(it.Err(), ErrCorruptBatch) || it.Pos() != len(a) {
		t.Fatalf("verified iterator: %v at %d", it.Err(), it.Pos())
	}
}
