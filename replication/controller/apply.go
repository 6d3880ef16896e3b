package controller

import (
	"slices"
)

// This file holds each record's state transition. Every apply is pure: it
// reads and writes only the image builder, so all nodes that apply the same
// log reach the same image.

func (r *initClusterRecord) apply(b *imageBuilder, _ uint64) error {
	if b.img.ClusterID != "" && b.img.ClusterID != r.ClusterID {
		return recordErr("cluster id already %q", b.img.ClusterID)
	}
	if r.ClusterID == "" {
		return recordErr("empty cluster id")
	}
	b.img.ClusterID = r.ClusterID
	return nil
}

func (*activationRecord) apply(*imageBuilder, uint64) error { return nil }

func (*commitMarkerRecord) apply(*imageBuilder, uint64) error { return nil }

func (r *registerBrokerRecord) apply(b *imageBuilder, index uint64) error {
	b.putBroker(&BrokerInfo{
		ID:            r.ID,
		Epoch:         int64(index),
		IncarnationID: r.IncarnationID,
		Listeners:     slices.Clone(r.Listeners),
		Rack:          r.Rack,
		Fenced:        true,
	})
	return nil
}

// brokerAt returns a writable broker whose epoch matches, or an error.
func brokerAt(b *imageBuilder, id int32, epoch int64) (*BrokerInfo, error) {
	bi := b.broker(id)
	if bi == nil {
		return nil, recordErr("broker %d is not registered", id)
	}
	if bi.Epoch != epoch {
		return nil, recordErr("broker %d has epoch %d, not %d", id, bi.Epoch, epoch)
	}
	return bi, nil
}

func (r *fenceBrokerRecord) apply(b *imageBuilder, _ uint64) error {
	bi, err := brokerAt(b, r.ID, r.Epoch)
	if err != nil {
		return err
	}
	bi.Fenced = true
	return nil
}

func (r *unfenceBrokerRecord) apply(b *imageBuilder, _ uint64) error {
	bi, err := brokerAt(b, r.ID, r.Epoch)
	if err != nil {
		return err
	}
	bi.Fenced = false
	bi.InControlledShutdown = false
	return nil
}

func (r *controlledShutdownRecord) apply(b *imageBuilder, _ uint64) error {
	bi, err := brokerAt(b, r.ID, r.Epoch)
	if err != nil {
		return err
	}
	bi.InControlledShutdown = true
	return nil
}

func (r *unregisterBrokerRecord) apply(b *imageBuilder, _ uint64) error {
	if _, err := brokerAt(b, r.ID, r.Epoch); err != nil {
		return err
	}
	b.deleteBroker(r.ID)
	return nil
}

func newPartitions(topic string, first int32, recs []partitionRecord) ([]*Partition, error) {
	out := make([]*Partition, len(recs))
	for i, pr := range recs {
		if len(pr.Replicas) == 0 {
			return nil, recordErr("%s-%d has no replicas", topic, first+int32(i))
		}
		out[i] = &Partition{
			Topic:    topic,
			Index:    first + int32(i),
			Replicas: slices.Clone(pr.Replicas),
			ISR:      slices.Clone(pr.ISR),
			Leader:   pr.Leader,
		}
	}
	return out, nil
}

func (r *createTopicRecord) apply(b *imageBuilder, _ uint64) error {
	if b.img.Topics[r.Name] != nil {
		return recordErr("topic %q exists", r.Name)
	}
	if b.img.TopicsByID[r.ID] != nil || r.ID == (uuid{}) {
		return recordErr("topic id %s is zero or taken", r.ID)
	}
	parts, err := newPartitions(r.Name, 0, r.Partitions)
	if err != nil {
		return err
	}
	configs := map[string]string{}
	for k, v := range r.Configs {
		configs[k] = v
	}
	b.putTopic(&Topic{Name: r.Name, ID: r.ID, Configs: configs, Partitions: parts})
	return nil
}

// topicAt returns a writable topic whose name and id match, or an error.
func topicAt(b *imageBuilder, name string, id uuid) (*Topic, error) {
	t := b.img.Topics[name]
	if t == nil || t.ID != id {
		return nil, recordErr("no topic %q with id %s", name, id)
	}
	return b.topic(name), nil
}

func (r *deleteTopicRecord) apply(b *imageBuilder, _ uint64) error {
	t, err := topicAt(b, r.Name, r.ID)
	if err != nil {
		return err
	}
	b.deleteTopic(t)
	return nil
}

func (r *createPartitionsRecord) apply(b *imageBuilder, _ uint64) error {
	t, err := topicAt(b, r.Topic, r.TopicID)
	if err != nil {
		return err
	}
	parts, err := newPartitions(t.Name, int32(len(t.Partitions)), r.Partitions)
	if err != nil {
		return err
	}
	t.Partitions = append(t.Partitions, parts...)
	return nil
}

func (r *partitionChangeRecord) apply(b *imageBuilder, _ uint64) error {
	t, err := topicAt(b, r.Topic, r.TopicID)
	if err != nil {
		return err
	}
	if r.Partition < 0 || int(r.Partition) >= len(t.Partitions) {
		return recordErr("no partition %s-%d", r.Topic, r.Partition)
	}
	p := t.Partitions[r.Partition]
	if r.Replicas != nil && len(r.Replicas) == 0 {
		return recordErr("%s-%d would have no replicas", r.Topic, r.Partition)
	}
	if r.Leader != p.Leader || r.BumpLeaderEpoch {
		p.LeaderEpoch++
	}
	p.PartitionEpoch++
	p.Leader = r.Leader
	p.ISR = slices.Clone(r.ISR)
	if r.Replicas != nil {
		p.Replicas = slices.Clone(r.Replicas)
		p.AddingReplicas = nonEmpty(r.Adding)
		p.RemovingReplicas = nonEmpty(r.Removing)
	}
	if r.ELR != nil {
		p.ELR = nonEmpty(*r.ELR)
	}
	if r.LastKnownELR != nil {
		p.LastKnownELR = nonEmpty(*r.LastKnownELR)
	}
	return nil
}

// nonEmpty returns a copy of s, nil when s is empty.
func nonEmpty(s []int32) []int32 {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}

func (r *setConfigRecord) apply(b *imageBuilder, _ uint64) error {
	switch r.ResourceType {
	case resourceTopic:
		t := b.topic(r.Resource)
		if t == nil {
			return recordErr("no topic %q", r.Resource)
		}
		if t.Configs == nil {
			t.Configs = map[string]string{}
		}
		setOrDelete(t.Configs, r.Key, r.Value)
	case resourceBroker:
		setOrDelete(b.brokerConfig(r.Resource), r.Key, r.Value)
		b.dropEmptyBrokerConfig(r.Resource)
	case resourceGroup:
		setOrDelete(b.groupConfig(r.Resource), r.Key, r.Value)
		b.dropEmptyGroupConfig(r.Resource)
	default:
		return recordErr("config resource type %d", r.ResourceType)
	}
	return nil
}

func setOrDelete(m map[string]string, key string, value *string) {
	if value == nil {
		delete(m, key)
	} else {
		m[key] = *value
	}
}

func (r *producerIDsRecord) apply(b *imageBuilder, _ uint64) error {
	if _, err := brokerAt(b, r.BrokerID, r.BrokerEpoch); err != nil {
		return err
	}
	if r.NextProducerID <= b.img.NextProducerID {
		return recordErr("next producer id %d does not advance %d", r.NextProducerID, b.img.NextProducerID)
	}
	b.img.NextProducerID = r.NextProducerID
	return nil
}
