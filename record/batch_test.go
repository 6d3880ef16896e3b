package record

import (
	"bytes"
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
	if _, ok := h.DeleteHorizon(); ok {
		t.Fatal("delete horizon without bit 6")
	}
	if _, err := ParseBatchHeader(b[:60]); !errors.Is(err, ErrTruncatedBatch) {
		t.Fatalf("short header: %v", err)
	}
}

func TestAttributes(t *testing.T) {
	h := BatchHeader{Attributes: int16(CompressionZstd) | AttrTimestampType | AttrTransactional | AttrControl | AttrDeleteHorizon,
		BaseTimestamp: 77}
	if h.Compression() != CompressionZstd || h.TimestampType() != LogAppendTime || !h.IsTransactional() || !h.IsControl() {
		t.Fatalf("attributes %+v", h)
	}
	if hz, ok := h.DeleteHorizon(); !ok || hz != 77 {
		t.Fatalf("delete horizon %d %v", hz, ok)
	}
	if s := Compression(6).String(); s != "compression(6)" {
		t.Fatalf("unknown codec name %q", s)
	}
}

func TestLastSequenceWraps(t *testing.T) {
	// Kafka DefaultRecordBatch.lastSequence: sequences wrap to 0 after MaxInt32.
	h := BatchHeader{BaseSequence: 1<<31 - 2, LastOffsetDelta: 3}
	if got := h.LastSequence(); got != 1 {
		t.Fatalf("last sequence %d, want 1", got)
	}
	if got := (BatchHeader{BaseSequence: -1, LastOffsetDelta: 3}).LastSequence(); got != -1 {
		t.Fatalf("no sequence: %d", got)
	}
}

// mutations of a good batch and the sentinel each must produce.
var badBatches = []struct {
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

func TestValidate(t *testing.T) {
	good := spec(2, 5).build(t)
	if h, err := Validate(good); err != nil || h.RecordCount != 2 {
		t.Fatalf("%+v %v", h, err)
	}
	for _, c := range badBatches {
		t.Run(c.name, func(t *testing.T) {
			b := c.mutate(bytes.Clone(good))
			if _, err := Validate(b); !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
	if _, err := Validate(make([]byte, 70)); !errors.Is(err, ErrZeroedBatch) {
		t.Fatalf("zeroed: %v", err)
	}
}

func TestParseProduce(t *testing.T) {
	good := spec(3, 5).build(t)
	b, err := ParseProduce(good)
	if err != nil {
		t.Fatal(err)
	}
	if h := b.Header(); h.RecordCount != 3 || h.MaxTimestamp != 7 || &b.Bytes()[0] != &good[0] {
		t.Fatalf("header %+v, bytes copied: %v", h, &b.Bytes()[0] != &good[0])
	}
	cases := []struct {
		name   string
		mutate func([]byte) []byte
		want   error
	}{
		{"two batches", func(b []byte) []byte { return append(b, b...) }, ErrInvalidRecord},
		{"torn", func(b []byte) []byte { return b[:len(b)-1] }, ErrInvalidRecord},
		{"short header", func(b []byte) []byte { return b[:40] }, ErrTruncatedBatch},
		{"crc", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, ErrCorruptBatch},
		{"magic", func(b []byte) []byte { b[16] = 1; return b }, ErrUnsupportedMagic},
		{"negative delta", func(b []byte) []byte { b[23] = 0xff; return b }, ErrCorruptBatch},
		// Compacted batches may cover more offsets than they hold records,
		// but a producer's may not.
		{"record count", func(b []byte) []byte { b[60] = 2; updateCRC(b); return b }, ErrInvalidRecord},
		{"no records", func(b []byte) []byte { b[60], b[26] = 0, 0; updateCRC(b); return b }, ErrInvalidRecord},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := ParseProduce(c.mutate(bytes.Clone(good))); !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
	// The record-count rule is the produce path's alone.
	b2 := bytes.Clone(good)
	b2[60] = 2
	updateCRC(b2)
	if _, err := Validate(b2); err != nil {
		t.Fatalf("Validate refused a compacted-looking batch: %v", err)
	}
}

func TestSettersKeepCRCAndHeader(t *testing.T) {
	b := produce(t, spec(2, 5).build(t))
	b.SetBaseOffset(1 << 40)
	b.SetPartitionLeaderEpoch(9)
	check := func(what string) {
		t.Helper()
		h, err := Validate(b.Bytes())
		if err != nil {
			t.Fatalf("%s broke the batch: %v", what, err)
		}
		if h != b.Header() {
			t.Fatalf("%s: header view %+v, bytes say %+v", what, b.Header(), h)
		}
	}
	check("offset and epoch")
	if h := b.Header(); h.BaseOffset != 1<<40 || h.PartitionLeaderEpoch != 9 {
		t.Fatalf("header %+v", h)
	}
	b.SetLogAppendTime(12345)
	check("SetLogAppendTime")
	if h := b.Header(); h.TimestampType() != LogAppendTime || h.MaxTimestamp != 12345 || h.BaseTimestamp != 5 {
		t.Fatalf("header %+v", h)
	}
	b.SetProducer(42, 3, 1<<31-1)
	check("SetProducer")
	if h := b.Header(); h.ProducerID != 42 || h.ProducerEpoch != 3 || h.LastSequence() != 0 {
		t.Fatalf("header %+v", h)
	}
}

func TestNewBatchAndEmptyBatch(t *testing.T) {
	s := spec(3, 100).idempotent(5, 1, 10)
	want := s.build(t)
	wh, _ := ParseBatchHeader(want)
	h := wh
	h.BatchLength, h.Magic, h.CRC = 0, 0, 0 // NewBatch fills them
	got := NewBatch(h, s.records())
	if !bytes.Equal(got.Bytes(), want) || got.Header() != wh {
		t.Fatalf("NewBatch differs from the hand-built batch:\n%x\n%x", got.Bytes(), want)
	}
	h.Attributes = int16(CompressionLZ4) | AttrTimestampType | AttrTransactional
	e := EmptyBatch(h)
	eh, err := Validate(e.Bytes())
	if err != nil || eh != e.Header() {
		t.Fatalf("empty batch %+v: %v", eh, err)
	}
	if eh.RecordCount != 0 || eh.BaseTimestamp != -1 || eh.Compression() != CompressionNone || len(e.Bytes()) != BatchHeaderSize ||
		eh.TimestampType() != LogAppendTime || !eh.IsTransactional() || eh.LastOffsetDelta != 2 || eh.BaseSequence != 10 || eh.MaxTimestamp != 102 {
		t.Fatalf("empty batch header %+v", eh)
	}
	it, err := e.Records()
	if err != nil || it.Next() || it.Err() != nil {
		t.Fatalf("records of an empty batch: %v %v", err, it.Err())
	}
}

func TestFrame(t *testing.T) {
	a := spec(1, 1).build(t)
	buf := append(bytes.Clone(a), 1, 2, 3)
	h, size, err := Frame(buf)
	if err != nil || size != len(a) || h.RecordCount != 1 {
		t.Fatalf("%+v %d %v", h, size, err)
	}
	if _, _, err := Frame(a[:len(a)-1]); !errors.Is(err, ErrTruncatedBatch) {
		t.Fatalf("torn: %v", err)
	}
	bad := bytes.Clone(a)
	bad[len(bad)-1] ^= 1
	if _, _, err := Frame(bad); err != nil {
		t.Fatalf("Frame checked the CRC: %v", err)
	}
}

// FrameOK answers as Frame does, and its no costs no allocation: a log
// reader asks it at the end of what it may read on every fetch.
func TestFrameOK(t *testing.T) {
	a := spec(1, 1).build(t)
	zeroed := make([]byte, 2*BatchHeaderSize)
	corrupt := bytes.Clone(a)
	corrupt[offBatchLength] = 0xff // a negative length
	for _, in := range [][]byte{nil, a[:LogOverhead-1], a[:len(a)-1], zeroed, corrupt, a, append(bytes.Clone(a), 1, 2, 3)} {
		fh, fsize, err := Frame(in)
		oh, osize, ok := FrameOK(in)
		if ok != (err == nil) || oh != fh || osize != fsize {
			t.Fatalf("FrameOK %+v %d %v, Frame %+v %d %v", oh, osize, ok, fh, fsize, err)
		}
	}
	for _, in := range [][]byte{nil, a[:len(a)-1], zeroed} {
		if n := testing.AllocsPerRun(100, func() { FrameOK(in) }); n != 0 {
			t.Fatalf("FrameOK of %d bytes without a whole batch: %v allocations, want 0", len(in), n)
		}
	}
}

func TestWholeBatches(t *testing.T) {
	a, b := spec(1, 1).build(t), spec(2, 2).build(t)
	ab := append(bytes.Clone(a), b...)
	for _, c := range []struct {
		name string
		in   []byte
		want int
	}{
		{"empty", nil, 0},
		{"whole", ab, len(ab)},
		{"torn last batch", ab[:len(ab)-3], len(a)},
		{"torn length", append(bytes.Clone(a), 0, 0, 0), len(a)},
		{"torn first", a[:20], 0},
		// Garbage is not cut off: the CRC check downstream must refuse it.
		{"garbage length", append(bytes.Clone(a), 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 1), len(a) + 13},
	} {
		if got := WholeBatches(c.in); len(got) != c.want {
			t.Errorf("%s: %d bytes, want %d", c.name, len(got), c.want)
		}
	}
}

func TestBatchesIterator(t *testing.T) {
	a, b := spec(1, 1).build(t), spec(2, 2).build(t)
	buf := append(bytes.Clone(a), b...)
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
			buf := append(bytes.Clone(a), c.tail...)
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
	bad := bytes.Clone(buf)
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
