package group

import (
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Record types: the int16 every __consumer_offsets key starts with (Kafka's
// CoordinatorRecordType). See doc.go for the byte layouts.
const (
	typeOffsetCommitLegacy          int16 = 0 // read only
	typeOffsetCommit                int16 = 1
	typeGroupMetadata               int16 = 2
	typeConsumerGroupMetadata       int16 = 3
	typeConsumerGroupPartitionMeta  int16 = 4 // read only (pre-4.1 Kafka)
	typeConsumerGroupMemberMetadata int16 = 5
	typeConsumerGroupTargetMeta     int16 = 6
	typeConsumerGroupTargetMember   int16 = 7
	typeConsumerGroupCurrentMember  int16 = 8
	typeConsumerGroupRegex          int16 = 16 // read only
)

// Versions written: Kafka 4's choices.
const (
	groupMetadataValueVersion  int16 = 3
	offsetCommitValueVersion   int16 = 3 // 1 when the commit has an expire timestamp
	offsetCommitExpireVersion  int16 = 1
	consumerRecordValueVersion int16 = 0 // all KIP-848 values (flexible)
)

var (
	errUnknownRecordType = errors.New("group: unknown record type")
	errCorruptRecord     = errors.New("group: corrupt record")
)

// recordKey identifies what a record is about; the last value per key wins.
// Unused fields are zero.
type recordKey struct {
	typ       int16
	group     string
	topic     string // offset commits
	partition int32  // offset commits
	member    string // member keyed KIP-848 records; the regex of type 16
}

// offsetValue is one committed offset (OffsetAndMetadata in Kafka).
type offsetValue struct {
	offset      int64
	leaderEpoch int32 // -1: none
	metadata    string
	commitTs    int64 // ms
	expireTs    int64 // ms, -1: none (only OffsetCommit v2-v4 with a retention)
	// seq orders the group's writes: the record's offset when replayed,
	// a counter after that (txn_offsets.go); not stored.
	seq int64
}

// consumerGroupMetadata is ConsumerGroupMetadataValue.
type consumerGroupMetadata struct {
	epoch        int32
	metadataHash int64
}

// memberSubscription is ConsumerGroupMemberMetadataValue.
type memberSubscription struct {
	instanceID, rackID   *string
	clientID, clientHost string
	topicNames           []string
	topicRegex           *string
	rebalanceTimeoutMs   int32
	serverAssignor       *string
}

// memberAssignment is ConsumerGroupCurrentMemberAssignmentValue.
type memberAssignment struct {
	memberEpoch, previousMemberEpoch int32
	state                            memberState
	assigned, pendingRevocation      assignment
}

// assignment maps a topic id to its partitions, sorted and never empty.
type assignment map[[16]byte][]int32

// decodedValue is one of *offsetValue, *kmsg.GroupMetadataValue,
// *consumerGroupMetadata, *memberSubscription, assignment (target member),
// targetEpoch, *memberAssignment, or skipValue for read-only types.
type targetEpoch int32

type skipValue struct{}

// ---- keys ----

func appendOffsetKey(group, topic string, partition int32) []byte {
	k := kmsg.OffsetCommitKey{Version: typeOffsetCommit, Group: group, Topic: topic, Partition: partition}
	return k.AppendTo(nil)
}

func appendGroupKey(typ int16, group string) []byte {
	b := kbin.AppendInt16(nil, typ)
	return kbin.AppendString(b, group)
}

func appendMemberKey(typ int16, group, member string) []byte {
	return kbin.AppendString(appendGroupKey(typ, group), member)
}

// decodeKey parses a __consumer_offsets key.
func decodeKey(key []byte) (recordKey, error) {
	b := kbin.Reader{Src: key}
	k := recordKey{typ: b.Int16()}
	if !b.Ok() {
		return k, errCorruptRecord
	}
	switch k.typ {
	case typeOffsetCommitLegacy, typeOffsetCommit:
		k.group, k.topic, k.partition = b.String(), b.String(), b.Int32()
	case typeGroupMetadata, typeConsumerGroupMetadata, typeConsumerGroupPartitionMeta, typeConsumerGroupTargetMeta:
		k.group = b.String()
	case typeConsumerGroupMemberMetadata, typeConsumerGroupTargetMember, typeConsumerGroupCurrentMember, typeConsumerGroupRegex:
		k.group, k.member = b.String(), b.String()
	default:
		return k, fmt.Errorf("%w %d", errUnknownRecordType, k.typ)
	}
	if b.Complete() != nil || len(b.Src) != 0 {
		return k, errCorruptRecord
	}
	return k, nil
}

// decodeRecord parses one record; value is nil for a tombstone.
func decodeRecord(key, value []byte) (recordKey, any, error) {
	k, err := decodeKey(key)
	if err != nil || value == nil {
		return k, nil, err
	}
	v, err := decodeValue(k.typ, value)
	return k, v, err
}

func decodeValue(typ int16, value []byte) (any, error) {
	switch typ {
	case typeOffsetCommitLegacy, typeOffsetCommit:
		return decodeOffsetValue(value)
	case typeGroupMetadata:
		var v kmsg.GroupMetadataValue
		if len(value) < 2 || value[0] != 0 || value[1] > 4 { // versions 0-4
			return nil, errCorruptRecord
		}
		if err := v.ReadFrom(value); err != nil {
			return nil, fmt.Errorf("%w: %v", errCorruptRecord, err)
		}
		return &v, nil
	case typeConsumerGroupMetadata:
		return decodeConsumerGroupMetadata(value)
	case typeConsumerGroupMemberMetadata:
		return decodeMemberSubscription(value)
	case typeConsumerGroupTargetMeta:
		return decodeTargetMeta(value)
	case typeConsumerGroupTargetMember:
		return decodeTargetMember(value)
	case typeConsumerGroupCurrentMember:
		return decodeMemberAssignment(value)
	default:
		return skipValue{}, nil
	}
}

// ---- offsets ----

func offsetRecord(group, topic string, partition int32, o offsetValue) Record {
	v := kmsg.OffsetCommitValue{
		Version:         offsetCommitValueVersion,
		Offset:          o.offset,
		LeaderEpoch:     o.leaderEpoch,
		Metadata:        o.metadata,
		CommitTimestamp: o.commitTs,
		ExpireTimestamp: -1,
	}
	if o.expireTs >= 0 {
		v.Version = offsetCommitExpireVersion
		v.ExpireTimestamp = o.expireTs
	}
	return Record{Key: appendOffsetKey(group, topic, partition), Value: v.AppendTo(nil)}
}

func offsetTombstone(group, topic string, partition int32) Record {
	return Record{Key: appendOffsetKey(group, topic, partition)}
}

func decodeOffsetValue(value []byte) (*offsetValue, error) {
	if len(value) < 2 || value[0] != 0 || value[1] > 4 {
		return nil, errCorruptRecord
	}
	var v kmsg.OffsetCommitValue
	if err := v.ReadFrom(value); err != nil {
		return nil, fmt.Errorf("%w: %v", errCorruptRecord, err)
	}
	o := &offsetValue{offset: v.Offset, leaderEpoch: -1, metadata: v.Metadata, commitTs: v.CommitTimestamp, expireTs: -1}
	if v.Version >= 3 {
		o.leaderEpoch = v.LeaderEpoch
	}
	if v.Version == 1 {
		o.expireTs = v.ExpireTimestamp
	}
	return o, nil
}

// ---- classic group metadata ----

func groupMetadataRecord(group string, v *kmsg.GroupMetadataValue) Record {
	v.Version = groupMetadataValueVersion
	return Record{Key: appendGroupKey(typeGroupMetadata, group), Value: v.AppendTo(nil)}
}

func groupMetadataTombstone(group string) Record {
	return Record{Key: appendGroupKey(typeGroupMetadata, group)}
}

// ---- KIP-848 records (flexible version 0 values) ----

func consumerGroupMetadataRecord(group string, m consumerGroupMetadata) Record {
	b := kbin.AppendInt16(nil, consumerRecordValueVersion)
	b = kbin.AppendInt32(b, m.epoch)
	if m.metadataHash != 0 {
		b = kbin.AppendUvarint(b, 1) // one tagged field
		b = kbin.AppendUvarint(b, 0) // tag 0: MetadataHash
		b = kbin.AppendUvarint(b, 8)
		b = kbin.AppendInt64(b, m.metadataHash)
	} else {
		b = kbin.AppendUvarint(b, 0)
	}
	return Record{Key: appendGroupKey(typeConsumerGroupMetadata, group), Value: b}
}

func decodeConsumerGroupMetadata(value []byte) (*consumerGroupMetadata, error) {
	r, err := flexibleValue(value)
	if err != nil {
		return nil, err
	}
	m := &consumerGroupMetadata{epoch: r.Int32()}
	err = readTags(&r, func(tag uint32, data []byte) {
		if tag == 0 && len(data) == 8 {
			t := kbin.Reader{Src: data}
			m.metadataHash = t.Int64()
		}
	})
	return m, finish(&r, err)
}

func memberSubscriptionRecord(group, member string, s *memberSubscription) Record {
	b := kbin.AppendInt16(nil, consumerRecordValueVersion)
	b = kbin.AppendCompactNullableString(b, s.instanceID)
	b = kbin.AppendCompactNullableString(b, s.rackID)
	b = kbin.AppendCompactString(b, s.clientID)
	b = kbin.AppendCompactString(b, s.clientHost)
	b = kbin.AppendCompactArrayLen(b, len(s.topicNames))
	for _, t := range s.topicNames {
		b = kbin.AppendCompactString(b, t)
	}
	b = kbin.AppendCompactNullableString(b, s.topicRegex)
	b = kbin.AppendInt32(b, s.rebalanceTimeoutMs)
	b = kbin.AppendCompactNullableString(b, s.serverAssignor)
	b = kbin.AppendUvarint(b, 0)
	return Record{Key: appendMemberKey(typeConsumerGroupMemberMetadata, group, member), Value: b}
}

func decodeMemberSubscription(value []byte) (*memberSubscription, error) {
	r, err := flexibleValue(value)
	if err != nil {
		return nil, err
	}
	s := &memberSubscription{}
	s.instanceID = r.CompactNullableString()
	s.rackID = r.CompactNullableString()
	s.clientID = r.CompactString()
	s.clientHost = r.CompactString()
	n := r.CompactArrayLen()
	if n < 0 {
		return nil, errCorruptRecord
	}
	for i := int32(0); i < n && r.Ok(); i++ {
		s.topicNames = append(s.topicNames, r.CompactString())
	}
	s.topicRegex = r.CompactNullableString()
	s.rebalanceTimeoutMs = r.Int32()
	s.serverAssignor = r.CompactNullableString()
	return s, finish(&r, readTags(&r, nil))
}

func targetMetaRecord(group string, epoch int32) Record {
	b := kbin.AppendInt16(nil, consumerRecordValueVersion)
	b = kbin.AppendInt32(b, epoch)
	b = kbin.AppendUvarint(b, 0)
	return Record{Key: appendGroupKey(typeConsumerGroupTargetMeta, group), Value: b}
}

func decodeTargetMeta(value []byte) (targetEpoch, error) {
	r, err := flexibleValue(value)
	if err != nil {
		return 0, err
	}
	e := r.Int32()
	return targetEpoch(e), finish(&r, readTags(&r, nil))
}

func targetMemberRecord(group, member string, a assignment) Record {
	b := kbin.AppendInt16(nil, consumerRecordValueVersion)
	b = appendTopicPartitions(b, a)
	b = kbin.AppendUvarint(b, 0)
	return Record{Key: appendMemberKey(typeConsumerGroupTargetMember, group, member), Value: b}
}

func decodeTargetMember(value []byte) (assignment, error) {
	r, err := flexibleValue(value)
	if err != nil {
		return nil, err
	}
	a := readTopicPartitions(&r)
	return a, finish(&r, readTags(&r, nil))
}

func memberAssignmentRecord(group, member string, m *memberAssignment) Record {
	b := kbin.AppendInt16(nil, consumerRecordValueVersion)
	b = kbin.AppendInt32(b, m.memberEpoch)
	b = kbin.AppendInt32(b, m.previousMemberEpoch)
	b = kbin.AppendInt8(b, int8(m.state))
	b = appendTopicPartitions(b, m.assigned)
	b = appendTopicPartitions(b, m.pendingRevocation)
	b = kbin.AppendUvarint(b, 0)
	return Record{Key: appendMemberKey(typeConsumerGroupCurrentMember, group, member), Value: b}
}

func decodeMemberAssignment(value []byte) (*memberAssignment, error) {
	r, err := flexibleValue(value)
	if err != nil {
		return nil, err
	}
	m := &memberAssignment{memberEpoch: r.Int32(), previousMemberEpoch: r.Int32(), state: memberState(r.Int8())}
	m.assigned = readTopicPartitions(&r)
	m.pendingRevocation = readTopicPartitions(&r)
	return m, finish(&r, readTags(&r, nil))
}

func memberTombstone(typ int16, group, member string) Record {
	return Record{Key: appendMemberKey(typ, group, member)}
}

func groupTombstone(typ int16, group string) Record {
	return Record{Key: appendGroupKey(typ, group)}
}

// appendTopicPartitions writes []TopicPartitions{TopicId uuid, Partitions
// []int32, tags} in topic id order, so equal assignments encode equally.
func appendTopicPartitions(b []byte, a assignment) []byte {
	ids := a.topicIDs()
	b = kbin.AppendCompactArrayLen(b, len(ids))
	for _, id := range ids {
		b = kbin.AppendUuid(b, id)
		ps := a[id]
		b = kbin.AppendCompactArrayLen(b, len(ps))
		for _, p := range ps {
			b = kbin.AppendInt32(b, p)
		}
		b = kbin.AppendUvarint(b, 0)
	}
	return b
}

func readTopicPartitions(r *kbin.Reader) assignment {
	n := r.CompactArrayLen()
	if n < 0 || !r.Ok() {
		return nil
	}
	a := make(assignment, min(n, 16))
	for i := int32(0); i < n && r.Ok(); i++ {
		id := r.Uuid()
		np := r.CompactArrayLen()
		if np < 0 || int(np) > len(r.Src)/4 {
			r.Span(-1) // invalidate
			return nil
		}
		for j := int32(0); j < np; j++ {
			a[id] = append(a[id], r.Int32())
		}
		_ = readTags(r, nil)
	}
	// Sort once: a topic may repeat (never when kbroker wrote it).
	for id, ps := range a {
		if len(ps) == 0 {
			delete(a, id)
			continue
		}
		slices.Sort(ps)
		a[id] = slices.Compact(ps)
	}
	return a
}

// flexibleValue checks the version prefix of a KIP-848 value.
func flexibleValue(value []byte) (kbin.Reader, error) {
	r := kbin.Reader{Src: value}
	if v := r.Int16(); !r.Ok() || v != consumerRecordValueVersion {
		return r, errCorruptRecord
	}
	return r, nil
}

// readTags reads a tagged-field section, handing each field to fn.
func readTags(r *kbin.Reader, fn func(tag uint32, data []byte)) error {
	n := r.Uvarint()
	for i := uint32(0); i < n && r.Ok(); i++ {
		tag := r.Uvarint()
		size := r.Uvarint()
		if size > uint32(len(r.Src)) {
			return errCorruptRecord
		}
		data := r.Span(int(size))
		if fn != nil && r.Ok() {
			fn(tag, data)
		}
	}
	return nil
}

func finish(r *kbin.Reader, err error) error {
	if err != nil || r.Complete() != nil || len(r.Src) != 0 {
		return errCorruptRecord
	}
	return nil
}

// ---- assignment helpers ----

// add inserts partitions, keeping the list sorted and duplicate free.
func (a assignment) add(id [16]byte, ps ...int32) {
	if len(ps) == 0 {
		return
	}
	cur := append(a[id], ps...)
	slices.Sort(cur)
	a[id] = slices.Compact(cur)
}

func (a assignment) has(id [16]byte, p int32) bool {
	_, ok := slices.BinarySearch(a[id], p)
	return ok
}

func (a assignment) topicIDs() [][16]byte {
	ids := make([][16]byte, 0, len(a))
	for id := range a {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(x, y [16]byte) int { return compareIDs(x, y) })
	return ids
}

func (a assignment) clone() assignment {
	c := make(assignment, len(a))
	for id, ps := range a {
		c[id] = slices.Clone(ps)
	}
	return c
}

func (a assignment) equal(b assignment) bool {
	if len(a) != len(b) {
		return false
	}
	for id, ps := range a {
		if !slices.Equal(ps, b[id]) {
			return false
		}
	}
	return true
}

func (a assignment) count() int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

func compareIDs(x, y [16]byte) int {
	for i := range x {
		if x[i] != y[i] {
			return int(x[i]) - int(y[i])
		}
	}
	return 0
}
