package compat

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testsupport"
)

// rawBatch builds a v2 record batch by hand (what a producer sends), so tests
// can send exact producer ids, epochs and sequences.
type rawBatch struct {
	producerID    int64
	producerEpoch int16
	baseSequence  int32
	timestamps    []int64 // one record per timestamp
	keys          [][]byte
}

func (rb rawBatch) encode() []byte {
	var records []byte
	base := rb.timestamps[0]
	maxTS := base
	for i, ts := range rb.timestamps {
		r := kmsg.Record{OffsetDelta: int32(i), TimestampDelta64: ts - base, Value: []byte("v")}
		if i < len(rb.keys) {
			r.Key = rb.keys[i]
		}
		body := r.AppendTo(nil)
		r.Length = int32(len(body) - 1) // the encoded length varint(0) is one byte
		records = r.AppendTo(records)
		maxTS = max(maxTS, ts)
	}
	b := make([]byte, 61, 61+len(records))
	binary.BigEndian.PutUint64(b[0:], 0)                             // base offset
	binary.BigEndian.PutUint32(b[8:], uint32(49+len(records)))       // length after this field
	binary.BigEndian.PutUint32(b[12:], 0xFFFFFFFF)                   // partition leader epoch -1
	b[16] = 2                                                        // magic
	binary.BigEndian.PutUint16(b[21:], 0)                            // attributes
	binary.BigEndian.PutUint32(b[23:], uint32(len(rb.timestamps)-1)) // last offset delta
	binary.BigEndian.PutUint64(b[27:], uint64(base))                 // base timestamp
	binary.BigEndian.PutUint64(b[35:], uint64(maxTS))                // max timestamp
	binary.BigEndian.PutUint64(b[43:], uint64(rb.producerID))        // producer id
	binary.BigEndian.PutUint16(b[51:], uint16(rb.producerEpoch))     // producer epoch
	binary.BigEndian.PutUint32(b[53:], uint32(rb.baseSequence))      // base sequence
	binary.BigEndian.PutUint32(b[57:], uint32(len(rb.timestamps)))   // record count
	b = append(b, records...)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli)) // CRC-32C
	return b
}

// produceRawReq is a Produce of one batch to topic/partition, whose answer
// the test reads itself, with a 10 s timeout.
func produceRawReq(topic string, partition int32, acks int16, batch []byte) *kmsg.ProduceRequest {
	return testsupport.ProduceRequest(topic, partition, acks, 10000, batch)
}
