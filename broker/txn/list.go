package txn

import (
	"cmp"
	"regexp"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListTransactions handles ListTransactions v0-v2 for the partitions this
// broker leads (clients ask every broker): filters by state names (unknown
// ones are echoed back), producer ids, duration (v1: open longer than that
// many ms) and transactional id pattern (v2, a regular expression the whole
// id must match). Ids being expired (Dead) are left out.
func (c *Coordinator) ListTransactions(req *kmsg.ListTransactionsRequest) *kmsg.ListTransactionsResponse {
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	entries, loading := c.entries()
	if loading {
		resp.ErrorCode = codeCoordinatorLoadInProgress
		return resp
	}
	f, code := c.listFilter(req, resp)
	if code != 0 {
		resp.ErrorCode = code
		return resp
	}
	for _, e := range entries {
		e.mu.Lock()
		m := e.md
		if f.includes(m) {
			st := kmsg.NewListTransactionsResponseTransactionState()
			st.TransactionalID, st.ProducerID, st.TransactionState = m.id, m.producerID, m.state.String()
			resp.TransactionStates = append(resp.TransactionStates, st)
		}
		e.mu.Unlock()
	}
	slices.SortFunc(resp.TransactionStates, func(a, b kmsg.ListTransactionsResponseTransactionState) int {
		return cmp.Compare(a.TransactionalID, b.TransactionalID)
	})
	return resp
}

type listFilter struct {
	states     map[State]bool
	producers  map[int64]bool
	durationMs int64 // -1: none
	pattern    *regexp.Regexp
	nowMs      int64
}

func (c *Coordinator) listFilter(req *kmsg.ListTransactionsRequest, resp *kmsg.ListTransactionsResponse) (*listFilter, int16) {
	f := &listFilter{durationMs: -1, nowMs: c.nowMs()}
	for _, name := range req.StateFilters {
		s, ok := StateFromName(name)
		if !ok {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
			continue
		}
		if f.states == nil {
			f.states = make(map[State]bool)
		}
		f.states[s] = true
	}
	for _, id := range req.ProducerIDFilters {
		if f.producers == nil {
			f.producers = make(map[int64]bool)
		}
		f.producers[id] = true
	}
	if req.Version >= 1 {
		f.durationMs = req.DurationFilterMillis
	}
	if req.Version >= 2 && req.TransactionalIDPattern != nil && *req.TransactionalIDPattern != "" {
		re, err := regexp.Compile("^(?:" + *req.TransactionalIDPattern + ")$")
		if err != nil {
			return nil, codeInvalidRegularExpression
		}
		f.pattern = re
	}
	return f, 0
}

// includes is Kafka's shouldInclude. The duration is measured from the
// transaction's start, so ids with no transaction (start -1) pass it.
func (f *listFilter) includes(m *txnMetadata) bool {
	switch {
	case m.state == Dead:
		return false
	case f.producers != nil && !f.producers[m.producerID]:
		return false
	case f.states != nil && !f.states[m.state]:
		return false
	case f.durationMs >= 0 && f.nowMs-m.startMs <= f.durationMs:
		return false
	case f.pattern != nil:
		return f.pattern.MatchString(m.id)
	}
	return true
}

// DescribeTransactions handles DescribeTransactions v0.
func (c *Coordinator) DescribeTransactions(req *kmsg.DescribeTransactionsRequest) *kmsg.DescribeTransactionsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range req.TransactionalIDs {
		resp.TransactionStates = append(resp.TransactionStates, c.describe(id))
	}
	return resp
}

func (c *Coordinator) describe(id string) kmsg.DescribeTransactionsResponseTransactionState {
	st := kmsg.NewDescribeTransactionsResponseTransactionState()
	st.TransactionalID = id
	if id == "" {
		st.ErrorCode = codeInvalidRequest
		return st
	}
	e, code := c.lookup(id, nil)
	switch {
	case code != 0:
		st.ErrorCode = code
		return st
	case e == nil:
		st.ErrorCode = codeTransactionalIDNotFound
		return st
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	m := e.md
	if m.state == Dead {
		st.ErrorCode = codeTransactionalIDNotFound
		return st
	}
	st.State, st.TimeoutMillis, st.StartTimestamp = m.state.String(), m.timeoutMs, m.startMs
	st.ProducerID, st.ProducerEpoch = m.producerID, m.producerEpoch
	for topic, partitions := range byTopic(m.sortedPartitions()) {
		t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
		t.Topic, t.Partitions = topic, partitions
		st.Topics = append(st.Topics, t)
	}
	return st
}
