package share

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"testing"

	"github.com/kbroker/kbroker/internal/coordrec"
)

func sampleRecords() []Record {
	rack := "r1"
	s := newStateMetadata()
	s.initializing[idFoo] = topicInit{name: "foo", partitions: []int32{1, 2}, createdMs: 7}
	s.initialized[idBar] = topicInit{name: "bar", partitions: []int32{0}, createdMs: 8}
	s.deleting[[16]byte{9}] = "gone"
	return []Record{
		memberRecord("g", "m", memberMetadata{rackID: &rack, clientID: "c", clientHost: "/h", topics: []string{"bar", "foo"}}),
		groupRecord("g", groupMetadata{epoch: 3, metadataHash: -5}),
		targetMetaRecord("g", 3),
		targetRecord("g", "m", assignment{idFoo: {0, 2}, idBar: {1}}),
		currentRecord("g", "m", currentAssignment{memberEpoch: 3, previousEpoch: 2, assigned: assignment{idFoo: {0}}}),
		stateRecord("g", s),
		tombstone(typeMemberMetadata, "g", "m"),
	}
}

// Bytes as Kafka's generated records write them.
func TestRecordBytes(t *testing.T) {
	got := hex.EncodeToString(groupRecord("g", groupMetadata{epoch: 3, metadataHash: 1}).Key)
	if got != "000b000167" {
		t.Fatalf("group key %s", got)
	}
	got = hex.EncodeToString(memberRecord("g", "m", memberMetadata{}).Key)
	if got != "000a0001670001"+"6d" {
		t.Fatalf("member key %s", got)
	}
	v := groupMetadata{epoch: 3, metadataHash: 1}.encode()
	if got := hex.EncodeToString(v); got != "0000"+"00000003"+"0000000000000001"+"00" {
		t.Fatalf("ShareGroupMetadataValue %s", got)
	}
	c := currentAssignment{memberEpoch: 3, previousEpoch: 2, assigned: assignment{{0xaa}: {5}}}.encode()
	want := "0000" + "00000003" + "00000002" + "00" + "02" + "aa000000000000000000000000000000" + "02" + "00000005" + "00" + "00"
	if got := hex.EncodeToString(c); got != want {
		t.Fatalf("ShareGroupCurrentMemberAssignmentValue %s\nwant %s", got, want)
	}
}

func TestRecordRoundTrip(t *testing.T) {
	for i, r := range sampleRecords() {
		k, err := decodeKey(r.Key)
		if err != nil {
			t.Fatalf("record %d key: %v", i, err)
		}
		if !bytes.Equal(k.encode(), r.Key) {
			t.Fatalf("record %d key does not round-trip", i)
		}
		if r.Value == nil {
			continue
		}
		v, err := decodeValue(k.typ, r.Value)
		if err != nil {
			t.Fatalf("record %d value: %v", i, err)
		}
		if again := reencode(k, v); !bytes.Equal(again.Value, r.Value) {
			t.Fatalf("record %d value does not round-trip:\n%x\n%x", i, r.Value, again.Value)
		}
	}
}

func reencode(k recordKey, v any) Record {
	switch v := v.(type) {
	case memberMetadata:
		return memberRecord(k.group, k.member, v)
	case groupMetadata:
		return groupRecord(k.group, v)
	case int32:
		return targetMetaRecord(k.group, v)
	case assignment:
		return targetRecord(k.group, k.member, v)
	case currentAssignment:
		return currentRecord(k.group, k.member, v)
	case stateMetadata:
		return stateRecord(k.group, v)
	}
	panic("unknown value")
}

func TestDecodeRejects(t *testing.T) {
	if _, err := decodeKey([]byte{0, 3, 0, 1, 'g'}); !errors.Is(err, errNotShare) {
		t.Fatalf("consumer group key: %v", err)
	}
	if _, err := decodeKey([]byte{0, 9, 0, 1, 'g'}); !errors.Is(err, errNotShare) {
		t.Fatalf("type 9: %v", err)
	}
	if _, err := decodeKey([]byte{0, 11, 0, 5, 'g'}); !errors.Is(err, coordrec.ErrCorrupt) {
		t.Fatalf("short key: %v", err)
	}
	good := sampleRecords()[5]
	if _, err := decodeValue(typeStatePartitionMetadata, good.Value[:len(good.Value)-2]); err == nil {
		t.Fatal("truncated value decoded")
	}
	if _, err := decodeValue(typeGroupMetadata, []byte{0, 1, 0, 0, 0, 3}); err == nil {
		t.Fatal("value version 1 decoded")
	}
}

// Loading keeps the last value per key, so the groups after compaction are
// the groups before it.
func TestReplayLastValueWins(t *testing.T) {
	recs := sampleRecords()
	c := NewCoordinator(Options{})
	last := map[recordKey]any{}
	for _, r := range recs[:6] {
		k, _ := decodeKey(r.Key)
		last[k], _ = decodeValue(k.typ, r.Value)
	}
	g := assemble(c, last)["g"]
	if g.epoch != 3 || g.assignmentEpoch != 3 || len(g.members) != 1 || g.members["m"].cur.memberEpoch != 3 ||
		!reflect.DeepEqual(g.target["m"], assignment{idFoo: {0, 2}, idBar: {1}}) || len(g.state.deleting) != 1 {
		t.Fatalf("assembled %+v", g)
	}
}
