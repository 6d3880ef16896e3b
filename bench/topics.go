package main

// Topics of a run: created fresh and led with a full ISR on every broker
// before a run, deleted and gone from every broker (and, for a target with
// data on disk, from the disk) after it. Each broker is asked itself, so a
// broker whose metadata lags cannot start or end a run early.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func adminClient(brokers []string, opts ...kgo.Opt) (*kadm.Client, *kgo.Client, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...)}, opts...)...)
	if err != nil {
		return nil, nil, err
	}
	return kadm.NewClient(cl), cl, nil
}

// ensureTopic creates the topic (ignoring TOPIC_ALREADY_EXISTS) and waits
// until every broker sees every partition led with a full ISR.
func ensureTopic(ctx context.Context, cfg loadConfig) error {
	adm, cl, err := adminClient(cfg.Brokers, cfg.ClientOpts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := adm.CreateTopic(ctx, int32(max(cfg.Partitions, 1)), int16(max(cfg.RF, 1)), cfg.TopicConfigs, cfg.Topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("creating topic %s: %w", cfg.Topic, err)
	}
	ready := func(t kmsg.MetadataResponseTopic) bool {
		return t.ErrorCode == 0 && len(t.Partitions) >= max(cfg.Partitions, 1) && allLed(t)
	}
	if err := waitEveryBroker(ctx, cl, cfg.Topic, ready, 30*time.Second); err != nil {
		return fmt.Errorf("topic %s not led with a full ISR: %w", cfg.Topic, err)
	}
	return nil
}

func allLed(t kmsg.MetadataResponseTopic) bool {
	for _, p := range t.Partitions {
		if p.ErrorCode != 0 || p.Leader < 0 || len(p.ISR) < len(p.Replicas) {
			return false
		}
	}
	return true
}

// deleteTopic deletes the topic and waits until no broker lists it and
// dataLeft (if not nil; a target's files of the topic) reports none.
func deleteTopic(ctx context.Context, brokers []string, topic string, dataLeft func(string) int) error {
	adm, cl, err := adminClient(brokers)
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := adm.DeleteTopic(ctx, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.UnknownTopicOrPartition) {
		return fmt.Errorf("deleting topic %s: %w", topic, err)
	}
	gone := func(t kmsg.MetadataResponseTopic) bool { return t.ErrorCode == kerr.UnknownTopicOrPartition.Code }
	if err := waitEveryBroker(ctx, cl, topic, gone, 60*time.Second); err != nil {
		return fmt.Errorf("topic %s not gone: %w", topic, err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for dataLeft != nil && dataLeft(topic) > 0 {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("topic %s: %d files or directories still on disk 60s after its deletion", topic, dataLeft(topic))
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// waitEveryBroker polls each broker's own Metadata for topic until ok holds
// on all of them, for at most d.
func waitEveryBroker(ctx context.Context, cl *kgo.Client, topic string, ok func(kmsg.MetadataResponseTopic) bool, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		err := everyBrokerOnce(ctx, cl, topic, ok)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("after %v: %w", d, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func everyBrokerOnce(ctx context.Context, cl *kgo.Client, topic string, ok func(kmsg.MetadataResponseTopic) bool) error {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	first, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for _, b := range first.Brokers {
		rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		resp, err := cl.Broker(int(b.NodeID)).Request(rctx, req)
		cancel()
		if err != nil {
			return fmt.Errorf("broker %d: %w", b.NodeID, err)
		}
		md := resp.(*kmsg.MetadataResponse)
		if len(md.Topics) != 1 || !ok(md.Topics[0]) {
			return fmt.Errorf("broker %d: not yet", b.NodeID)
		}
	}
	return nil
}

// topicExists says whether any broker lists the topic.
func topicExists(ctx context.Context, brokers []string, topic string) (bool, error) {
	adm, cl, err := adminClient(brokers)
	if err != nil {
		return false, err
	}
	defer cl.Close()
	ts, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return false, err
	}
	return ts.Has(topic) && ts[topic].Err == nil, nil
}

// topicRecords is the sum of the topic's partitions' end offsets.
func topicRecords(ctx context.Context, brokers []string, topic string) (int64, error) {
	ends, err := partitionEnds(ctx, brokers, topic)
	var n int64
	for _, end := range ends {
		n += end
	}
	return n, err
}

// partitionEnds is each partition's end offset (the high watermark).
func partitionEnds(ctx context.Context, brokers []string, topic string) (map[int32]int64, error) {
	adm, cl, err := adminClient(brokers)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	if err := ends.Error(); err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out, nil
}
