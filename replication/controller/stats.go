package controller

import "strconv"

// RaftStats is the Raft state of this node, for metrics.
type RaftStats struct {
	Term         uint64
	CommitIndex  uint64
	AppliedIndex uint64
	LastLogIndex uint64
	State        string // Leader, Follower, Candidate, Shutdown
}

// RaftStats reports this node's Raft term, commit and applied index and role.
func (n *Node) RaftStats() RaftStats {
	s := n.raft.Stats()
	num := func(k string) uint64 {
		v, _ := strconv.ParseUint(s[k], 10, 64)
		return v
	}
	return RaftStats{Term: num("term"), CommitIndex: num("commit_index"), AppliedIndex: num("applied_index"),
		LastLogIndex: num("last_log_index"), State: s["state"]}
}
