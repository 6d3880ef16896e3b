package controller

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
)

// Raft log entry format
//
// Every Raft command entry holds one JSON record:
//
//	{"type":"PartitionChange","v":1,"topic":"t","topicId":"AAAA...","partition":0,"leader":2,"isr":[2,3]}
//
// "type" names the record (Kafka's KRaft record names where one exists), "v"
// is its version: a node refuses a record version newer than it knows rather
// than misreading it. A record's version is 1 unless it implements
// versionedRecord; maxRecordVersion lists the kinds that have newer ones.
// Several records applied atomically share one entry as
//
//	{"type":"Batch","v":1,"records":[{...},{...}]}
//
// Applying an entry is all or nothing: if one record of a batch does not
// apply (it names a missing topic, a stale broker epoch, ...) the image is
// left unchanged and the error is the entry's apply result.
const recordVersion = 1

// maxRecordVersion is the newest version this build reads of each record
// kind that has more than version 1.
var maxRecordVersion = map[string]int{
	"PartitionChange": 3, // 2: reassignment fields, leader epoch bump; 3: eligible leader replicas
}

func maxVersionOf(kind string) int {
	if v, ok := maxRecordVersion[kind]; ok {
		return v
	}
	return recordVersion
}

// record is one metadata change. apply mutates the builder; index is the Raft
// index of the entry that holds the record.
type record interface {
	kind() string
	apply(b *imageBuilder, index uint64) error
}

// versionedRecord is a record whose version depends on its content: it uses
// a newer version only when it needs fields older nodes do not know.
type versionedRecord interface {
	version() int
}

func versionOf(r record) int {
	if v, ok := r.(versionedRecord); ok {
		return v.version()
	}
	return recordVersion
}

var errRecord = errors.New("controller: record does not apply")

func recordErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errRecord, fmt.Sprintf(format, args...))
}

// uuid is a [16]byte that encodes like Kafka prints UUIDs: URL-safe base64
// without padding.
type uuid [16]byte

func (u uuid) MarshalText() ([]byte, error) {
	return []byte(base64.RawURLEncoding.EncodeToString(u[:])), nil
}

func (u *uuid) UnmarshalText(b []byte) error {
	n, err := base64.RawURLEncoding.Decode(u[:], b)
	if err != nil || n != 16 {
		return fmt.Errorf("controller: bad uuid %q", b)
	}
	return nil
}

func (u uuid) String() string { s, _ := u.MarshalText(); return string(s) }

// commitMarkerRecord changes nothing: the active controller appends one
// after committing a change clients act on at once, so that the followers
// learn the commit now (raftProposer.publish).
type commitMarkerRecord struct{}

// initClusterRecord sets the cluster id once, when the first controller activates.
type initClusterRecord struct {
	ClusterID string `json:"clusterId"`
}

// activationRecord is written by each newly active controller so that its first
// committed entry is a command (WaitReady compares applied indexes).
type activationRecord struct {
	NodeID int32 `json:"nodeId"`
}

// registerBrokerRecord registers a broker or a new incarnation of one; the broker
// starts fenced and its epoch is the entry's index.
type registerBrokerRecord struct {
	ID            int32      `json:"id"`
	IncarnationID uuid       `json:"incarnationId"`
	Listeners     []Endpoint `json:"listeners"`
	Rack          string     `json:"rack,omitempty"`
}

// fenceBrokerRecord fences a broker (session expired, asked to, or shut down).
type fenceBrokerRecord struct {
	ID    int32 `json:"id"`
	Epoch int64 `json:"epoch"`
}

// unfenceBrokerRecord unfences a broker that caught up with its registration.
type unfenceBrokerRecord struct {
	ID    int32 `json:"id"`
	Epoch int64 `json:"epoch"`
}

// controlledShutdownRecord marks a broker as shutting down.
type controlledShutdownRecord struct {
	ID    int32 `json:"id"`
	Epoch int64 `json:"epoch"`
}

// unregisterBrokerRecord removes a broker registration.
type unregisterBrokerRecord struct {
	ID    int32 `json:"id"`
	Epoch int64 `json:"epoch"`
}

// partitionRecord is the initial state of a new partition (epochs start at 0).
type partitionRecord struct {
	Replicas []int32 `json:"replicas"`
	ISR      []int32 `json:"isr"`
	Leader   int32   `json:"leader"`
}

// createTopicRecord creates a topic with its partitions 0..n-1.
type createTopicRecord struct {
	Name       string            `json:"name"`
	ID         uuid              `json:"id"`
	Configs    map[string]string `json:"configs,omitempty"`
	Partitions []partitionRecord `json:"partitions"`
}

// deleteTopicRecord removes a topic.
type deleteTopicRecord struct {
	Name string `json:"name"`
	ID   uuid   `json:"id"`
}

// createPartitionsRecord appends partitions to a topic.
type createPartitionsRecord struct {
	Topic      string            `json:"topic"`
	TopicID    uuid              `json:"topicId"`
	Partitions []partitionRecord `json:"partitions"`
}

// partitionChangeRecord sets a partition's leader and ISR and, when Replicas
// is non-nil, its replica assignment: Replicas, Adding and Removing together
// (empty Adding and Removing: no reassignment in progress). The partition
// epoch is bumped by one; the leader epoch too when the leader changes or
// BumpLeaderEpoch is set (replicas were removed: Kafka's
// triggerLeaderEpochBumpForReplicaReassignmentIfNeeded fences their fetches).
//
// ELR and LastKnownELR, when not nil, set the partition's eligible leader
// replicas and last known leader (KIP-966; an empty list clears them); nil
// leaves them as they are, like Kafka's null fields.
//
// Version 2 (Replicas non-nil or BumpLeaderEpoch): a version 1 node would
// lose the reassignment fields, so it refuses the record instead. Version 3
// (ELR or LastKnownELR set): the same for the eligible leader replicas.
type partitionChangeRecord struct {
	Topic           string   `json:"topic"`
	TopicID         uuid     `json:"topicId"`
	Partition       int32    `json:"partition"`
	Leader          int32    `json:"leader"`
	ISR             []int32  `json:"isr"`
	Replicas        []int32  `json:"replicas,omitempty"`
	Adding          []int32  `json:"adding,omitempty"`
	Removing        []int32  `json:"removing,omitempty"`
	BumpLeaderEpoch bool     `json:"bumpLeaderEpoch,omitempty"`
	ELR             *[]int32 `json:"elr,omitempty"`
	LastKnownELR    *[]int32 `json:"lastKnownElr,omitempty"`
}

func (r *partitionChangeRecord) version() int {
	switch {
	case r.ELR != nil || r.LastKnownELR != nil:
		return 3
	case r.Replicas != nil || r.BumpLeaderEpoch:
		return 2
	}
	return 1
}

// Config resource types (Kafka's ConfigResource.Type).
const (
	resourceTopic  int8 = 2
	resourceBroker int8 = 4
	resourceGroup  int8 = 32 // KIP-848/KIP-932 group configs
)

// setConfigRecord sets (Value non-nil) or deletes one config of a topic, a broker
// ("1") or the cluster default (broker resource "").
type setConfigRecord struct {
	ResourceType int8    `json:"resourceType"`
	Resource     string  `json:"resource"`
	Key          string  `json:"key"`
	Value        *string `json:"value"`
}

// producerIDsRecord hands a block of producer ids to a broker.
type producerIDsRecord struct {
	BrokerID       int32 `json:"brokerId"`
	BrokerEpoch    int64 `json:"brokerEpoch"`
	NextProducerID int64 `json:"nextProducerId"` // first id after the block
}

func (*initClusterRecord) kind() string        { return "InitCluster" }
func (*commitMarkerRecord) kind() string       { return "CommitMarker" }
func (*activationRecord) kind() string         { return "Activation" }
func (*registerBrokerRecord) kind() string     { return "RegisterBroker" }
func (*fenceBrokerRecord) kind() string        { return "FenceBroker" }
func (*unfenceBrokerRecord) kind() string      { return "UnfenceBroker" }
func (*controlledShutdownRecord) kind() string { return "BrokerControlledShutdown" }
func (*unregisterBrokerRecord) kind() string   { return "UnregisterBroker" }
func (*createTopicRecord) kind() string        { return "CreateTopic" }
func (*deleteTopicRecord) kind() string        { return "DeleteTopic" }
func (*createPartitionsRecord) kind() string   { return "CreatePartitions" }
func (*partitionChangeRecord) kind() string    { return "PartitionChange" }
func (*setConfigRecord) kind() string          { return "SetConfig" }
func (*producerIDsRecord) kind() string        { return "AllocateProducerIDs" }

var recordKinds = map[string]func() record{
	"InitCluster":               func() record { return new(initClusterRecord) },
	"FeatureLevel":              func() record { return new(featureLevelRecord) },
	"CommitMarker":              func() record { return new(commitMarkerRecord) },
	"Activation":                func() record { return new(activationRecord) },
	"RegisterBroker":            func() record { return new(registerBrokerRecord) },
	"FenceBroker":               func() record { return new(fenceBrokerRecord) },
	"UnfenceBroker":             func() record { return new(unfenceBrokerRecord) },
	"BrokerControlledShutdown":  func() record { return new(controlledShutdownRecord) },
	"UnregisterBroker":          func() record { return new(unregisterBrokerRecord) },
	"CreateTopic":               func() record { return new(createTopicRecord) },
	"DeleteTopic":               func() record { return new(deleteTopicRecord) },
	"CreatePartitions":          func() record { return new(createPartitionsRecord) },
	"PartitionChange":           func() record { return new(partitionChangeRecord) },
	"SetConfig":                 func() record { return new(setConfigRecord) },
	"AllocateProducerIDs":       func() record { return new(producerIDsRecord) },
	"AccessControlEntry":        func() record { return new(accessControlEntryRecord) },
	"RemoveAccessControlEntry":  func() record { return new(removeAccessControlEntryRecord) },
	"UserScramCredential":       func() record { return new(userScramCredentialRecord) },
	"RemoveUserScramCredential": func() record { return new(removeUserScramCredentialRecord) },
	"ClientQuota":               func() record { return new(clientQuotaRecord) },
}

const batchKind = "Batch"

type envelope struct {
	Type    string            `json:"type"`
	V       int               `json:"v"`
	Records []json.RawMessage `json:"records,omitempty"`
}

// encodeRecord encodes one record with its type and version first.
func encodeRecord(r record) ([]byte, error) {
	body, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, `{"type":%q,"v":%d`, r.kind(), versionOf(r))
	if len(body) > 2 { // not "{}"
		buf.WriteByte(',')
		buf.Write(body[1:])
	} else {
		buf.WriteByte('}')
	}
	return buf.Bytes(), nil
}

// encodeEntry encodes records as one Raft entry.
func encodeEntry(recs ...record) ([]byte, error) {
	if len(recs) == 1 {
		return encodeRecord(recs[0])
	}
	env := envelope{Type: batchKind, V: recordVersion, Records: make([]json.RawMessage, len(recs))}
	for i, r := range recs {
		b, err := encodeRecord(r)
		if err != nil {
			return nil, err
		}
		env.Records[i] = b
	}
	return json.Marshal(env)
}

// decodeEntry decodes a Raft entry into its records.
func decodeEntry(data []byte) ([]record, error) {
	var env envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return nil, fmt.Errorf("controller: decoding entry: %w", err)
	}
	if max := maxVersionOf(env.Type); env.V > max {
		return nil, fmt.Errorf("controller: %s record version %d is newer than this build (%d)", env.Type, env.V, max)
	}
	if env.Type != batchKind {
		r, err := decodeRecord(env.Type, data)
		if err != nil {
			return nil, err
		}
		return []record{r}, nil
	}
	out := make([]record, 0, len(env.Records))
	for _, raw := range env.Records {
		var inner envelope
		if err := json.Unmarshal(raw, &inner); err != nil {
			return nil, fmt.Errorf("controller: decoding batched record: %w", err)
		}
		if inner.V > maxVersionOf(inner.Type) || inner.Type == batchKind {
			return nil, fmt.Errorf("controller: unsupported batched record %s v%d", inner.Type, inner.V)
		}
		r, err := decodeRecord(inner.Type, raw)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func decodeRecord(kind string, data []byte) (record, error) {
	mk := recordKinds[kind]
	if mk == nil {
		return nil, fmt.Errorf("controller: unknown record type %q", kind)
	}
	r := mk()
	if err := json.Unmarshal(data, r); err != nil {
		return nil, fmt.Errorf("controller: decoding %s: %w", kind, err)
	}
	return r, nil
}
