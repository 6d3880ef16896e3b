package broker

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/replication/controller"
)

// leaderTransition: this broker started (part set, at leader epoch
// epoch) or stopped leading a partition of an internal topic whose
// coordinator follows its leaders (__consumer_offsets,
// __share_group_state, __transaction_state).
type leaderTransition struct {
	partition, epoch int32
	leader           bool
	part             *replication.Partition
}

// leadershipChanges lists what changed in img for the partitions of topic
// this broker leads, against led (each partition led, at the leader epoch
// last reported), and updates led. A partition led at a new epoch is
// reported again; one whose replica is not held yet is left for a later
// image.
func (b *Broker) leadershipChanges(img *controller.Image, topic string, led map[int32]int32) []leaderTransition {
	var out []leaderTransition
	seen := map[int32]bool{}
	if t, ok := img.Topics[topic]; ok {
		for _, p := range t.Partitions {
			if p.Leader != b.cfg.NodeID {
				continue
			}
			seen[p.Index] = true
			if epoch, ok := led[p.Index]; ok && epoch == p.LeaderEpoch {
				continue
			}
			part, held := b.replicas.Partition(topic, p.Index)
			if !held {
				continue
			}
			led[p.Index] = p.LeaderEpoch
			out = append(out, leaderTransition{partition: p.Index, epoch: p.LeaderEpoch, leader: true, part: part})
		}
	}
	for idx := range led {
		if !seen[idx] {
			delete(led, idx)
			out = append(out, leaderTransition{partition: idx})
		}
	}
	return out
}

// internalTopic is how the broker creates one of the internal topics it
// manages (__consumer_offsets, __share_group_state): on first use, with
// its configured partitions and replication factor.
type internalTopic struct {
	name       string
	partitions int32
	rf         int16 // configured; lowered to the registered brokers
	// minISR, if > 0, is its min.insync.replicas, lowered with rf.
	minISR  int32
	configs map[string]string
}

// createInternalTopic creates t as Kafka does on first use. The
// replication factor is lowered (with a warning) only when the whole
// cluster has fewer brokers than it, so that a single node works without
// set-up; a cluster with enough brokers but some down waits for them, as
// Kafka does. An existing topic is not an error.
func (b *Broker) createInternalTopic(ctx context.Context, log *slog.Logger, t internalTopic) error {
	img := b.view().img
	rf := t.rf
	if registered := int16(len(img.Brokers)); registered < rf {
		log.Warn("the replication factor is larger than the cluster; creating the topic with fewer replicas",
			"topic", t.name, "configured", rf, "brokers", registered)
		rf = max(registered, 1)
	}
	live := 0
	for _, br := range img.Brokers {
		if !br.Fenced {
			live++
		}
	}
	if live < int(rf) {
		return fmt.Errorf("%s: %d live brokers, its replication factor needs %d", t.name, live, rf)
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = t.name, t.partitions, rf
	configs := maps.Clone(t.configs)
	if t.minISR > 0 {
		if configs == nil {
			configs = map[string]string{}
		}
		configs["min.insync.replicas"] = strconv.Itoa(int(min(t.minISR, int32(rf))))
	}
	for _, k := range slices.Sorted(maps.Keys(configs)) {
		rt.Configs = append(rt.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: k, Value: kmsg.StringPtr(configs[k])})
	}
	req.Topics = append(req.Topics, rt)
	resp, err := b.ctrl.Forward(ctx, req)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode); err != nil && err != kerr.TopicAlreadyExists {
		return err
	}
	log.Info("created an internal topic", "topic", t.name, "partitions", t.partitions, "replication_factor", rf)
	return nil
}
