package group

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	tidA = [16]byte{1, 2, 3}
	tidB = [16]byte{9, 9, 9}
)

// sampleRecords has one record of every type kbroker writes.
func sampleRecords() []Record {
	meta := kmsg.NewGroupMetadataValue()
	meta.ProtocolType, meta.Generation = "consumer", 7
	meta.Protocol, meta.Leader = kmsg.StringPtr("range"), kmsg.StringPtr("m-1")
	meta.CurrentStateTimestamp = 1700000000000
	mm := kmsg.NewGroupMetadataValueMember()
	mm.MemberID, mm.InstanceID, mm.ClientID, mm.ClientHost = "m-1", kmsg.StringPtr("i-1"), "c", "/1.2.3.4"
	mm.RebalanceTimeoutMillis, mm.SessionTimeoutMillis = 30000, 10000
	mm.Subscription, mm.Assignment = []byte("sub"), []byte("asg")
	meta.Members = []kmsg.GroupMetadataValueMember{mm}
	return []Record{
		offsetRecord("g", "t", 3, offsetValue{offset: 42, leaderEpoch: 5, metadata: "md", commitTs: 1000, expireTs: -1}),
		offsetRecord("g", "t", 4, offsetValue{offset: 43, leaderEpoch: -1, metadata: "", commitTs: 1000, expireTs: 9000}),
		offsetTombstone("g", "t", 5),
		groupMetadataRecord("g", &meta),
		groupMetadataTombstone("g2"),
		consumerGroupMetadataRecord("cg", consumerGroupMetadata{epoch: 3, metadataHash: -12345}),
		memberSubscriptionRecord("cg", "m", &memberSubscription{
			instanceID: kmsg.StringPtr("inst"), clientID: "c", clientHost: "/h",
			topicNames: []string{"a", "b"}, topicRegex: kmsg.StringPtr("x.*"), rebalanceTimeoutMs: 5000,
			serverAssignor: kmsg.StringPtr("range"),
		}),
		targetMetaRecord("cg", 3),
		targetMemberRecord("cg", "m", assignment{tidA: {0, 2}, tidB: {1}}),
		memberAssignmentRecord("cg", "m", &memberAssignment{
			memberEpoch: 3, previousMemberEpoch: 2, state: memberUnrevokedPartitions,
			assigned: assignment{tidA: {0}}, pendingRevocation: assignment{tidB: {1, 4}},
		}),
		memberTombstone(typeConsumerGroupMemberMetadata, "cg", "gone"),
	}
}

func TestRecordsRoundTrip(t *testing.T) {
	for i, r := range sampleRecords() {
		k, v, err := decodeRecord(r.Key, r.Value)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if (v == nil) != (r.Value == nil) {
			t.Fatalf("record %d: tombstone mismatch", i)
		}
		if v == nil {
			continue
		}
		re := reencode(k, v)
		if !bytes.Equal(re.Key, r.Key) || !bytes.Equal(re.Value, r.Value) {
			t.Fatalf("record %d (type %d) does not round trip:\n%x\n%x", i, k.typ, r.Value, re.Value)
		}
	}
}

// reencode writes a decoded record back with kbroker's encoders.
func reencode(k recordKey, v any) Record {
	switch v := v.(type) {
	case *offsetValue:
		return offsetRecord(k.group, k.topic, k.partition, *v)
	case *kmsg.GroupMetadataValue:
		return groupMetadataRecord(k.group, v)
	case *consumerGroupMetadata:
		return consumerGroupMetadataRecord(k.group, *v)
	case *memberSubscription:
		return memberSubscriptionRecord(k.group, k.member, v)
	case targetEpoch:
		return targetMetaRecord(k.group, int32(v))
	case assignment:
		return targetMemberRecord(k.group, k.member, v)
	case *memberAssignment:
		return memberAssignmentRecord(k.group, k.member, v)
	}
	return Record{}
}

// TestRecordLayouts pins the bytes of Kafka's formats.
func TestRecordLayouts(t *testing.T) {
	r := consumerGroupMetadataRecord("g", consumerGroupMetadata{epoch: 5})
	wantKey := []byte{0, 3, 0, 1, 'g'}
	wantValue := []byte{0, 0, 0, 0, 0, 5, 0} // version 0, epoch 5, no tags
	if !bytes.Equal(r.Key, wantKey) || !bytes.Equal(r.Value, wantValue) {
		t.Fatalf("ConsumerGroupMetadata: %x %x", r.Key, r.Value)
	}
	o := offsetRecord("g", "t", 1, offsetValue{offset: 2, leaderEpoch: -1, commitTs: 3, expireTs: -1})
	if !bytes.Equal(o.Key, []byte{0, 1, 0, 1, 'g', 0, 1, 't', 0, 0, 0, 1}) || o.Value[1] != 3 {
		t.Fatalf("OffsetCommit: %x %x", o.Key, o.Value)
	}
	m := memberTombstone(typeConsumerGroupCurrentMember, "g", "m")
	if !bytes.Equal(m.Key, []byte{0, 8, 0, 1, 'g', 0, 1, 'm'}) || m.Value != nil {
		t.Fatalf("member key: %x", m.Key)
	}
	// A GroupMetadata value of Kafka 2.x (v2, no instance ids) still loads.
	meta := kmsg.NewGroupMetadataValue()
	meta.Version, meta.ProtocolType, meta.Generation = 2, "consumer", 1
	if _, v, err := decodeRecord(appendGroupKey(typeGroupMetadata, "g"), meta.AppendTo(nil)); err != nil || v.(*kmsg.GroupMetadataValue).Generation != 1 {
		t.Fatalf("v2 group metadata: %v", err)
	}
	// Unknown tagged fields are skipped.
	withTag := []byte{0, 0, 0, 0, 0, 9, 1, 7, 2, 0xAA, 0xBB}
	if _, v, err := decodeRecord(wantKey, withTag); err != nil || v.(*consumerGroupMetadata).epoch != 9 {
		t.Fatalf("tagged value: %v %v", v, err)
	}
	// Share group records (type 10) are not ours.
	if _, _, err := decodeRecord([]byte{0, 10, 0, 1, 'g'}, []byte{0}); err == nil {
		t.Fatal("unknown type decoded")
	}
}

func TestPartitionFor(t *testing.T) {
	// Values of Java's Utils.abs(s.hashCode()) % 50 (UTF-16 code units: the
	// emoji is a surrogate pair).
	cases := map[string]int32{"": 0, "a": 47, "my-group": 12, "test-group-1": 36, "日本": 47, "😀grp": 36}
	for g, want := range cases {
		if got := PartitionFor(g, 50); got != want {
			t.Errorf("PartitionFor(%q) = %d, want %d", g, got, want)
		}
	}
	// Integer.MIN_VALUE hash maps to 0 (Utils.abs).
	if h := javaHash("polygenelubricants"); h != -1<<31 || PartitionFor("polygenelubricants", 50) != 0 {
		t.Errorf("MIN_VALUE hash: %d", h)
	}
}

func javaHash(s string) int32 {
	var h int32
	for _, r := range s {
		h = 31*h + int32(r)
	}
	return h
}

// TestReplayLastValueWins: tombstones delete, the last value wins, and the
// assembled groups do not depend on the order across keys.
func TestReplayLastValueWins(t *testing.T) {
	c := NewCoordinator(Options{NumPartitions: 1})
	defer c.Close()
	recs := []Record{
		offsetRecord("g", "t", 0, offsetValue{offset: 1, leaderEpoch: -1, expireTs: -1}),
		offsetRecord("g", "t", 0, offsetValue{offset: 2, leaderEpoch: -1, expireTs: -1}),
		offsetRecord("g", "t", 1, offsetValue{offset: 5, leaderEpoch: -1, expireTs: -1}),
		offsetTombstone("g", "t", 1),
		{Key: []byte{0, 10, 0, 1, 'x'}, Value: []byte{1}}, // share group record: skipped
		{Key: []byte{0, 1, 0}, Value: []byte{1}},          // corrupt: skipped
	}
	groups, err := c.replay(0, seqOf(recs))
	if err != nil || len(groups) != 1 {
		t.Fatalf("replay: %v %d", err, len(groups))
	}
	g := groups[0]
	if len(g.offsets["t"]) != 1 || g.offsets["t"][0].offset != 2 || g.classic == nil || g.classic.protocolType != "" {
		t.Fatalf("group: %+v %+v", g.offsets, g.classic)
	}
}

func TestAssignmentHelpers(t *testing.T) {
	a := assignment{}
	a.add(tidA, 3, 1, 3)
	a.add(tidB)
	if !reflect.DeepEqual(a, assignment{tidA: {1, 3}}) || !a.has(tidA, 3) || a.has(tidA, 2) || a.count() != 2 {
		t.Fatalf("assignment: %v", a)
	}
	if !a.equal(a.clone()) || a.equal(assignment{tidA: {1}}) {
		t.Fatal("equal")
	}
}
