package group

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func txnCommitReq(group string, pid int64, offsets map[string]map[int32]int64) *kmsg.TxnOffsetCommitRequest {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version = 3
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "tx", group, pid, 0
	req.Generation, req.MemberID = -1, ""
	for _, t := range sortedKeys(offsets) {
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = t
		for p, o := range offsets[t] {
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = p, o
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	return req
}

func (h *harness) txnCommit(group string, pid int64, offsets map[string]map[int32]int64) {
	h.t.Helper()
	resp := h.c.TxnOffsetCommit(ctxBG, txnCommitReq(group, pid, offsets), TxnProducer{ID: pid})
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				h.t.Fatalf("TxnOffsetCommit %s/%d: error %d", t.Topic, p.Partition, p.ErrorCode)
			}
		}
	}
}

// fetchStable is fetch with RequireStable.
func (h *harness) fetchStable(group string, topic string, p int32) kmsg.OffsetFetchResponseGroupTopicPartition {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version, req.RequireStable = 8, true
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	rt := kmsg.NewOffsetFetchRequestGroupTopic()
	rt.Topic, rt.Partitions = topic, []int32{p}
	rg.Topics = append(rg.Topics, rt)
	req.Groups = append(req.Groups, rg)
	return h.c.OffsetFetch(ctxBG, req).Groups[0].Topics[0].Partitions[0]
}

func (h *harness) complete(group string, pid int64, commit bool) {
	h.t.Helper()
	p := h.c.PartitionFor(group)
	h.store(group).mark(pid, commit)
	h.c.CompleteTransaction(ctxBG, []int32{p}, pid, commit)
}

// KIP-98/KIP-447: transactional offsets are invisible until the commit
// marker, unstable to RequireStable fetches meanwhile, dropped by an abort;
// a plain commit written after them wins.
func TestTxnOffsetCommit(t *testing.T) {
	h := newHarness(t, nil)
	h.txnCommit("g", 7, map[string]map[int32]int64{"t1": {0: 100}})
	if _, got := h.fetch("g", map[string][]int32{"t1": {0}}); got[tpKey("t1", 0)].Offset != -1 {
		t.Fatalf("pending offset visible: %+v", got)
	}
	if p := h.fetchStable("g", "t1", 0); p.ErrorCode != codeUnstableOffsetCommit || p.Offset != -1 {
		t.Fatalf("RequireStable while pending: %+v", p)
	}
	if p := h.fetchStable("g", "t1", 1); p.ErrorCode != 0 {
		t.Fatalf("RequireStable of a partition without a pending offset: %+v", p)
	}
	h.complete("g", 7, true)
	if p := h.fetchStable("g", "t1", 0); p.ErrorCode != 0 || p.Offset != 100 {
		t.Fatalf("after commit: %+v", p)
	}

	// Aborted: dropped.
	h.txnCommit("g", 7, map[string]map[int32]int64{"t1": {0: 200}})
	h.complete("g", 7, false)
	if p := h.fetchStable("g", "t1", 0); p.Offset != 100 {
		t.Fatalf("after abort: %+v", p)
	}

	// A plain commit after the pending one wins at the commit marker.
	h.txnCommit("g", 8, map[string]map[int32]int64{"t1": {0: 300, 1: 301}})
	allZero(t, h.commit("g", "", -1, map[string]map[int32]int64{"t1": {0: 250}}))
	h.complete("g", 8, true)
	if _, got := h.fetch("g", map[string][]int32{"t1": {0, 1}}); got[tpKey("t1", 0)].Offset != 250 || got[tpKey("t1", 1)].Offset != 301 {
		t.Fatalf("ordering: %+v", got)
	}

	// Unknown topics and member checks.
	req := txnCommitReq("g", 9, map[string]map[int32]int64{"nope": {0: 1}})
	if resp := h.c.TxnOffsetCommit(ctxBG, req, TxnProducer{ID: 9}); resp.Topics[0].Partitions[0].ErrorCode != codeUnknownTopicOrPartition {
		t.Fatalf("unknown topic: %+v", resp)
	}
	req = txnCommitReq("missing", 9, map[string]map[int32]int64{"t1": {0: 1}})
	req.Generation, req.MemberID = 3, "m"
	if resp := h.c.TxnOffsetCommit(ctxBG, req, TxnProducer{ID: 9}); resp.Topics[0].Partitions[0].ErrorCode != codeIllegalGeneration {
		t.Fatalf("unknown group with a generation: %+v", resp)
	}
}

// A new coordinator replays transactional offsets: committed ones apply,
// aborted ones do not, open ones stay pending until their marker comes.
func TestTxnOffsetReplay(t *testing.T) {
	h := newHarness(t, nil)
	h.txnCommit("g", 1, map[string]map[int32]int64{"t1": {0: 10}})
	h.complete("g", 1, true)
	h.txnCommit("g", 2, map[string]map[int32]int64{"t1": {1: 20}})
	h.complete("g", 2, false)
	h.txnCommit("g", 3, map[string]map[int32]int64{"t1": {2: 30}})

	n := h.failover(false)
	_, got := n.fetch("g", map[string][]int32{"t1": {0, 1, 2}})
	if got[tpKey("t1", 0)].Offset != 10 || got[tpKey("t1", 1)].Offset != -1 || got[tpKey("t1", 2)].Offset != -1 {
		t.Fatalf("after replay: %+v", got)
	}
	if p := n.fetchStable("g", "t1", 2); p.ErrorCode != codeUnstableOffsetCommit {
		t.Fatalf("open transaction's offset after replay: %+v", p)
	}
	n.complete("g", 3, true)
	if p := n.fetchStable("g", "t1", 2); p.ErrorCode != 0 || p.Offset != 30 {
		t.Fatalf("commit after replay: %+v", p)
	}
}
