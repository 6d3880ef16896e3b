package replication

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// alterPartitionVersion is the version leaders send: v2 names topics by id,
// v3 gives each ISR member with the broker epoch the leader saw it fetch
// with (KIP-903), so that the controller refuses a member that has since
// restarted. The controller serves v0-v3.
const alterPartitionVersion = 3

// AlterPartitionRequest builds the AlterPartition request that proposes
// changes to the active controller for broker brokerID at brokerEpoch, one
// topic entry per topic id in the order the changes first name it.
func AlterPartitionRequest(brokerID int32, brokerEpoch int64, changes []AlterISR) *kmsg.AlterPartitionRequest {
	req := kmsg.NewPtrAlterPartitionRequest()
	req.SetVersion(alterPartitionVersion)
	req.BrokerID = brokerID
	req.BrokerEpoch = brokerEpoch
	index := make(map[[16]byte]int)
	for _, c := range changes {
		i, ok := index[c.TopicID]
		if !ok {
			i = len(req.Topics)
			index[c.TopicID] = i
			t := kmsg.NewAlterPartitionRequestTopic()
			t.TopicID, t.Topic = c.TopicID, c.Topic
			req.Topics = append(req.Topics, t)
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, alterPartitionEntry(brokerID, brokerEpoch, c))
	}
	return req
}

// alterPartitionEntry is one change. The ISR goes in both fields: NewISR
// (v0-v2) and NewEpochISR (v3), where each member has the broker epoch of
// its last fetch, the leader its own (as Kafka's Partition does), and -1
// when unknown, which the controller does not check.
func alterPartitionEntry(brokerID int32, brokerEpoch int64, c AlterISR) kmsg.AlterPartitionRequestTopicPartition {
	p := kmsg.NewAlterPartitionRequestTopicPartition()
	p.Partition, p.LeaderEpoch, p.PartitionEpoch = c.Partition, c.LeaderEpoch, c.PartitionEpoch
	p.NewISR = c.NewISR
	for i, id := range c.NewISR {
		epoch := int64(-1)
		if i < len(c.NewISREpochs) {
			epoch = c.NewISREpochs[i]
		}
		if id == brokerID && epoch < 0 {
			epoch = brokerEpoch
		}
		p.NewEpochISR = append(p.NewEpochISR, kmsg.AlterPartitionRequestTopicPartitionNewEpochISR{BrokerID: id, BrokerEpoch: epoch})
	}
	return p
}

// AlterPartitionResults reads the controller's answer to the request built
// from changes: one result per change, in order. A whole-request error code
// is returned as the error (nothing was applied); a change the response does
// not mention gets an error of its own.
func AlterPartitionResults(changes []AlterISR, resp *kmsg.AlterPartitionResponse) ([]AlterISRResult, error) {
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, err
	}
	type key struct {
		id [16]byte
		p  int32
	}
	got := make(map[key]AlterISRResult)
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			got[key{t.TopidID, p.Partition}] = AlterISRResult{
				ISR: p.ISR, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch,
				Err: kerr.ErrorForCode(p.ErrorCode),
			}
		}
	}
	out := make([]AlterISRResult, len(changes))
	for i, c := range changes {
		res, ok := got[key{c.TopicID, c.Partition}]
		if !ok {
			res.Err = fmt.Errorf("AlterPartition: no answer for %s-%d", c.Topic, c.Partition)
		}
		out[i] = res
	}
	return out, nil
}
