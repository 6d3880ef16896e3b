package record

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// castagnoli is the CRC-32C table; read-only after package initialisation.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ComputeCRC is the CRC-32C of batch b from its attributes to its end: what
// its crc field must hold. b must hold at least the header.
func ComputeCRC(b []byte) uint32 { return crc32.Checksum(b[offAttributes:], castagnoli) }

// updateCRC stores the recomputed CRC of b (after a change inside its range).
func updateCRC(b []byte) uint32 {
	crc := ComputeCRC(b)
	binary.BigEndian.PutUint32(b[offCRC:], crc)
	return crc
}

// checkCRC compares the CRC h was parsed with against b's bytes.
func checkCRC(b []byte, h BatchHeader) error {
	if crc := ComputeCRC(b); crc != h.CRC {
		return fmt.Errorf("%w: crc %08x, computed %08x", ErrCorruptBatch, h.CRC, crc)
	}
	return nil
}

// Validate checks that b is exactly one whole batch as stored in a log:
// length matching the buffer, magic 2, lastOffsetDelta not negative and a
// correct CRC. A compacted batch may hold fewer records than its offset
// range, so recordCount is not checked here (ParseProduce does).
func Validate(b []byte) (BatchHeader, error) {
	size, err := sizeAt(b)
	switch {
	case err != nil:
		return BatchHeader{}, err
	case size > len(b):
		return BatchHeader{}, fmt.Errorf("%w: batch of %d bytes, only %d present", ErrTruncatedBatch, size, len(b))
	case size < len(b):
		return BatchHeader{}, fmt.Errorf("%w: batch length %d does not match buffer of %d bytes", ErrCorruptBatch, size, len(b))
	}
	h, err := checkStructure(b)
	if err != nil {
		return h, err
	}
	return h, checkCRC(b, h)
}
