package controller

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// fsm is the replicated state machine: it applies committed entries to the
// current Image and publishes the result. It implements raft.BatchingFSM so
// that configuration entries advance AppliedIndex too.
type fsm struct {
	cur      atomic.Pointer[Image]
	onChange func() // after every publish; must not block
	log      *slog.Logger
}

var _ raft.BatchingFSM = (*fsm)(nil)

func newFSM(log *slog.Logger, onChange func()) *fsm {
	f := &fsm{onChange: onChange, log: log}
	f.cur.Store(newEmptyImage())
	return f
}

func (f *fsm) image() *Image { return f.cur.Load() }

func (f *fsm) publish(img *Image) {
	f.cur.Store(img)
	if f.onChange != nil {
		f.onChange()
	}
}

// applyCommand applies one command entry. A rejected entry leaves the image
// as it was (but for AppliedIndex) and returns the reason.
func (f *fsm) applyCommand(index uint64, data []byte) error {
	prev := f.cur.Load()
	err := f.build(prev, index, data)
	if err != nil {
		f.log.Error("metadata entry rejected", "index", index, "err", err)
		img := *prev
		img.AppliedIndex = index
		f.publish(&img)
	}
	return err
}

func (f *fsm) build(prev *Image, index uint64, data []byte) error {
	recs, err := decodeEntry(data)
	if err != nil {
		return err
	}
	b := newImageBuilder(prev)
	for _, r := range recs {
		if err := r.apply(b, index); err != nil {
			return fmt.Errorf("%s at index %d: %w", r.kind(), index, err)
		}
	}
	b.img.AppliedIndex = index
	b.finishSecurity()
	f.publish(b.img)
	return nil
}

func (f *fsm) applyLog(l *raft.Log) any {
	switch l.Type {
	case raft.LogCommand:
		if err := f.applyCommand(l.Index, l.Data); err != nil {
			return err
		}
		return nil
	case raft.LogConfiguration:
		img := *f.cur.Load()
		img.AppliedIndex = l.Index
		f.publish(&img)
	}
	return nil
}

// Apply implements raft.FSM. The result is nil or the error that rejected the entry.
func (f *fsm) Apply(l *raft.Log) any { return f.applyLog(l) }

// ApplyBatch implements raft.BatchingFSM.
func (f *fsm) ApplyBatch(logs []*raft.Log) []any {
	out := make([]any, len(logs))
	for i, l := range logs {
		out[i] = f.applyLog(l)
	}
	return out
}

// Snapshot implements raft.FSM: the image is immutable, so holding it is enough.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	return &fsmSnapshot{img: f.cur.Load()}, nil
}

// Restore implements raft.FSM.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	img, err := decodeSnapshot(rc)
	if err != nil {
		return err
	}
	f.publish(img)
	return nil
}

type fsmSnapshot struct{ img *Image }

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := encodeSnapshot(sink, s.img); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s *fsmSnapshot) Release() {}

// Snapshot format: one JSON document, {"v":1, ...} as snapshotV1 below.
// Version 2 is the same document with eligible leader replicas in some
// partition: it is written only then, so that a build that does not know
// them refuses it rather than lose them.
const (
	snapshotVersion    = 1
	snapshotVersionELR = 2
)

type snapshotV1 struct {
	V              int                          `json:"v"`
	ClusterID      string                       `json:"clusterId"`
	AppliedIndex   uint64                       `json:"appliedIndex"`
	NextProducerID int64                        `json:"nextProducerId"`
	Brokers        []snapBroker                 `json:"brokers"`
	Topics         []snapTopic                  `json:"topics"`
	BrokerConfigs  map[string]map[string]string `json:"brokerConfigs,omitempty"`
	GroupConfigs   map[string]map[string]string `json:"groupConfigs,omitempty"`
	ACLs           []accessControlEntryRecord   `json:"acls,omitempty"`
	Scram          []userScramCredentialRecord  `json:"scram,omitempty"`
	Features       map[string]int16             `json:"features,omitempty"`
	FeaturesEpoch  int64                        `json:"featuresEpoch,omitempty"`
	ClientQuotas   []clientQuotaRecord          `json:"clientQuotas,omitempty"`
}

type snapBroker struct {
	ID                   int32      `json:"id"`
	Epoch                int64      `json:"epoch"`
	IncarnationID        uuid       `json:"incarnationId"`
	Listeners            []Endpoint `json:"listeners"`
	Rack                 string     `json:"rack,omitempty"`
	Fenced               bool       `json:"fenced"`
	InControlledShutdown bool       `json:"inControlledShutdown"`
}

type snapTopic struct {
	Name       string            `json:"name"`
	ID         uuid              `json:"id"`
	Configs    map[string]string `json:"configs,omitempty"`
	Partitions []snapPartition   `json:"partitions"`
}

type snapPartition struct {
	Replicas         []int32 `json:"replicas"`
	ISR              []int32 `json:"isr"`
	Leader           int32   `json:"leader"`
	LeaderEpoch      int32   `json:"leaderEpoch"`
	PartitionEpoch   int32   `json:"partitionEpoch"`
	AddingReplicas   []int32 `json:"addingReplicas,omitempty"`
	RemovingReplicas []int32 `json:"removingReplicas,omitempty"`
	ELR              []int32 `json:"elr,omitempty"`
	LastKnownELR     []int32 `json:"lastKnownElr,omitempty"`
}

func encodeSnapshot(w io.Writer, img *Image) error {
	s := snapshotV1{
		V:              snapshotVersion,
		ClusterID:      img.ClusterID,
		AppliedIndex:   img.AppliedIndex,
		NextProducerID: img.NextProducerID,
		BrokerConfigs:  img.BrokerConfigs,
		GroupConfigs:   img.GroupConfigs,
		Features:       img.Features,
		FeaturesEpoch:  img.FeaturesEpoch,
	}
	for _, id := range slices.Sorted(maps.Keys(img.Brokers)) {
		b := img.Brokers[id]
		s.Brokers = append(s.Brokers, snapBroker{
			ID: b.ID, Epoch: b.Epoch, IncarnationID: b.IncarnationID, Listeners: b.Listeners,
			Rack: b.Rack, Fenced: b.Fenced, InControlledShutdown: b.InControlledShutdown,
		})
	}
	for _, name := range img.sortedTopicNames() {
		t := img.Topics[name]
		st := snapTopic{Name: t.Name, ID: t.ID, Configs: t.Configs}
		for _, p := range t.Partitions {
			st.Partitions = append(st.Partitions, snapPartition{
				Replicas: p.Replicas, ISR: p.ISR, Leader: p.Leader,
				LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch,
				AddingReplicas: p.AddingReplicas, RemovingReplicas: p.RemovingReplicas,
				ELR: p.ELR, LastKnownELR: p.LastKnownELR,
			})
			if len(p.ELR) > 0 || len(p.LastKnownELR) > 0 {
				s.V = snapshotVersionELR
			}
		}
		s.Topics = append(s.Topics, st)
	}
	s.ACLs, s.Scram = snapshotSecurity(img)
	s.ClientQuotas = snapshotClientQuotas(img)
	if err := json.NewEncoder(w).Encode(&s); err != nil {
		return fmt.Errorf("controller: writing snapshot: %w", err)
	}
	return nil
}

func decodeSnapshot(r io.Reader) (*Image, error) {
	var s snapshotV1
	if err := json.NewDecoder(r).Decode(&s); err != nil {
		return nil, fmt.Errorf("controller: reading snapshot: %w", err)
	}
	if s.V != snapshotVersion && s.V != snapshotVersionELR {
		return nil, fmt.Errorf("controller: snapshot version %d, this build reads %d-%d", s.V, snapshotVersion, snapshotVersionELR)
	}
	img := newEmptyImage()
	img.ClusterID = s.ClusterID
	img.AppliedIndex = s.AppliedIndex
	img.NextProducerID = s.NextProducerID
	img.Features, img.FeaturesEpoch = s.Features, s.FeaturesEpoch
	for res, m := range s.BrokerConfigs {
		img.BrokerConfigs[res] = m
	}
	for group, m := range s.GroupConfigs {
		img.GroupConfigs[group] = m
	}
	for _, b := range s.Brokers {
		img.Brokers[b.ID] = &BrokerInfo{
			ID: b.ID, Epoch: b.Epoch, IncarnationID: b.IncarnationID, Listeners: b.Listeners,
			Rack: b.Rack, Fenced: b.Fenced, InControlledShutdown: b.InControlledShutdown,
		}
	}
	for _, st := range s.Topics {
		t := &Topic{Name: st.Name, ID: st.ID, Configs: st.Configs}
		if t.Configs == nil {
			t.Configs = map[string]string{}
		}
		for i, sp := range st.Partitions {
			t.Partitions = append(t.Partitions, &Partition{
				Topic: st.Name, Index: int32(i), Replicas: sp.Replicas, ISR: sp.ISR, Leader: sp.Leader,
				LeaderEpoch: sp.LeaderEpoch, PartitionEpoch: sp.PartitionEpoch,
				AddingReplicas: sp.AddingReplicas, RemovingReplicas: sp.RemovingReplicas,
				ELR: sp.ELR, LastKnownELR: sp.LastKnownELR,
			})
		}
		img.Topics[t.Name] = t
		img.TopicsByID[t.ID] = t
	}
	if err := restoreSecurity(img, s.ACLs, s.Scram); err != nil {
		return nil, err
	}
	if err := restoreClientQuotas(img, s.ClientQuotas); err != nil {
		return nil, err
	}
	return img, nil
}
