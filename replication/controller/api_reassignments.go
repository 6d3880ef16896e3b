package controller

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AlterPartitionReassignments (45) and ListPartitionReassignments (46), v0
// (KIP-455), after Kafka's ReplicationControlManager. The reassignment model
// is in reassign.go; completion happens in buildChange, usually on the
// AlterPartition that brings the last target replica into the ISR. No
// replication throttles are set or honoured.

type topicPartition struct {
	topic     string
	partition int32
}

// alterPartitionReassignments starts, replaces or (null replicas) cancels
// reassignments. Every partition is answered; all changes commit as one entry.
func (c *controller) alterPartitionReassignments(ctx context.Context, req *kmsg.AlterPartitionAssignmentsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	c.mu.Lock()
	defer c.mu.Unlock()
	img := c.fsm.image()
	seen := map[topicPartition]int{}
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			seen[topicPartition{rt.Topic, rp.Partition}]++
		}
	}
	var recs []record
	for _, rt := range req.Topics {
		st := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			sp.Partition = rp.Partition
			var change *partitionChangeRecord
			var e *apiError
			if seen[topicPartition{rt.Topic, rp.Partition}] > 1 {
				e = newAPIError(kerr.InvalidRequest, "Partition %s:%d appears more than once in the request.", rt.Topic, rp.Partition)
			} else {
				change, e = c.reassignOne(img, rt.Topic, rp.Partition, rp.Replicas)
			}
			if e != nil {
				c.log.Info("partition reassignment refused", "topic", rt.Topic, "partition", rp.Partition,
					"replicas", rp.Replicas, "err", kerr.ErrorForCode(e.code), "msg", e.msg)
				sp.ErrorCode, sp.ErrorMessage = e.code, e.message()
			} else if change != nil {
				c.logReassignment(img.Partition(rt.Topic, rp.Partition), change, rp.Replicas == nil)
				recs = append(recs, change)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if _, err := c.commit(ctx, recs...); err != nil {
		return nil, err
	}
	return resp, nil
}

// reassignOne plans one partition's reassignment (target non-nil) or its
// cancellation (target nil); a nil change with no error means nothing to do.
func (c *controller) reassignOne(img *Image, topic string, idx int32, target []int32) (*partitionChangeRecord, *apiError) {
	t := img.Topics[topic]
	if t == nil {
		return nil, newAPIError(kerr.UnknownTopicOrPartition, "Unable to find a topic named %s.", topic)
	}
	p := img.Partition(topic, idx)
	if p == nil {
		return nil, newAPIError(kerr.UnknownTopicOrPartition, "Unable to find partition %s:%d.", topic, idx)
	}
	if target == nil {
		return c.cancelReassignment(img, t, p)
	}
	if e := validateReplicaList(img, target); e != nil {
		return nil, e
	}
	asg := reassignTo(p.Replicas, target)
	req := c.policy().request(img, t, p)
	req.assignment, req.election = &asg, electionOnline
	return buildChange(t, p, req), nil
}

// cancelReassignment reverts the reassignment in progress (Kafka's
// cancelPartitionReassignment). A revert that needs an unclean election is
// refused unless unclean.leader.election.enable allows it.
func (c *controller) cancelReassignment(img *Image, t *Topic, p *Partition) (*partitionChangeRecord, *apiError) {
	if !p.Reassigning() {
		return nil, newAPIError(kerr.NoReassignmentInProgress, "%s", kerr.NoReassignmentInProgress.Description)
	}
	asg, isr, unclean := assignmentOf(p).revert(p.ISR)
	if len(asg.replicas) == 0 {
		return nil, newAPIError(kerr.InvalidReplicaAssignment, "Invalid replica assignment: addingReplicas contains all replicas.")
	}
	req := c.policy().request(img, t, p)
	if unclean && req.election != electionUnclean {
		return nil, newAPIError(kerr.InvalidReplicaAssignment,
			"Unable to revert partition assignment for %s:%d because it would require an unclean leader election.", t.Name, p.Index)
	}
	req.targetISR, req.assignment = isr, &asg
	return buildChange(t, p, req), nil
}

// logReassignment logs what change does to p's assignment.
func (c *controller) logReassignment(p *Partition, change *partitionChangeRecord, cancel bool) {
	if change.Replicas == nil {
		return
	}
	what := "partition reassignment started"
	switch {
	case cancel:
		what = "partition reassignment cancelled"
	case len(change.Adding) == 0 && len(change.Removing) == 0:
		what = "partition reassignment completed"
	}
	c.log.Info(what, "topic", p.Topic, "partition", p.Index, "from", p.Replicas, "replicas", change.Replicas,
		"adding", change.Adding, "removing", change.Removing, "isr", change.ISR, "leader", change.Leader)
}

// listPartitionReassignments answers the reassignments in progress: of every
// topic (null topics) or of the partitions asked for. Unknown topics and
// partitions, and partitions not being reassigned, are left out.
func (c *controller) listPartitionReassignments(req *kmsg.ListPartitionReassignmentsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	img := c.fsm.image()
	add := func(t *Topic, indexes []int32) {
		st := kmsg.NewListPartitionReassignmentsResponseTopic()
		st.Topic = t.Name
		for _, idx := range indexes {
			if idx < 0 || int(idx) >= len(t.Partitions) || !t.Partitions[idx].Reassigning() {
				continue
			}
			p := t.Partitions[idx]
			sp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
			sp.Partition = idx
			sp.Replicas, sp.AddingReplicas, sp.RemovingReplicas = cloneOrEmpty(p.Replicas), cloneOrEmpty(p.AddingReplicas), cloneOrEmpty(p.RemovingReplicas)
			st.Partitions = append(st.Partitions, sp)
		}
		if len(st.Partitions) > 0 {
			resp.Topics = append(resp.Topics, st)
		}
	}
	if req.Topics == nil {
		for _, name := range img.sortedTopicNames() {
			t := img.Topics[name]
			indexes := make([]int32, len(t.Partitions))
			for i := range indexes {
				indexes[i] = int32(i)
			}
			add(t, indexes)
		}
		return resp, nil
	}
	for _, rt := range req.Topics {
		if t := img.Topics[rt.Topic]; t != nil {
			add(t, rt.Partitions)
		}
	}
	return resp, nil
}

func cloneOrEmpty(s []int32) []int32 {
	return append([]int32{}, s...)
}
