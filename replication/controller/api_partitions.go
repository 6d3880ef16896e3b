package controller

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AlterPartition (56, KIP-497) and ElectLeaders (43).

// alterPartition applies ISR changes proposed by partition leaders. Versions
// 0-1 name topics, 2+ use topic ids; 3+ carry each member's broker epoch.
func (c *controller) alterPartition(ctx context.Context, req *kmsg.AlterPartitionRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
	c.mu.Lock()
	defer c.mu.Unlock()
	img := c.fsm.image()
	if b := img.Brokers[req.BrokerID]; b == nil || b.Epoch != req.BrokerEpoch {
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		return resp, nil
	}
	type pending struct {
		topic, partition int // indexes into resp
		t                *Topic
		idx              int32
	}
	var recs []record
	var done []pending
	for _, rt := range req.Topics {
		st := kmsg.NewAlterPartitionResponseTopic()
		st.Topic, st.TopidID = rt.Topic, rt.TopicID
		t := img.Topics[rt.Topic]
		if req.Version >= 2 {
			t = img.TopicsByID[rt.TopicID]
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewAlterPartitionResponseTopicPartition()
			sp.Partition, sp.LeaderID = rp.Partition, NoLeader
			code := c.alterOne(img, req, t, &rp, &recs)
			sp.ErrorCode = code
			if code == 0 {
				done = append(done, pending{len(resp.Topics), len(st.Partitions), t, rp.Partition})
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if _, err := c.commit(ctx, recs...); err != nil {
		return nil, err
	}
	after := c.fsm.image()
	for _, d := range done {
		sp := &resp.Topics[d.topic].Partitions[d.partition]
		p := after.Partition(d.t.Name, d.idx)
		if p.Leader != req.BrokerID {
			// The change moved leadership away (the leader was no longer
			// acceptable): it must refresh its metadata before retrying.
			sp.ErrorCode = kerr.NewLeaderElected.Code
			if req.Version <= 1 {
				sp.ErrorCode = kerr.FencedLeaderEpoch.Code
			}
			continue
		}
		sp.LeaderID, sp.LeaderEpoch, sp.PartitionEpoch, sp.ISR = p.Leader, p.LeaderEpoch, p.PartitionEpoch, slices.Clone(p.ISR)
	}
	return resp, nil
}

// alterOne validates one partition and appends its change, if any, to recs.
func (c *controller) alterOne(img *Image, req *kmsg.AlterPartitionRequest, t *Topic,
	rp *kmsg.AlterPartitionRequestTopicPartition, recs *[]record) int16 {
	if t == nil {
		if req.Version >= 2 {
			return kerr.UnknownTopicID.Code
		}
		return kerr.UnknownTopicOrPartition.Code
	}
	var p *Partition
	if rp.Partition >= 0 && int(rp.Partition) < len(t.Partitions) {
		p = t.Partitions[rp.Partition]
	}
	code, newISR := CheckAlterPartition(img, req.BrokerID, req.Version, p, rp)
	if code != 0 {
		c.log.Info("AlterPartition refused", "broker", req.BrokerID, "topic", t.Name, "partition", rp.Partition,
			"err", kerr.ErrorForCode(code), "isr", proposedISR(req.Version, rp), "leader_epoch", rp.LeaderEpoch, "partition_epoch", rp.PartitionEpoch)
		return code
	}
	cr := c.policy().request(img, t, p)
	cr.targetISR = newISR
	change := buildChange(t, p, cr)
	if change != nil {
		c.logReassignment(p, change, false)
		*recs = append(*recs, change)
	}
	return 0
}

// electLeaders runs preferred (0) or unclean (1) elections. Null topics means
// every partition; partitions that need no election are then left out.
func (c *controller) electLeaders(ctx context.Context, req *kmsg.ElectLeadersRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	election := electionPreferred
	if req.Version >= 1 {
		switch req.ElectionType {
		case 0:
		case 1:
			election = electionUnclean
		default:
			c.log.Info("ElectLeaders refused: unknown election type", "type", req.ElectionType)
			return errorResponse(req, kerr.InvalidRequest.Code), nil
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	img, pol := c.fsm.image(), c.policy()
	var recs []record
	if req.Topics == nil {
		for _, name := range img.sortedTopicNames() {
			st := kmsg.NewElectLeadersResponseTopic()
			st.Topic = name
			for _, p := range img.Topics[name].Partitions {
				if e := electOne(img, pol, name, p.Index, election, &recs); e.errCode() != kerr.ElectionNotNeeded.Code {
					st.Partitions = append(st.Partitions, electResult(p.Index, e))
				}
			}
			if len(st.Partitions) > 0 {
				resp.Topics = append(resp.Topics, st)
			}
		}
	} else {
		for _, rt := range req.Topics {
			st := kmsg.NewElectLeadersResponseTopic()
			st.Topic = rt.Topic
			for _, idx := range rt.Partitions {
				st.Partitions = append(st.Partitions, electResult(idx, electOne(img, pol, rt.Topic, idx, election, &recs)))
			}
			resp.Topics = append(resp.Topics, st)
		}
	}
	if _, err := c.commit(ctx, recs...); err != nil {
		return nil, err
	}
	return resp, nil
}

// electResult answers one partition; an error without its own message
// carries the error's default text, as Kafka's ApiError does.
func electResult(idx int32, e *apiError) kmsg.ElectLeadersResponseTopicPartition {
	sp := kmsg.NewElectLeadersResponseTopicPartition()
	sp.Partition, sp.ErrorCode, sp.ErrorMessage = idx, e.errCode(), e.message()
	if e != nil && sp.ErrorMessage == nil {
		if ke, ok := kerr.ErrorForCode(e.code).(*kerr.Error); ok {
			sp.ErrorMessage = ptrTo(ke.Description)
		}
	}
	return sp
}

// electOne is Kafka's ReplicationControlManager.electLeader for one partition.
func electOne(img *Image, pol policy, topic string, idx int32, election electionType, recs *[]record) *apiError {
	t := img.Topics[topic]
	if t == nil {
		return newAPIError(kerr.UnknownTopicOrPartition, "No such topic as %s", topic)
	}
	p := img.Partition(topic, idx)
	if p == nil {
		return newAPIError(kerr.UnknownTopicOrPartition, "No such partition as %s-%d", topic, idx)
	}
	switch {
	case election == electionPreferred && len(p.Replicas) > 0 && p.Leader == p.Replicas[0],
		election == electionUnclean && p.Leader != NoLeader:
		return newAPIError(kerr.ElectionNotNeeded, "")
	}
	req := pol.request(img, t, p)
	req.election = election
	change := buildChange(t, p, req)
	if change == nil {
		if election == electionPreferred {
			return newAPIError(kerr.PreferredLeaderNotAvailable, "")
		}
		return newAPIError(kerr.EligibleLeadersNotAvailable, "")
	}
	*recs = append(*recs, change)
	return nil
}
