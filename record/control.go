package record

import (
	"encoding/binary"
	"fmt"
)

// ControlType is the type of a control record, stored in its key (Kafka's
// ControlRecordType).
type ControlType int16

const (
	// ControlUnknown stands for a type this package does not know; Kafka
	// maps those to UNKNOWN and skips them.
	ControlUnknown ControlType = -1
	ControlAbort   ControlType = 0 // end of an aborted transaction
	ControlCommit  ControlType = 1 // end of a committed transaction
)

func (t ControlType) String() string {
	switch t {
	case ControlAbort:
		return "ABORT"
	case ControlCommit:
		return "COMMIT"
	}
	return fmt.Sprintf("control(%d)", int16(t))
}

const (
	controlKeySize      = 4 // version int16, type int16
	endTxnMarkerSize    = 6 // version int16, coordinatorEpoch int32
	controlKeyVersion   = 0
	endTxnMarkerVersion = 0
)

// AppendControlKey appends the key of a control record of type t: version
// 0, then the type.
func AppendControlKey(dst []byte, t ControlType) []byte {
	dst = binary.BigEndian.AppendUint16(dst, controlKeyVersion)
	return binary.BigEndian.AppendUint16(dst, uint16(t))
}

// ParseControlKey reads the type from a control record's key, as Kafka's
// ControlRecordType.parse: at least 4 bytes and a version >= 0 (a newer
// version is read as version 0); a type other than ABORT or COMMIT is
// ControlUnknown. Errors wrap ErrInvalidRecord.
func ParseControlKey(key []byte) (ControlType, error) {
	if len(key) < controlKeySize {
		return ControlUnknown, fmt.Errorf("%w: control record key of %d bytes, need %d", ErrInvalidRecord, len(key), controlKeySize)
	}
	if v := int16(binary.BigEndian.Uint16(key)); v < 0 {
		return ControlUnknown, fmt.Errorf("%w: control record key version %d", ErrInvalidRecord, v)
	}
	switch t := ControlType(binary.BigEndian.Uint16(key[2:])); t {
	case ControlAbort, ControlCommit:
		return t, nil
	}
	return ControlUnknown, nil
}

// EndTxnMarker is the control record that ends a transaction of a producer
// on a partition (Kafka's EndTransactionMarker).
type EndTxnMarker struct {
	Type             ControlType // ControlAbort or ControlCommit
	CoordinatorEpoch int32       // epoch of the transaction coordinator that wrote it
}

// AppendValue appends the marker's record value: version 0, then the
// coordinator epoch.
func (m EndTxnMarker) AppendValue(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint16(dst, endTxnMarkerVersion)
	return binary.BigEndian.AppendUint32(dst, uint32(m.CoordinatorEpoch))
}

// ParseEndTxnMarker reads a transaction marker from a control record, as
// Kafka's EndTransactionMarker.deserialize: the key must be ABORT or COMMIT,
// the value at least 6 bytes with a version >= 0 (a newer version is read
// as version 0). Errors wrap ErrInvalidRecord.
func ParseEndTxnMarker(r Record) (EndTxnMarker, error) {
	t, err := ParseControlKey(r.Key)
	if err != nil {
		return EndTxnMarker{}, err
	}
	if t != ControlAbort && t != ControlCommit {
		return EndTxnMarker{}, fmt.Errorf("%w: control record of type %d is not a transaction marker", ErrInvalidRecord, int16(binary.BigEndian.Uint16(r.Key[2:])))
	}
	if len(r.Value) < endTxnMarkerSize {
		return EndTxnMarker{}, fmt.Errorf("%w: transaction marker value of %d bytes, need %d", ErrInvalidRecord, len(r.Value), endTxnMarkerSize)
	}
	if v := int16(binary.BigEndian.Uint16(r.Value)); v < 0 {
		return EndTxnMarker{}, fmt.Errorf("%w: transaction marker version %d", ErrInvalidRecord, v)
	}
	return EndTxnMarker{Type: t, CoordinatorEpoch: int32(binary.BigEndian.Uint32(r.Value[2:]))}, nil
}

// NewEndTxnMarkerBatch builds the control batch that carries m for a
// producer, as Kafka's MemoryRecords.withEndTransactionMarker: transactional
// and control bits, no sequence, one uncompressed record with offset and
// timestamp deltas 0 stamped ts (ms). Offset and leader epoch are set at
// append, as for any batch.
func NewEndTxnMarkerBatch(producerID int64, producerEpoch int16, ts int64, m EndTxnMarker) Batch {
	r := Record{Key: AppendControlKey(nil, m.Type), Value: m.AppendValue(nil)}
	h := BatchHeader{
		PartitionLeaderEpoch: -1, Attributes: AttrTransactional | AttrControl,
		BaseTimestamp: ts, MaxTimestamp: ts, ProducerID: producerID, ProducerEpoch: producerEpoch,
		BaseSequence: -1, RecordCount: 1,
	}
	return NewBatch(h, AppendRecord(nil, &r))
}
