package share

import (
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kbin"

	"github.com/kbroker/kbroker/broker/group"
	"github.com/kbroker/kbroker/internal/coordrec"
)

// Record is one __consumer_offsets record (a nil Value is a tombstone):
// group.Record, so one adapter of the partition serves both coordinators.
type Record = group.Record

// Record types of share groups in __consumer_offsets (Kafka's
// CoordinatorRecordType); see doc.go for the layouts.
const (
	typePartitionMetadata      int16 = 9 // read only (pre-4.1 Kafka); skipped
	typeMemberMetadata         int16 = 10
	typeGroupMetadata          int16 = 11
	typeTargetAssignmentMeta   int16 = 12
	typeTargetAssignmentMember int16 = 13
	typeCurrentMemberAssign    int16 = 14
	typeStatePartitionMetadata int16 = 15
)

const valueVersion int16 = 0

var errNotShare = errors.New("share: not a share group record")

// recordKey is what a record is about; the last value per key wins.
type recordKey struct {
	typ    int16
	group  string
	member string // types 10, 13, 14
}

func memberKeyed(typ int16) bool {
	return typ == typeMemberMetadata || typ == typeTargetAssignmentMember || typ == typeCurrentMemberAssign
}

func (k recordKey) encode() []byte {
	b := coordrec.GroupKey(k.typ, k.group)
	if memberKeyed(k.typ) {
		b = kbin.AppendString(b, k.member)
	}
	return b
}

// decodeKey parses a key; errNotShare for the record types of other
// groups (and for type 9, which nothing needs).
func decodeKey(key []byte) (recordKey, error) {
	typ, err := coordrec.Type(key)
	if err != nil {
		return recordKey{}, err
	}
	if typ < typeMemberMetadata || typ > typeStatePartitionMetadata {
		return recordKey{typ: typ}, fmt.Errorf("%w: type %d", errNotShare, typ)
	}
	r := kbin.Reader{Src: key[2:]}
	k := recordKey{typ: typ, group: r.String()}
	if memberKeyed(typ) {
		k.member = r.String()
	}
	return k, coordrec.Done(&r)
}

// assignment maps a topic id to its partitions, sorted, never empty.
type assignment map[[16]byte][]int32

func (a assignment) ids() [][16]byte {
	ids := make([][16]byte, 0, len(a))
	for id := range a {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(x, y [16]byte) int { return slices.Compare(x[:], y[:]) })
	return ids
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

func (a assignment) clone() assignment {
	c := make(assignment, len(a))
	for id, ps := range a {
		c[id] = slices.Clone(ps)
	}
	return c
}

// appendTopicPartitions writes []{uuid topicId, []int32 partitions, tags}.
func appendTopicPartitions(b []byte, a assignment) []byte {
	ids := a.ids()
	b = kbin.AppendCompactArrayLen(b, len(ids))
	for _, id := range ids {
		b = kbin.AppendUuid(b, id)
		b = appendInt32s(b, a[id])
		b = coordrec.AppendTags(b)
	}
	return b
}

func appendInt32s(b []byte, vs []int32) []byte {
	b = kbin.AppendCompactArrayLen(b, len(vs))
	for _, v := range vs {
		b = kbin.AppendInt32(b, v)
	}
	return b
}

func readInt32s(r *kbin.Reader) ([]int32, error) {
	n, err := coordrec.ArrayLen(r, 4)
	if err != nil {
		return nil, err
	}
	out := make([]int32, n)
	for i := range out {
		out[i] = r.Int32()
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func readTopicPartitions(r *kbin.Reader) (assignment, error) {
	n, err := coordrec.ArrayLen(r, 18) // uuid + empty array + tags
	if err != nil {
		return nil, err
	}
	a := make(assignment, n)
	for range n {
		id := r.Uuid()
		ps, err := readInt32s(r)
		if err != nil {
			return nil, err
		}
		if err := coordrec.ReadTags(r, nil); err != nil {
			return nil, err
		}
		if len(ps) > 0 {
			a[id] = sortedUnique(append(a[id], ps...))
		}
	}
	return a, nil
}

// memberMetadata is ShareGroupMemberMetadataValue (type 10):
//
//	| int16 0 | rackId? | clientId | clientHost | []subscribedTopicNames | tags |
type memberMetadata struct {
	rackID     *string
	clientID   string
	clientHost string
	topics     []string // sorted
}

func (m memberMetadata) encode() []byte {
	b := kbin.AppendInt16(nil, valueVersion)
	b = kbin.AppendCompactNullableString(b, m.rackID)
	b = kbin.AppendCompactString(b, m.clientID)
	b = kbin.AppendCompactString(b, m.clientHost)
	b = kbin.AppendCompactArrayLen(b, len(m.topics))
	for _, t := range m.topics {
		b = kbin.AppendCompactString(b, t)
	}
	return coordrec.AppendTags(b)
}

func decodeMemberMetadata(v []byte) (memberMetadata, error) {
	r, err := coordrec.Value(v, valueVersion)
	if err != nil {
		return memberMetadata{}, err
	}
	m := memberMetadata{rackID: r.CompactNullableString(), clientID: r.CompactString(), clientHost: r.CompactString()}
	n, err := coordrec.ArrayLen(r, 1)
	if err != nil {
		return memberMetadata{}, err
	}
	for range n {
		m.topics = append(m.topics, r.CompactString())
	}
	slices.Sort(m.topics)
	m.topics = slices.Compact(m.topics)
	return m, finish(r)
}

// groupMetadata is ShareGroupMetadataValue (type 11):
//
//	| int16 0 | int32 epoch | int64 metadataHash | tags |
type groupMetadata struct {
	epoch        int32
	metadataHash int64
}

func (m groupMetadata) encode() []byte {
	b := kbin.AppendInt16(nil, valueVersion)
	b = kbin.AppendInt32(b, m.epoch)
	b = kbin.AppendInt64(b, m.metadataHash)
	return coordrec.AppendTags(b)
}

func decodeGroupMetadata(v []byte) (groupMetadata, error) {
	r, err := coordrec.Value(v, valueVersion)
	if err != nil {
		return groupMetadata{}, err
	}
	m := groupMetadata{epoch: r.Int32(), metadataHash: r.Int64()}
	return m, finish(r)
}

// encodeEpoch is ShareGroupTargetAssignmentMetadataValue (type 12):
// | int16 0 | int32 assignmentEpoch | tags |.
func encodeEpoch(epoch int32) []byte {
	return coordrec.AppendTags(kbin.AppendInt32(kbin.AppendInt16(nil, valueVersion), epoch))
}

func decodeEpoch(v []byte) (int32, error) {
	r, err := coordrec.Value(v, valueVersion)
	if err != nil {
		return 0, err
	}
	e := r.Int32()
	return e, finish(r)
}

// encodeTarget is ShareGroupTargetAssignmentMemberValue (type 13):
// | int16 0 | []TopicPartition | tags |.
func encodeTarget(a assignment) []byte {
	return coordrec.AppendTags(appendTopicPartitions(kbin.AppendInt16(nil, valueVersion), a))
}

func decodeTarget(v []byte) (assignment, error) {
	r, err := coordrec.Value(v, valueVersion)
	if err != nil {
		return nil, err
	}
	a, err := readTopicPartitions(r)
	if err != nil {
		return nil, err
	}
	return a, finish(r)
}

// currentAssignment is ShareGroupCurrentMemberAssignmentValue (type 14):
//
//	| int16 0 | int32 memberEpoch | int32 previousMemberEpoch | int8 state |
//	| []TopicPartitions assigned | tags |
type currentAssignment struct {
	memberEpoch, previousEpoch int32
	state                      int8 // MemberState: share members are always STABLE (0)
	assigned                   assignment
}

func (c currentAssignment) encode() []byte {
	b := kbin.AppendInt16(nil, valueVersion)
	b = kbin.AppendInt32(b, c.memberEpoch)
	b = kbin.AppendInt32(b, c.previousEpoch)
	b = kbin.AppendInt8(b, c.state)
	b = appendTopicPartitions(b, c.assigned)
	return coordrec.AppendTags(b)
}

func decodeCurrentAssignment(v []byte) (currentAssignment, error) {
	r, err := coordrec.Value(v, valueVersion)
	if err != nil {
		return currentAssignment{}, err
	}
	c := currentAssignment{memberEpoch: r.Int32(), previousEpoch: r.Int32(), state: r.Int8()}
	if c.assigned, err = readTopicPartitions(r); err != nil {
		return currentAssignment{}, err
	}
	return c, finish(r)
}

// topicInit is a topic of ShareGroupStatePartitionMetadataValue: its name,
// the partitions whose share state is initializing or initialized, and
// when it entered that list.
type topicInit struct {
	name       string
	partitions []int32 // sorted
	createdMs  int64
}

// stateMetadata is ShareGroupStatePartitionMetadataValue (type 15):
//
//	| int16 0 | []TopicPartitionsInfo initializing | []TopicPartitionsInfo initialized |
//	| []TopicInfo deleting | tags |
//	TopicPartitionsInfo: | uuid topicId | topicName | []int32 partitions | int64 createTimestamp | tags |
//	TopicInfo:           | uuid topicId | topicName | tags |
type stateMetadata struct {
	initializing, initialized map[[16]byte]topicInit
	deleting                  map[[16]byte]string
}

func newStateMetadata() stateMetadata {
	return stateMetadata{initializing: map[[16]byte]topicInit{}, initialized: map[[16]byte]topicInit{}, deleting: map[[16]byte]string{}}
}

func (s stateMetadata) clone() stateMetadata {
	c := newStateMetadata()
	for id, t := range s.initializing {
		t.partitions = slices.Clone(t.partitions)
		c.initializing[id] = t
	}
	for id, t := range s.initialized {
		t.partitions = slices.Clone(t.partitions)
		c.initialized[id] = t
	}
	for id, n := range s.deleting {
		c.deleting[id] = n
	}
	return c
}

func (s stateMetadata) empty() bool {
	return len(s.initializing) == 0 && len(s.initialized) == 0 && len(s.deleting) == 0
}

func (s stateMetadata) encode() []byte {
	b := kbin.AppendInt16(nil, valueVersion)
	b = appendTopicInits(b, s.initializing)
	b = appendTopicInits(b, s.initialized)
	ids := sortedIDs(s.deleting)
	b = kbin.AppendCompactArrayLen(b, len(ids))
	for _, id := range ids {
		b = kbin.AppendUuid(b, id)
		b = kbin.AppendCompactString(b, s.deleting[id])
		b = coordrec.AppendTags(b)
	}
	return coordrec.AppendTags(b)
}

func appendTopicInits(b []byte, m map[[16]byte]topicInit) []byte {
	ids := sortedIDs(m)
	b = kbin.AppendCompactArrayLen(b, len(ids))
	for _, id := range ids {
		t := m[id]
		b = kbin.AppendUuid(b, id)
		b = kbin.AppendCompactString(b, t.name)
		b = appendInt32s(b, t.partitions)
		b = kbin.AppendInt64(b, t.createdMs)
		b = coordrec.AppendTags(b)
	}
	return b
}

func decodeStateMetadata(v []byte) (stateMetadata, error) {
	r, err := coordrec.Value(v, valueVersion)
	if err != nil {
		return stateMetadata{}, err
	}
	s := newStateMetadata()
	for _, dst := range []map[[16]byte]topicInit{s.initializing, s.initialized} {
		if err := readTopicInits(r, dst); err != nil {
			return stateMetadata{}, err
		}
	}
	n, err := coordrec.ArrayLen(r, 18)
	if err != nil {
		return stateMetadata{}, err
	}
	for range n {
		id, name := r.Uuid(), r.CompactString()
		if err := coordrec.ReadTags(r, nil); err != nil {
			return stateMetadata{}, err
		}
		s.deleting[id] = name
	}
	return s, finish(r)
}

func readTopicInits(r *kbin.Reader, dst map[[16]byte]topicInit) error {
	n, err := coordrec.ArrayLen(r, 27) // uuid + name + array + int64 + tags
	if err != nil {
		return err
	}
	for range n {
		t := topicInit{}
		id := r.Uuid()
		t.name = r.CompactString()
		if t.partitions, err = readInt32s(r); err != nil {
			return err
		}
		t.createdMs = r.Int64()
		if err := coordrec.ReadTags(r, nil); err != nil {
			return err
		}
		dst[id] = t
	}
	return nil
}

func finish(r *kbin.Reader) error {
	if err := coordrec.ReadTags(r, nil); err != nil {
		return err
	}
	return coordrec.Done(r)
}

func sortedIDs[V any](m map[[16]byte]V) [][16]byte {
	ids := make([][16]byte, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(x, y [16]byte) int { return slices.Compare(x[:], y[:]) })
	return ids
}

// ---- records ----

func rec(k recordKey, value []byte) Record { return Record{Key: k.encode(), Value: value} }

func memberRecord(g, m string, v memberMetadata) Record {
	return rec(recordKey{typeMemberMetadata, g, m}, v.encode())
}
func groupRecord(g string, v groupMetadata) Record {
	return rec(recordKey{typeGroupMetadata, g, ""}, v.encode())
}
func targetMetaRecord(g string, epoch int32) Record {
	return rec(recordKey{typeTargetAssignmentMeta, g, ""}, encodeEpoch(epoch))
}
func targetRecord(g, m string, a assignment) Record {
	return rec(recordKey{typeTargetAssignmentMember, g, m}, encodeTarget(a))
}
func currentRecord(g, m string, c currentAssignment) Record {
	return rec(recordKey{typeCurrentMemberAssign, g, m}, c.encode())
}
func stateRecord(g string, s stateMetadata) Record {
	return rec(recordKey{typeStatePartitionMetadata, g, ""}, s.encode())
}
func tombstone(typ int16, g, m string) Record { return rec(recordKey{typ, g, m}, nil) }

// memberTombstones remove a member: current assignment, target, then its
// subscription (the order Kafka writes them in).
func memberTombstones(g, m string) []Record {
	return []Record{
		tombstone(typeCurrentMemberAssign, g, m),
		tombstone(typeTargetAssignmentMember, g, m),
		tombstone(typeMemberMetadata, g, m),
	}
}

// decodeValue parses a value of a share record type.
func decodeValue(typ int16, v []byte) (any, error) {
	switch typ {
	case typeMemberMetadata:
		return decodeMemberMetadata(v)
	case typeGroupMetadata:
		return decodeGroupMetadata(v)
	case typeTargetAssignmentMeta:
		return decodeEpoch(v)
	case typeTargetAssignmentMember:
		return decodeTarget(v)
	case typeCurrentMemberAssign:
		return decodeCurrentAssignment(v)
	case typeStatePartitionMetadata:
		return decodeStateMetadata(v)
	}
	return nil, fmt.Errorf("%w: type %d", errNotShare, typ)
}
