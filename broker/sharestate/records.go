package sharestate

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"

	"github.com/kbroker/kbroker/broker/group"
	"github.com/kbroker/kbroker/internal/coordrec"
)

// Record is one __share_group_state record; a nil Value is a tombstone. It
// is group.Record, so the broker's adapter of an internal topic partition
// serves every coordinator.
type Record = group.Record

// Record types: the int16 every key starts with (Kafka's
// ShareCoordinator.SHARE_SNAPSHOT_RECORD_KEY_VERSION and
// SHARE_UPDATE_RECORD_KEY_VERSION).
const (
	typeSnapshot int16 = 0
	typeUpdate   int16 = 1
)

// valueVersion is the version of both value types (flexible).
const valueVersion int16 = 0

// tagDeliveryCompleteCount is the tagged field of both values that holds
// the delivery complete count (Kafka 4.2, KIP-1226); absent means -1.
const tagDeliveryCompleteCount = 0

// Delivery states of a state batch ("0:Available,2:Acked,4:Archived").
const (
	DeliveryAvailable    int8 = 0
	DeliveryAcknowledged int8 = 2
	DeliveryArchived     int8 = 4
)

// Key identifies the state of one share-partition: (group, topic id,
// partition), Kafka's SharePartitionKey.
type Key struct {
	Group     string
	TopicID   [16]byte
	Partition int32
}

func (k Key) String() string {
	return fmt.Sprintf("%s:%s:%d", k.Group, TopicIDString(k.TopicID), k.Partition)
}

// StateBatch is a run of offsets with one delivery state and count.
type StateBatch struct {
	FirstOffset, LastOffset int64
	DeliveryState           int8
	DeliveryCount           int16
}

// State is what a share-partition's records hold (Kafka's
// ShareGroupOffset). A snapshot holds it whole; an update holds the
// batches of one write, its start offset and leader epoch.
type State struct {
	SnapshotEpoch         int32
	StateEpoch            int32
	LeaderEpoch           int32
	StartOffset           int64
	DeliveryCompleteCount int32 // -1: unknown
	CreateTimestamp       int64 // ms: when this content was first written
	WriteTimestamp        int64 // ms: when it was last (re)written
	Batches               []StateBatch
}

// recordKind says which record a decoded value came from.
type recordKind int8

const (
	kindSnapshot recordKind = iota
	kindUpdate
	kindTombstone // a snapshot key with a nil value: the state is deleted
)

var kindNames = [...]string{kindSnapshot: "ShareSnapshot", kindUpdate: "ShareUpdate", kindTombstone: "ShareSnapshot tombstone"}

func (k recordKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("recordKind(%d)", int8(k))
}

// stateRecord is a decoded record.
type stateRecord struct {
	key   Key
	kind  recordKind
	value State // zero for a tombstone
}

// encodeKey is | int16 type | int16 len | group | uuid topic | int32 partition |.
func encodeKey(typ int16, k Key) []byte {
	b := coordrec.GroupKey(typ, k.Group)
	b = kbin.AppendUuid(b, k.TopicID)
	return kbin.AppendInt32(b, k.Partition)
}

func decodeKey(key []byte) (int16, Key, error) {
	typ, err := coordrec.Type(key)
	if err != nil {
		return 0, Key{}, err
	}
	if typ != typeSnapshot && typ != typeUpdate {
		return typ, Key{}, fmt.Errorf("%w %d", errUnknownRecordType, typ)
	}
	r := kbin.Reader{Src: key[2:]}
	k := Key{Group: r.String(), TopicID: r.Uuid(), Partition: r.Int32()}
	if err := coordrec.Done(&r); err != nil {
		return typ, Key{}, err
	}
	return typ, k, nil
}

// encode turns a stateRecord into its key and value.
func (sr stateRecord) encode() Record {
	switch sr.kind {
	case kindSnapshot:
		return Record{Key: encodeKey(typeSnapshot, sr.key), Value: encodeSnapshot(sr.value)}
	case kindUpdate:
		return Record{Key: encodeKey(typeUpdate, sr.key), Value: encodeUpdate(sr.value)}
	}
	return Record{Key: encodeKey(typeSnapshot, sr.key)}
}

// encodeSnapshot is ShareSnapshotValue v0:
//
//	| int16 0 | int32 snapshotEpoch | int32 stateEpoch | int32 leaderEpoch |
//	| int64 startOffset | int64 createTimestamp | int64 writeTimestamp |
//	| []StateBatch | tags{0: int32 deliveryCompleteCount} |
func encodeSnapshot(s State) []byte {
	b := kbin.AppendInt16(nil, valueVersion)
	b = kbin.AppendInt32(b, s.SnapshotEpoch)
	b = kbin.AppendInt32(b, s.StateEpoch)
	b = kbin.AppendInt32(b, s.LeaderEpoch)
	b = kbin.AppendInt64(b, s.StartOffset)
	b = kbin.AppendInt64(b, s.CreateTimestamp)
	b = kbin.AppendInt64(b, s.WriteTimestamp)
	b = appendBatches(b, s.Batches)
	return appendCompleteCount(b, s.DeliveryCompleteCount)
}

// encodeUpdate is ShareUpdateValue v0:
//
//	| int16 0 | int32 snapshotEpoch | int32 leaderEpoch | int64 startOffset |
//	| []StateBatch | tags{0: int32 deliveryCompleteCount} |
func encodeUpdate(s State) []byte {
	b := kbin.AppendInt16(nil, valueVersion)
	b = kbin.AppendInt32(b, s.SnapshotEpoch)
	b = kbin.AppendInt32(b, s.LeaderEpoch)
	b = kbin.AppendInt64(b, s.StartOffset)
	b = appendBatches(b, s.Batches)
	return appendCompleteCount(b, s.DeliveryCompleteCount)
}

// appendBatches writes []StateBatch{int64 first, int64 last, int8 state,
// int16 count, tags}.
func appendBatches(b []byte, batches []StateBatch) []byte {
	b = kbin.AppendCompactArrayLen(b, len(batches))
	for _, sb := range batches {
		b = kbin.AppendInt64(b, sb.FirstOffset)
		b = kbin.AppendInt64(b, sb.LastOffset)
		b = kbin.AppendInt8(b, sb.DeliveryState)
		b = kbin.AppendInt16(b, sb.DeliveryCount)
		b = coordrec.AppendTags(b)
	}
	return b
}

func appendCompleteCount(b []byte, n int32) []byte {
	if n == -1 {
		return coordrec.AppendTags(b)
	}
	return coordrec.AppendTags(b, coordrec.Tag{ID: tagDeliveryCompleteCount, Data: kbin.AppendInt32(nil, n)})
}

// decodeRecord parses one record of __share_group_state.
func decodeRecord(r Record) (stateRecord, error) {
	typ, k, err := decodeKey(r.Key)
	if err != nil {
		return stateRecord{}, err
	}
	sr := stateRecord{key: k}
	switch {
	case r.Value == nil && typ == typeSnapshot:
		sr.kind = kindTombstone
		return sr, nil
	case r.Value == nil:
		return sr, fmt.Errorf("%w: tombstone of a ShareUpdate key", coordrec.ErrCorrupt)
	case typ == typeSnapshot:
		sr.kind = kindSnapshot
		sr.value, err = decodeSnapshot(r.Value)
	default:
		sr.kind = kindUpdate
		sr.value, err = decodeUpdate(r.Value)
	}
	return sr, err
}

func decodeSnapshot(value []byte) (State, error) {
	r, err := coordrec.Value(value, valueVersion)
	if err != nil {
		return State{}, err
	}
	s := State{SnapshotEpoch: r.Int32(), StateEpoch: r.Int32(), LeaderEpoch: r.Int32(), StartOffset: r.Int64()}
	s.CreateTimestamp, s.WriteTimestamp = r.Int64(), r.Int64()
	return finishValue(r, s)
}

func decodeUpdate(value []byte) (State, error) {
	r, err := coordrec.Value(value, valueVersion)
	if err != nil {
		return State{}, err
	}
	s := State{SnapshotEpoch: r.Int32(), LeaderEpoch: r.Int32(), StartOffset: r.Int64()}
	return finishValue(r, s)
}

// finishValue reads the batches and the closing tags common to both values.
func finishValue(r *kbin.Reader, s State) (State, error) {
	n, err := coordrec.ArrayLen(r, 20) // 8+8+1+2+1 bytes each
	if err != nil {
		return State{}, err
	}
	s.Batches = make([]StateBatch, 0, n)
	for range n {
		sb := StateBatch{FirstOffset: r.Int64(), LastOffset: r.Int64(), DeliveryState: r.Int8(), DeliveryCount: r.Int16()}
		if err := coordrec.ReadTags(r, nil); err != nil {
			return State{}, err
		}
		s.Batches = append(s.Batches, sb)
	}
	s.DeliveryCompleteCount = -1
	err = coordrec.ReadTags(r, func(tag uint32, data []byte) {
		if tag == tagDeliveryCompleteCount && len(data) == 4 {
			t := kbin.Reader{Src: data}
			s.DeliveryCompleteCount = t.Int32()
		}
	})
	if err != nil {
		return State{}, err
	}
	return s, coordrec.Done(r)
}
