package controller

import (
	"slices"
	"strings"
)

// Leader election, after Kafka's PartitionChangeBuilder (KRaft, without
// eligible leader replicas):
//
//   - online (clean): a current leader that is still acceptable and in the
//     target ISR stays; otherwise the first replica, in replica order, that is
//     in the target ISR and acceptable; none: no leader (offline).
//   - preferred: the first replica if it is in the ISR and acceptable, else as
//     online.
//   - unclean: as online, then the first acceptable replica in replica order
//     even outside the ISR; the ISR becomes just that replica.
//
// "Acceptable" is normally "live": registered, unfenced, not in controlled
// shutdown. An ISR is never left empty: removing its last member keeps it
// (and the partition goes offline if that member cannot lead).

type electionType int8

const (
	electionOnline electionType = iota
	electionPreferred
	electionUnclean
)

func (e electionType) String() string {
	switch e {
	case electionOnline:
		return "online"
	case electionPreferred:
		return "preferred"
	case electionUnclean:
		return "unclean"
	}
	return "unknown"
}

// changeRequest describes a wanted partition change.
type changeRequest struct {
	targetISR  []int32     // nil: keep the current ISR
	assignment *assignment // nil: keep the current replica assignment
	election   electionType
	acceptable func(id int32) bool // may lead
}

// electLeader returns the leader for p given its target replicas and ISR,
// and whether the choice was unclean (from outside the ISR).
func electLeader(p *Partition, replicas, targetISR []int32, election electionType, acceptable func(int32) bool) (int32, bool) {
	valid := func(r int32) bool { return slices.Contains(targetISR, r) && acceptable(r) }
	if election == electionPreferred && len(replicas) > 0 && valid(replicas[0]) {
		return replicas[0], false
	}
	if valid(p.Leader) {
		return p.Leader, false
	}
	for _, r := range replicas {
		if valid(r) {
			return r, false
		}
	}
	if election == electionUnclean {
		for _, r := range replicas {
			if acceptable(r) {
				return r, true
			}
		}
	}
	return NoLeader, false
}

// buildChange returns the record that applies req to partition p of topic t,
// or nil when nothing would change. Like Kafka's PartitionChangeBuilder, it
// first completes a reassignment in progress when the target ISR allows it,
// then elects the leader among the (new) replicas.
func buildChange(t *Topic, p *Partition, req changeRequest) *partitionChangeRecord {
	target := req.targetISR
	if target == nil {
		target = p.ISR
	}
	cur := assignmentOf(p)
	asg := cur
	if req.assignment != nil {
		asg = *req.assignment
	}
	if done, isr, ok := asg.maybeComplete(target); ok {
		asg, target = done, isr
	}
	leader, unclean := electLeader(p, asg.replicas, target, req.election, req.acceptable)
	isr := target
	switch {
	case unclean:
		isr = []int32{leader}
	case len(target) == 0:
		isr = p.ISR // never empty the ISR
	}
	moved := !asg.equal(cur)
	if leader == p.Leader && slices.Equal(isr, p.ISR) && !moved {
		return nil
	}
	rec := &partitionChangeRecord{
		Topic:     t.Name,
		TopicID:   t.ID,
		Partition: p.Index,
		Leader:    leader,
		ISR:       slices.Clone(isr),
		// A replica leaving the assignment must see a new leader epoch even
		// when the leader stays, so that its fetches are fenced.
		BumpLeaderEpoch: leader == p.Leader && !containsAll(asg.replicas, p.Replicas),
	}
	if moved {
		rec.Replicas = slices.Clone(asg.replicas)
		rec.Adding = slices.Clone(asg.adding)
		rec.Removing = slices.Clone(asg.removing)
	}
	return rec
}

// uncleanConfig is the topic config that allows unclean leader election.
const uncleanConfig = "unclean.leader.election.enable"

// uncleanEnabled resolves unclean.leader.election.enable for t: the topic
// override, else the dynamic cluster default, else the broker default.
func uncleanEnabled(img *Image, t *Topic, brokerDefault bool) bool {
	if v, ok := t.Configs[uncleanConfig]; ok {
		return strings.EqualFold(v, "true")
	}
	if v, ok := img.BrokerConfigs[""][uncleanConfig]; ok {
		return strings.EqualFold(v, "true")
	}
	return brokerDefault
}

// electionFor returns the election type automatic elections use for t.
func electionFor(img *Image, t *Topic, brokerDefault bool) electionType {
	if uncleanEnabled(img, t, brokerDefault) {
		return electionUnclean
	}
	return electionOnline
}

// containsAll reports whether every member of sub is in s.
func containsAll(s, sub []int32) bool {
	for _, id := range sub {
		if !slices.Contains(s, id) {
			return false
		}
	}
	return true
}

// without returns s minus id, as a new slice.
func without(s []int32, id int32) []int32 {
	out := make([]int32, 0, len(s))
	for _, r := range s {
		if r != id {
			out = append(out, r)
		}
	}
	return out
}

// removeBrokerChanges takes broker id out of every ISR (keeping it where it
// is the last member) and moves its leaderships: what fencing, controlled
// shutdown and unregistration do (Kafka's generateLeaderAndIsrUpdates with
// brokerToRemove).
func removeBrokerChanges(img *Image, id int32, brokerDefault bool) []record {
	acceptable := func(r int32) bool { return r != id && img.isLive(r) }
	var out []record
	img.eachPartition(func(t *Topic, p *Partition) {
		if p.Leader != id && !slices.Contains(p.ISR, id) {
			return
		}
		req := changeRequest{targetISR: without(p.ISR, id), election: electionFor(img, t, brokerDefault), acceptable: acceptable}
		if c := buildChange(t, p, req); c != nil {
			out = append(out, c)
		}
	})
	return out
}

// offlineChanges elects leaders for offline partitions. added, if >= 0, is a
// broker counted as live although the image does not show it yet (it is
// being unfenced in the same entry).
func offlineChanges(img *Image, added int32, brokerDefault bool) []record {
	acceptable := func(r int32) bool { return r == added || img.isLive(r) }
	var out []record
	img.eachPartition(func(t *Topic, p *Partition) {
		if p.Leader != NoLeader {
			return
		}
		req := changeRequest{election: electionFor(img, t, brokerDefault), acceptable: acceptable}
		if c := buildChange(t, p, req); c != nil {
			out = append(out, c)
		}
	})
	return out
}

// preferredChanges moves leadership back to the preferred (first) replica
// wherever it is live and in the ISR (auto.leader.rebalance.enable).
func preferredChanges(img *Image) []record {
	var out []record
	img.eachPartition(func(t *Topic, p *Partition) {
		if len(p.Replicas) == 0 || p.Leader == p.Replicas[0] {
			return
		}
		req := changeRequest{election: electionPreferred, acceptable: img.isLive}
		if c := buildChange(t, p, req); c != nil && c.Leader == p.Replicas[0] {
			out = append(out, c)
		}
	})
	return out
}
