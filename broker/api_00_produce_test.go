package broker

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/record"
)

// keyedBatch encodes records with keys keys (nil: a null key) and value
// "v", compressed with codec.
func keyedBatch(t testing.TB, codec record.Compression, xerial bool, keys ...[]byte) []byte {
	t.Helper()
	var raw []byte
	for i, k := range keys {
		raw = record.AppendRecord(raw, &record.Record{OffsetDelta: int32(i), Key: k, Value: []byte("v")})
	}
	var comp record.Compressor
	defer comp.Close()
	recs, err := comp.Compress(codec, raw, xerial)
	if err != nil {
		t.Fatal(err)
	}
	n := int32(len(keys))
	b := record.NewBatch(record.BatchHeader{Attributes: int16(codec), LastOffsetDelta: n - 1, RecordCount: n,
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, PartitionLeaderEpoch: -1}, recs)
	return b.Bytes()
}

// Compacted topics refuse keyless records with INVALID_RECORD, whatever
// the codec; an empty key is a key.
func TestCheckKeyed(t *testing.T) {
	for _, c := range []struct {
		codec  record.Compression
		xerial bool
	}{{record.CompressionNone, false}, {record.CompressionGzip, false}, {record.CompressionSnappy, false},
		{record.CompressionSnappy, true}, {record.CompressionLZ4, false}, {record.CompressionZstd, false}} {
		t.Run(fmt.Sprintf("%s/xerial=%v", c.codec, c.xerial), func(t *testing.T) {
			parse := func(keys ...[]byte) record.Batch {
				b, err := record.ParseProduce(keyedBatch(t, c.codec, c.xerial, keys...))
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			if err := checkKeyed(parse([]byte("a"), []byte("b"), []byte{})); err != nil {
				t.Fatalf("keyed batch: %v", err)
			}
			err := checkKeyed(parse([]byte("a"), nil))
			if !errors.Is(err, record.ErrInvalidRecord) || !strings.Contains(err.Error(), "without key") || errorCode(err) != kerr.InvalidRecord.Code {
				t.Fatalf("keyless batch: %v", err)
			}
		})
	}
	// Records cut short inside a batch whose CRC covers the cut.
	good := keyedBatch(t, record.CompressionNone, false, []byte("a"))
	h, _ := record.ParseBatchHeader(good)
	bad, err := record.ParseProduce(record.NewBatch(h, good[record.BatchHeaderSize:len(good)-3]).Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if err := checkKeyed(bad); !errors.Is(err, record.ErrCorruptBatch) || errorCode(err) != kerr.CorruptMessage.Code {
		t.Fatalf("malformed records: %v", err)
	}
}
