package compat

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestCreateTopicsValidateOnlyAndConfigs(t *testing.T) {
	tg := singleNode(t)
	adm := newAdmin(t, tg.seeds)
	ctx := ctxTimeout(t, 30*time.Second)

	name := uniqueTopic("validate")
	vr, err := adm.ValidateCreateTopics(ctx, 4, 1, map[string]*string{"retention.ms": kadm.StringPtr("60000")}, name)
	must(t, err, "ValidateCreateTopics")
	if r := vr[name]; r.Err != nil || r.NumPartitions != 4 {
		t.Fatalf("validate-only: %+v", r)
	}
	topics, err := adm.ListTopics(ctx, name)
	must(t, err, "ListTopics")
	if topics.Has(name) {
		t.Fatal("validate-only created the topic")
	}

	bad, err := adm.CreateTopics(ctx, 1, 1, map[string]*string{"retention.ms": kadm.StringPtr("soon")}, uniqueTopic("bad"))
	must(t, err, "CreateTopics")
	for _, r := range bad {
		if !errors.Is(r.Err, kerr.InvalidConfig) {
			t.Fatalf("invalid retention.ms: got %v, want INVALID_CONFIG", r.Err)
		}
	}
	unknown, err := adm.CreateTopics(ctx, 1, 1, map[string]*string{"no.such.config": kadm.StringPtr("1")}, uniqueTopic("bad"))
	must(t, err, "CreateTopics")
	for _, r := range unknown {
		if !errors.Is(r.Err, kerr.InvalidConfig) {
			t.Fatalf("unknown config: got %v, want INVALID_CONFIG", r.Err)
		}
	}
	dup := newTopic(t, adm, 1, 1, nil)
	again, err := adm.CreateTopics(ctx, 1, 1, nil, dup)
	must(t, err, "CreateTopics")
	if !errors.Is(again[dup].Err, kerr.TopicAlreadyExists) {
		t.Fatalf("second create: %v, want TOPIC_ALREADY_EXISTS", again[dup].Err)
	}
	invalid, err := adm.CreateTopics(ctx, 1, 1, nil, "bad/name")
	must(t, err, "CreateTopics")
	if !errors.Is(invalid["bad/name"].Err, kerr.InvalidTopicException) {
		t.Fatalf("bad name: %v", invalid["bad/name"].Err)
	}

	topic := newTopic(t, adm, 2, 1, map[string]*string{"retention.ms": kadm.StringPtr("3600000"), "cleanup.policy": kadm.StringPtr("delete")})
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	must(t, err, "DescribeTopicConfigs")
	rc, err := rcs.On(topic, nil)
	must(t, err, "DescribeTopicConfigs %s", topic)
	found := map[string]kadm.Config{}
	for _, c := range rc.Configs {
		found[c.Key] = c
	}
	if c := found["retention.ms"]; c.MaybeValue() != "3600000" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("retention.ms = %q source %v", c.MaybeValue(), c.Source)
	}
	if c := found["segment.bytes"]; c.MaybeValue() == "" || c.Source == kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("segment.bytes = %q source %v, want the broker default", c.MaybeValue(), c.Source)
	}
	if len(found) < 20 {
		t.Fatalf("only %d topic configs described", len(found))
	}
	meta, err := adm.BrokerMetadata(ctx)
	must(t, err, "BrokerMetadata")
	brokers, err := adm.DescribeBrokerConfigs(ctx, meta.Brokers.NodeIDs()...)
	must(t, err, "DescribeBrokerConfigs")
	for _, b := range brokers {
		if b.Err != nil || len(b.Configs) < 50 {
			t.Fatalf("broker %s configs: %v, %d entries", b.Name, b.Err, len(b.Configs))
		}
	}
	// The cluster-wide resource ("") lists dynamic defaults only, as Kafka:
	// none were set.
	defaults, err := adm.DescribeBrokerConfigs(ctx)
	must(t, err, "DescribeBrokerConfigs (cluster defaults)")
	for _, b := range defaults {
		if b.Err != nil || len(b.Configs) != 0 {
			t.Fatalf("cluster default configs: %v, %d entries, want none", b.Err, len(b.Configs))
		}
	}
}

// A deleted topic disappears from Metadata at once, and a topic created again
// under the same name starts from offset 0.
func TestDeleteTopicThenRecreateStartsAtZero(t *testing.T) {
	tg := singleNode(t)
	adm := newAdmin(t, tg.seeds)
	ctx := ctxTimeout(t, 60*time.Second)
	name := uniqueTopic("recreate")
	for round := range 2 {
		r, err := adm.CreateTopic(ctx, 1, 1, nil, name)
		must(t, err, "create round %d", round)
		must(t, r.Err, "create round %d", round)
		cl := newClient(t, tg.seeds, kgo.DefaultProduceTopic(name))
		for i := range 10 {
			rec := &kgo.Record{Value: []byte{byte(i)}}
			must(t, cl.ProduceSync(ctx, rec).FirstErr(), "produce round %d", round)
			if rec.Offset != int64(i) {
				t.Fatalf("round %d: record %d got offset %d", round, i, rec.Offset)
			}
		}
		cl.Close()
		dr, err := adm.DeleteTopics(ctx, name)
		must(t, err, "delete round %d", round)
		must(t, dr[name].Err, "delete round %d", round)
		md, err := adm.Metadata(ctx, name)
		must(t, err, "metadata")
		if d := md.Topics[name]; !errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
			t.Fatalf("round %d: deleted topic still in metadata: %+v", round, d)
		}
	}
}

func TestDescribeClusterAndAutoCreate(t *testing.T) {
	tg := singleNode(t)
	adm := newAdmin(t, tg.seeds)
	ctx := ctxTimeout(t, 30*time.Second)
	bm, err := adm.ListBrokers(ctx)
	must(t, err, "ListBrokers")
	if len(bm) == 0 {
		t.Fatal("no brokers")
	}
	cl := newClient(t, tg.seeds)
	dc, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl)
	must(t, err, "DescribeCluster")
	if dc.ClusterID == "" || len(dc.Brokers) == 0 || dc.ControllerID < 0 {
		t.Fatalf("DescribeCluster: %+v", dc)
	}

	// franz-go produces to a topic that does not exist: Metadata creates it.
	name := uniqueTopic("auto")
	pc := newClient(t, tg.seeds, kgo.DefaultProduceTopic(name), kgo.AllowAutoTopicCreation())
	must(t, pc.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(), "produce to an auto-created topic")
	md, err := adm.Metadata(ctx, name)
	must(t, err, "metadata")
	if d := md.Topics[name]; d.Err != nil || len(d.Partitions) != 1 {
		t.Fatalf("auto-created topic: %+v", d)
	}
	adm.DeleteTopics(ctx, name)
}
