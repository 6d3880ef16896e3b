package record

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// testBatch describes a batch that build encodes by hand, field by field,
// with the compression libraries called directly: the package's decoders
// are checked against an encoder that is not theirs.
type testBatch struct {
	baseOffset  int64
	leaderEpoch int32
	timestamps  []int64 // one per record
	keys        [][]byte
	valueSize   int
	header      bool // each record gets header "h" = its key
	compression Compression
	xerial      bool // snappy with the Java client's framing
	producerID  int64
	epoch       int16
	baseSeq     int32
	attrs       int16 // more attribute bits
}

// spec returns a batch of n records with timestamps ts0, ts0+1, ... and
// key "k".
func spec(n int, ts0 int64) testBatch {
	ts := make([]int64, n)
	keys := make([][]byte, n)
	for i := range ts {
		ts[i], keys[i] = ts0+int64(i), []byte("k")
	}
	return testBatch{timestamps: ts, keys: keys, valueSize: 10, producerID: -1, epoch: -1, baseSeq: -1, leaderEpoch: -1}
}

func (s testBatch) idempotent(pid int64, epoch int16, seq int32) testBatch {
	s.producerID, s.epoch, s.baseSeq = pid, epoch, seq
	return s
}

func value(i, size int) []byte { return bytes.Repeat([]byte{byte('a' + i%26)}, size) }

func putBytes(b, v []byte) []byte {
	if v == nil {
		return binary.AppendVarint(b, -1)
	}
	return append(binary.AppendVarint(b, int64(len(v))), v...)
}

func (s testBatch) records() []byte {
	var out []byte
	for i, ts := range s.timestamps {
		r := []byte{0}
		r = binary.AppendVarint(r, ts-s.timestamps[0])
		r = binary.AppendVarint(r, int64(i))
		r = putBytes(r, s.keys[i])
		r = putBytes(r, value(i, s.valueSize))
		if s.header {
			r = binary.AppendVarint(r, 1)
			r = putBytes(putBytes(r, []byte("h")), s.keys[i])
		} else {
			r = binary.AppendVarint(r, 0)
		}
		out = append(binary.AppendVarint(out, int64(len(r))), r...)
	}
	return out
}

func compress(t testing.TB, c Compression, xerial bool, raw []byte) []byte {
	var buf bytes.Buffer
	switch c {
	case CompressionNone:
		return raw
	case CompressionGzip:
		w := gzip.NewWriter(&buf)
		w.Write(raw)
		w.Close()
	case CompressionSnappy:
		if !xerial {
			return s2.EncodeSnappy(nil, raw)
		}
		buf.Write([]byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1})
		half := len(raw) / 2 // two chunks to exercise the framing loop
		for _, part := range [][]byte{raw[:half], raw[half:]} {
			blk := s2.EncodeSnappy(nil, part)
			binary.Write(&buf, binary.BigEndian, uint32(len(blk)))
			buf.Write(blk)
		}
	case CompressionLZ4:
		w := lz4.NewWriter(&buf)
		w.Write(raw)
		w.Close()
	case CompressionZstd:
		enc, err := zstd.NewWriter(nil)
		if err != nil {
			t.Fatal(err)
		}
		defer enc.Close()
		return enc.EncodeAll(raw, nil)
	}
	return buf.Bytes()
}

func (s testBatch) build(t testing.TB) []byte {
	recs := compress(t, s.compression, s.xerial, s.records())
	b := make([]byte, 61, 61+len(recs))
	maxTs := s.timestamps[0]
	for _, ts := range s.timestamps {
		maxTs = max(maxTs, ts)
	}
	be := binary.BigEndian
	be.PutUint64(b[0:], uint64(s.baseOffset))
	be.PutUint32(b[8:], uint32(61+len(recs)-12))
	be.PutUint32(b[12:], uint32(s.leaderEpoch))
	b[16] = 2
	be.PutUint16(b[21:], uint16(s.compression)|uint16(s.attrs))
	be.PutUint32(b[23:], uint32(len(s.timestamps)-1))
	be.PutUint64(b[27:], uint64(s.timestamps[0]))
	be.PutUint64(b[35:], uint64(maxTs))
	be.PutUint64(b[43:], uint64(s.producerID))
	be.PutUint16(b[51:], uint16(s.epoch))
	be.PutUint32(b[53:], uint32(s.baseSeq))
	be.PutUint32(b[57:], uint32(len(s.timestamps)))
	b = append(b, recs...)
	be.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// produce parses b as a produce batch or fails the test.
func produce(t testing.TB, b []byte) Batch {
	t.Helper()
	pb, err := ParseProduce(b)
	if err != nil {
		t.Fatal(err)
	}
	return pb
}

var allCodecs = []struct {
	name   string
	c      Compression
	xerial bool
}{
	{"none", CompressionNone, false}, {"gzip", CompressionGzip, false}, {"snappy", CompressionSnappy, false},
	{"snappy-xerial", CompressionSnappy, true}, {"lz4", CompressionLZ4, false}, {"zstd", CompressionZstd, false},
}
