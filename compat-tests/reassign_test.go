package compat

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Reassigning a partition from brokers {1,2,3} to {2,3,4} under continuous
// acks=all produce: the new replica catches up, joins the ISR, the old one is
// removed, and nothing acknowledged is lost.
func TestReassignUnderLoad(t *testing.T) {
	needOwnCluster(t)
	t.Parallel()
	c := startCluster(t, clusterOpts{brokers: 4, flags: replicationFlags()})
	adm := newAdmin(t, c.seeds())
	ctx := ctxTimeout(t, 3*time.Minute)
	topic := uniqueTopic("reassign")
	createTopicAssigned(t, c.seeds(), topic, []int32{1, 2, 3}, map[string]string{"min.insync.replicas": "2"})
	t.Cleanup(func() { adm.DeleteTopics(ctxTimeout(t, 10*time.Second), topic) })
	c.waitTopicEverywhere(topic, 1, 3)

	cl := newClient(t, c.seeds(), kgo.DefaultProduceTopic(topic), kgo.RecordDeliveryTimeout(60*time.Second))
	prod := startSteadyProducer(t, ctx, cl, "r", 100)
	reassign := kadm.AlterPartitionAssignmentsReq{}
	reassign.Assign(topic, 0, []int32{2, 3, 4})
	res, err := adm.AlterPartitionAssignments(ctx, reassign)
	must(t, err, "AlterPartitionAssignments")
	must(t, res.Error(), "AlterPartitionAssignments")
	st := c.waitPartition(topic, 0, 90*time.Second, "replicas {2,3,4} with a full ISR", func(s partitionState) bool {
		return slices.Equal(sorted(s.replicas), []int32{2, 3, 4}) && slices.Equal(s.isr, []int32{2, 3, 4})
	})
	listed, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: {0: {}}})
	must(t, err, "ListPartitionReassignments")
	if len(listed) != 0 {
		t.Fatalf("reassignment still listed after completion: %+v", listed)
	}
	acked, err := prod.finish()
	must(t, err, "acks=all produce during the reassignment")
	got := c.readAllSettled(topic)
	for _, v := range acked {
		if _, ok := got[v]; !ok {
			t.Fatalf("acknowledged %s lost during the reassignment", v)
		}
	}
	waitFor(t, 30*time.Second, "broker 1 to delete its copy", func() error {
		if b := c.node(1).logBytes(t, topic, 0); len(b) > 0 {
			return fmt.Errorf("node 1 still holds %d bytes", len(b))
		}
		return nil
	})
	t.Logf("reassigned to %v (leader %d) under load: %d records acked, none lost", st.replicas, st.leader, len(acked))
}

// createTopicAssigned creates a one-partition topic on the given replicas.
func createTopicAssigned(t *testing.T, seeds []string, topic string, replicas []int32, configs map[string]string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	rt.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: replicas}}
	for k, v := range configs {
		rt.Configs = append(rt.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: k, Value: kmsg.StringPtr(v)})
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxTimeout(t, 30*time.Second), newClient(t, seeds))
	must(t, err, "CreateTopics")
	must(t, kerr.ErrorForCode(resp.Topics[0].ErrorCode), "CreateTopics %s", topic)
}
