package testsupport

import (
	"encoding/binary"
	"hash/crc32"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ProduceRequest is a v9 Produce of one record batch to one partition, for
// tests that must see the broker's own answer (no client retries).
func ProduceRequest(topic string, partition int32, acks int16, timeoutMillis int32, batch []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks = acks
	req.TimeoutMillis = timeoutMillis
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// RecordBatch builds a v2 record batch of values (each with key), no
// producer id, no compression: what a plain producer sends.
func RecordBatch(values [][]byte, key []byte) []byte {
	var records []byte
	for i, v := range values {
		r := kmsg.Record{OffsetDelta: int32(i), Key: key, Value: v}
		r.Length = int32(len(r.AppendTo(nil)) - 1) // the encoded length varint(0) is one byte
		records = r.AppendTo(records)
	}
	now := uint64(time.Now().UnixMilli())
	b := make([]byte, 61, 61+len(records))
	binary.BigEndian.PutUint32(b[8:], uint32(49+len(records))) // length after this field
	binary.BigEndian.PutUint32(b[12:], 0xFFFFFFFF)             // partition leader epoch -1
	b[16] = 2                                                  // magic
	binary.BigEndian.PutUint32(b[23:], uint32(len(values)-1))  // last offset delta
	binary.BigEndian.PutUint64(b[27:], now)                    // base timestamp
	binary.BigEndian.PutUint64(b[35:], now)                    // max timestamp
	binary.BigEndian.PutUint64(b[43:], 0xFFFFFFFFFFFFFFFF)     // producer id -1
	binary.BigEndian.PutUint16(b[51:], 0xFFFF)                 // producer epoch -1
	binary.BigEndian.PutUint32(b[53:], 0xFFFFFFFF)             // base sequence -1
	binary.BigEndian.PutUint32(b[57:], uint32(len(values)))    // record count
	b = append(b, records...)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
	return b
}
