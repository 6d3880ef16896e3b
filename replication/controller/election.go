package controller

import (
	"slices"
	"strconv"
	"strings"
)

// Leader election, after Kafka 4.x's PartitionChangeBuilder, with eligible
// leader replicas (KIP-966) when the cluster has them (policy.elr, elr.go):
//
//   - online (clean): a current leader that is still acceptable and in the
//     target ISR stays; otherwise the first replica, in replica order, that
//     is in the target ISR and acceptable; with the ISR empty, the first
//     acceptable eligible leader replica (ELR), which becomes the ISR; with
//     the ISR and the ELR empty, the last known leader if it is acceptable
//     (an unclean choice: it may have lost data); none: no leader (offline).
//   - preferred: the first replica if it qualifies as above, else as online.
//   - unclean: as online, then the first acceptable replica in replica order
//     even outside the ISR; the ISR becomes just that replica.
//
// "Acceptable" is normally "live": registered, unfenced, not in controlled
// shutdown. Without ELR an ISR is never left empty: removing its last
// member keeps it (and the partition goes offline if that member cannot
// lead). With ELR the ISR may empty; the ELR is kept while the ISR is
// smaller than the topic's min.insync.replicas (targetELR).

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

// electedBy says where an election found its leader.
type electedBy int8

const (
	electedNone      electedBy = iota // no leader
	electedISR                        // an ISR member (or the current leader stays)
	electedELR                        // an eligible leader replica, the ISR being empty
	electedLastKnown                  // the last known leader, ISR and ELR empty: unclean
	electedUnclean                    // any live replica (unclean.leader.election.enable)
)

// policy is what elections read besides the partition and the brokers: the
// cluster-wide defaults of the topic configs they depend on, and whether
// the cluster tracks eligible leader replicas.
type policy struct {
	uncleanDefault bool  // unclean.leader.election.enable, broker level
	minISRDefault  int32 // min.insync.replicas, broker level (static)
	elr            bool  // eligible.leader.replicas.version >= 1
}

// changeRequest describes a wanted partition change.
type changeRequest struct {
	targetISR  []int32     // nil: keep the current ISR
	assignment *assignment // nil: keep the current replica assignment
	election   electionType
	acceptable func(id int32) bool // may lead
	// elr: track eligible leader replicas; minISR is the topic's effective
	// min.insync.replicas, below which the ISR keeps an ELR.
	elr    bool
	minISR int32
	// uncleanShutdown are replicas that came back from an unclean shutdown:
	// they may have lost data, so they leave the ISR and the ELR.
	uncleanShutdown []int32
}

// request is the change request for partition p of t under the policy,
// keeping ISR and assignment; callers set what they change.
func (pol policy) request(img *Image, t *Topic, p *Partition) changeRequest {
	return changeRequest{
		election:   electionFor(img, t, pol.uncleanDefault),
		acceptable: img.isLive,
		elr:        pol.elr,
		minISR:     effectiveMinISR(img, t, p, pol.minISRDefault),
	}
}

// electLeader returns the leader for p given its target replicas, ISR and
// ELR, and where it came from.
func electLeader(p *Partition, replicas, isr, elr []int32, req changeRequest) (int32, electedBy) {
	valid := func(r int32) bool {
		return (slices.Contains(isr, r) || (len(isr) == 0 && slices.Contains(elr, r))) && req.acceptable(r)
	}
	by := func(r int32) (int32, electedBy) {
		if slices.Contains(isr, r) {
			return r, electedISR
		}
		return r, electedELR
	}
	if req.election == electionPreferred && len(replicas) > 0 && valid(replicas[0]) {
		return by(replicas[0])
	}
	if valid(p.Leader) {
		return by(p.Leader)
	}
	for _, r := range replicas {
		if valid(r) {
			return by(r)
		}
	}
	if req.elr && len(isr) == 0 && len(elr) == 0 && len(p.LastKnownELR) == 1 &&
		slices.Contains(replicas, p.LastKnownELR[0]) && req.acceptable(p.LastKnownELR[0]) {
		return p.LastKnownELR[0], electedLastKnown
	}
	if req.election == electionUnclean {
		for _, r := range replicas {
			if req.acceptable(r) {
				return r, electedUnclean
			}
		}
	}
	return NoLeader, electedNone
}

// targetELR is p's ELR after its ISR becomes isr (Kafka's
// maybePopulateTargetElr): empty once the ISR reaches min.insync.replicas;
// otherwise the current ELR and ISR members that leave the ISR now, less
// replicas that shut down uncleanly and replicas no longer assigned. They
// hold every offset below the HW: the HW does not advance while the ISR is
// below min.insync.replicas.
func targetELR(p *Partition, isr, replicas []int32, req changeRequest) []int32 {
	if !req.elr || int32(len(isr)) >= req.minISR {
		return nil
	}
	var out []int32
	for _, r := range append(slices.Clone(p.ELR), p.ISR...) {
		if !slices.Contains(isr, r) && !slices.Contains(req.uncleanShutdown, r) &&
			slices.Contains(replicas, r) && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}

// buildChange returns the record that applies req to partition p of topic t,
// or nil when nothing would change. Like Kafka's PartitionChangeBuilder, it
// first completes a reassignment in progress when the target ISR allows it,
// then computes the ELR and elects the leader among the (new) replicas.
func buildChange(t *Topic, p *Partition, req changeRequest) *partitionChangeRecord {
	target := req.targetISR
	if target == nil {
		target = p.ISR
	}
	target = minus(target, req.uncleanShutdown)
	cur := assignmentOf(p)
	asg := cur
	if req.assignment != nil {
		asg = *req.assignment
	}
	if done, isr, ok := asg.maybeComplete(target); ok {
		asg, target = done, isr
	}
	elr := targetELR(p, target, asg.replicas, req)
	leader, by := electLeader(p, asg.replicas, target, elr, req)
	isr := target
	switch by {
	case electedELR:
		isr, elr = []int32{leader}, without(elr, leader)
	case electedLastKnown, electedUnclean:
		isr, elr = []int32{leader}, nil
	}
	lastKnown := p.LastKnownELR
	switch {
	case !req.elr:
		if len(isr) == 0 {
			isr = p.ISR // never empty the ISR
		}
		elr, lastKnown = nil, nil
	case len(isr) == 0 && len(p.ISR) > 0 && p.Leader != NoLeader:
		// The partition loses its leader now: remember it (Kafka's
		// maybeUpdateLastKnownLeader).
		lastKnown = []int32{p.Leader}
	case leader != NoLeader:
		lastKnown = nil
	}
	moved := !asg.equal(cur)
	elrChanged := !slices.Equal(elr, p.ELR)
	lastKnownChanged := !slices.Equal(lastKnown, p.LastKnownELR)
	if leader == p.Leader && slices.Equal(isr, p.ISR) && !moved && !elrChanged && !lastKnownChanged {
		return nil
	}
	rec := &partitionChangeRecord{
		Topic:     t.Name,
		TopicID:   t.ID,
		Partition: p.Index,
		Leader:    leader,
		ISR:       nonNil(isr),
		// A replica leaving the assignment must see a new leader epoch even
		// when the leader stays, so that its fetches are fenced.
		BumpLeaderEpoch: leader == p.Leader && !containsAll(asg.replicas, p.Replicas),
	}
	if moved {
		rec.Replicas = slices.Clone(asg.replicas)
		rec.Adding = slices.Clone(asg.adding)
		rec.Removing = slices.Clone(asg.removing)
	}
	if elrChanged {
		rec.ELR = ptrTo(nonNil(elr))
	}
	if lastKnownChanged {
		rec.LastKnownELR = ptrTo(nonNil(lastKnown))
	}
	return rec
}

// nonNil returns a copy of s, empty rather than nil.
func nonNil(s []int32) []int32 {
	return append([]int32{}, s...)
}

// uncleanConfig is the topic config that allows unclean leader election.
const uncleanConfig = "unclean.leader.election.enable"

// minISRConfig is the topic config min.insync.replicas.
const minISRConfig = "min.insync.replicas"

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

// effectiveMinISR resolves min.insync.replicas for p of t as Kafka's
// ReplicationControlManager.getTopicEffectiveMinIsr: the topic override,
// else the dynamic cluster default, else the broker default, capped at the
// partition's replica count.
func effectiveMinISR(img *Image, t *Topic, p *Partition, brokerDefault int32) int32 {
	n := brokerDefault
	for _, v := range []string{img.BrokerConfigs[""][minISRConfig], t.Configs[minISRConfig]} {
		if i, err := strconv.ParseInt(v, 10, 32); err == nil {
			n = int32(i)
		}
	}
	return max(min(n, int32(len(p.Replicas))), 1)
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

// removeBrokerChanges takes broker id out of every ISR (without ELR,
// keeping it where it is the last member) and moves its leaderships: what
// fencing, controlled shutdown and unregistration do (Kafka's
// generateLeaderAndIsrUpdates with brokerToRemove). With ELR, a member
// leaving an ISR that is then below min.insync.replicas becomes an
// eligible leader replica: its data is whole, it only went away.
func removeBrokerChanges(img *Image, id int32, pol policy) []record {
	acceptable := func(r int32) bool { return r != id && img.isLive(r) }
	var out []record
	img.eachPartition(func(t *Topic, p *Partition) {
		if p.Leader != id && !slices.Contains(p.ISR, id) {
			return
		}
		req := pol.request(img, t, p)
		req.targetISR, req.acceptable = without(p.ISR, id), acceptable
		if c := buildChange(t, p, req); c != nil {
			out = append(out, c)
		}
	})
	return out
}

// uncleanShutdownChanges handles broker id registering again after an
// unclean shutdown (Kafka's handleBrokerUncleanShutdown): it may have lost
// what it had not flushed, so it leaves every ISR and ELR it is in, and its
// leaderships move. Without ELR it is removeBrokerChanges.
func uncleanShutdownChanges(img *Image, id int32, pol policy) []record {
	if !pol.elr {
		return removeBrokerChanges(img, id, pol)
	}
	acceptable := func(r int32) bool { return r != id && img.isLive(r) }
	var out []record
	img.eachPartition(func(t *Topic, p *Partition) {
		if p.Leader != id && !slices.Contains(p.ISR, id) && !slices.Contains(p.ELR, id) {
			return
		}
		req := pol.request(img, t, p)
		req.targetISR, req.acceptable, req.uncleanShutdown = without(p.ISR, id), acceptable, []int32{id}
		if c := buildChange(t, p, req); c != nil {
			out = append(out, c)
		}
	})
	return out
}

// offlineChanges elects leaders for offline partitions. added, if >= 0, is a
// broker counted as live although the image does not show it yet (it is
// being unfenced in the same entry).
func offlineChanges(img *Image, added int32, pol policy) []record {
	acceptable := func(r int32) bool { return r == added || img.isLive(r) }
	var out []record
	img.eachPartition(func(t *Topic, p *Partition) {
		if p.Leader != NoLeader {
			return
		}
		req := pol.request(img, t, p)
		req.acceptable = acceptable
		if c := buildChange(t, p, req); c != nil {
			out = append(out, c)
		}
	})
	return out
}

// preferredChanges moves leadership back to the preferred (first) replica
// wherever it is live and in the ISR (auto.leader.rebalance.enable).
func preferredChanges(img *Image, pol policy) []record {
	var out []record
	img.eachPartition(func(t *Topic, p *Partition) {
		if len(p.Replicas) == 0 || p.Leader == p.Replicas[0] {
			return
		}
		req := pol.request(img, t, p)
		req.election = electionPreferred
		if c := buildChange(t, p, req); c != nil && c.Leader == p.Replicas[0] {
			out = append(out, c)
		}
	})
	return out
}
