package replication

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/replication/controller"
)

// simTopicID is the id of the simulated partition's topic: fetches and
// AlterPartition name it by id, as kbroker's do.
var simTopicID = [16]byte{0x5e, 0xed}

// simCtl is the simulator's controller for its one partition: the decisions
// of replication/controller that drive elections and ISR changes, as that
// package makes them (its functions are unexported, so they are restated
// here; each names its original), except the AlterPartition check, which
// is the controller's own:
//
//   - electLeader and buildChange (election.go): a clean election keeps a
//     leader that is live and in the target ISR, else takes the first live
//     ISR member in replica order; preferred takes the first replica if it
//     qualifies; unclean, when enabled and no ISR member qualifies, takes
//     the first live replica and makes the ISR just it. The ISR is never
//     emptied. A new leader bumps the leader epoch; every change bumps the
//     partition epoch.
//   - removeBrokerChanges (fencing, and re-registration of a new
//     incarnation, api_brokers.go): the broker leaves the ISR (unless it is
//     the last member) and its leadership moves.
//   - offlineChanges (unfencing): a partition without a leader elects one.
//   - alterPartition and alterOne (api_partitions.go): AlterPartition
//     arrives as the wire request the leader's AlterPartitionRequest built,
//     is checked by controller.CheckAlterPartition itself (Kafka's order;
//     a member whose broker epoch is not its registration's is
//     INELIGIBLE_REPLICA, KIP-903; -1 is not checked), then applied as a
//     change whose election may move leadership away (NEW_LEADER_ELECTED).
//
// Every change is appended to meta, the metadata log brokers apply in
// order.
type simCtl struct {
	replicas []int32 // assignment order: the preferred leader first
	unclean  bool
	brokers  map[int32]*simCtlBroker

	leader         int32
	leaderEpoch    int32
	partitionEpoch int32
	isr            []int32

	meta []PartitionState // the partition's state after each change
	// uncleanEpochs are the leader epochs given by unclean elections.
	uncleanEpochs []int32
}

type simCtlBroker struct {
	fenced bool
	epoch  int64 // registration epoch (Kafka's broker epoch)
}

func newSimCtl(replicas []int32, unclean bool) *simCtl {
	c := &simCtl{replicas: slices.Clone(replicas), unclean: unclean, brokers: map[int32]*simCtlBroker{},
		leader: -1, isr: slices.Clone(replicas)}
	for _, id := range replicas {
		c.brokers[id] = &simCtlBroker{epoch: 1}
	}
	c.change(slices.Clone(replicas), electionOnlineSim, c.live)
	return c
}

type simElection int8

const (
	electionOnlineSim simElection = iota
	electionPreferredSim
	electionUncleanSim
)

func (c *simCtl) live(id int32) bool {
	b := c.brokers[id]
	return b != nil && !b.fenced
}

// election is the automatic election type (electionFor).
func (c *simCtl) election() simElection {
	if c.unclean {
		return electionUncleanSim
	}
	return electionOnlineSim
}

// elect is electLeader: the leader for target and whether it is unclean.
func (c *simCtl) elect(target []int32, e simElection, acceptable func(int32) bool) (int32, bool) {
	valid := func(r int32) bool { return slices.Contains(target, r) && acceptable(r) }
	if e == electionPreferredSim && valid(c.replicas[0]) {
		return c.replicas[0], false
	}
	if valid(c.leader) {
		return c.leader, false
	}
	for _, r := range c.replicas {
		if valid(r) {
			return r, false
		}
	}
	if e == electionUncleanSim {
		for _, r := range c.replicas {
			if acceptable(r) {
				return r, true
			}
		}
	}
	return -1, false
}

// change is buildChange plus its application: it reports whether anything
// changed.
func (c *simCtl) change(target []int32, e simElection, acceptable func(int32) bool) bool {
	leader, unclean := c.elect(target, e, acceptable)
	isr := target
	switch {
	case unclean:
		isr = []int32{leader}
	case len(target) == 0:
		isr = c.isr
	}
	if leader == c.leader && slices.Equal(isr, c.isr) && len(c.meta) > 0 {
		return false
	}
	if leader != c.leader {
		c.leaderEpoch++
	}
	if len(c.meta) == 0 {
		c.leaderEpoch = 0 // the first election is epoch 0
	}
	c.partitionEpoch = int32(len(c.meta))
	c.leader, c.isr = leader, slices.Clone(isr)
	if unclean {
		c.uncleanEpochs = append(c.uncleanEpochs, c.leaderEpoch)
	}
	c.meta = append(c.meta, c.state())
	return true
}

func (c *simCtl) state() PartitionState {
	return PartitionState{Topic: "t", TopicID: simTopicID, Partition: 0, Replicas: slices.Clone(c.replicas), ISR: slices.Clone(c.isr),
		Leader: c.leader, LeaderEpoch: c.leaderEpoch, PartitionEpoch: c.partitionEpoch}
}

// removeBroker is removeBrokerChanges for id.
func (c *simCtl) removeBroker(id int32) {
	if c.leader != id && !slices.Contains(c.isr, id) {
		return
	}
	c.change(without(c.isr, []int32{id}), c.election(), func(r int32) bool { return r != id && c.live(r) })
}

// fence is a missed session: fenced, then removed.
func (c *simCtl) fence(id int32) {
	c.removeBroker(id)
	c.brokers[id].fenced = true
}

// register is a new incarnation's BrokerRegistration: the previous one may
// have lost unflushed data, so it is removed first; it starts fenced.
func (c *simCtl) register(id int32) int64 {
	c.removeBroker(id)
	b := c.brokers[id]
	b.fenced = true
	b.epoch++
	return b.epoch
}

// unfence is the heartbeat of a caught-up broker, then offlineChanges.
func (c *simCtl) unfence(id int32) {
	c.brokers[id].fenced = false
	if c.leader == -1 {
		c.change(c.isr, c.election(), c.live)
	}
}

// preferred is a preferred-leader election (auto.leader.rebalance).
func (c *simCtl) preferred() {
	if c.leader == c.replicas[0] {
		return
	}
	if l, _ := c.elect(c.isr, electionPreferredSim, c.live); l == c.replicas[0] {
		c.change(c.isr, electionPreferredSim, c.live)
	}
}

// simAlterResult is the controller's answer to one AlterPartition change.
type simAlterResult struct {
	isr                         []int32
	leaderEpoch, partitionEpoch int32
	err                         error
}

// alterPartition is api_partitions.go's alterPartition for the one
// partition: the request's broker epoch, the topic id, then
// controller.CheckAlterPartition itself (the real check, KIP-903's broker
// epochs included) and alterOne's change, whose election may move the
// leadership away (NEW_LEADER_ELECTED).
func (c *simCtl) alterPartition(req *kmsg.AlterPartitionRequest) *kmsg.AlterPartitionResponse {
	resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
	if b := c.brokers[req.BrokerID]; b == nil || b.epoch != req.BrokerEpoch {
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		return resp
	}
	for _, rt := range req.Topics {
		st := kmsg.NewAlterPartitionResponseTopic()
		st.Topic, st.TopidID = rt.Topic, rt.TopicID
		for i := range rt.Partitions {
			st.Partitions = append(st.Partitions, c.alterOne(req, rt.TopicID, &rt.Partitions[i]))
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func (c *simCtl) alterOne(req *kmsg.AlterPartitionRequest, topicID [16]byte, rp *kmsg.AlterPartitionRequestTopicPartition) kmsg.AlterPartitionResponseTopicPartition {
	sp := kmsg.NewAlterPartitionResponseTopicPartition()
	sp.Partition, sp.LeaderID = rp.Partition, -1
	if topicID != simTopicID {
		sp.ErrorCode = kerr.UnknownTopicID.Code
		return sp
	}
	var p *controller.Partition
	if rp.Partition == 0 {
		p = &controller.Partition{Topic: "t", Replicas: c.replicas, ISR: c.isr, Leader: c.leader,
			LeaderEpoch: c.leaderEpoch, PartitionEpoch: c.partitionEpoch}
	}
	code, isr := controller.CheckAlterPartition(c.image(), req.BrokerID, req.GetVersion(), p, rp)
	if sp.ErrorCode = code; code != 0 {
		return sp
	}
	c.change(isr, c.election(), c.live)
	if c.leader != req.BrokerID {
		sp.ErrorCode = kerr.NewLeaderElected.Code
		return sp
	}
	sp.LeaderID, sp.LeaderEpoch, sp.PartitionEpoch, sp.ISR = c.leader, c.leaderEpoch, c.partitionEpoch, slices.Clone(c.isr)
	return sp
}

// image is the controller's view of the brokers as controller.Image holds
// it: each registered at its epoch, fenced or not.
func (c *simCtl) image() *controller.Image {
	img := &controller.Image{Brokers: make(map[int32]*controller.BrokerInfo, len(c.brokers))}
	for id, b := range c.brokers {
		img.Brokers[id] = &controller.BrokerInfo{ID: id, Epoch: b.epoch, Fenced: b.fenced}
	}
	return img
}

// leaderOf says who the controller gave epoch to, -1 if unknown.
func (c *simCtl) leaderOf(epoch int32) int32 {
	for _, st := range c.meta {
		if st.LeaderEpoch == epoch {
			return st.Leader
		}
	}
	return -1
}
