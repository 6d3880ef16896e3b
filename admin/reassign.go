package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Move is one partition's target replica list.
type Move struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
}

// MoveSyntax describes what ParseMove accepts.
const MoveSyntax = "TOPIC:PARTITION=BROKER,BROKER,... (orders:0=2,3,4: the first broker is the preferred leader)"

// ParseMove parses TOPIC:PARTITION=BROKERS.
func ParseMove(s string) (Move, error) {
	bad := fmt.Errorf("malformed move %q: want %s", s, MoveSyntax)
	lhs, rhs, ok := strings.Cut(s, "=")
	i := strings.LastIndexByte(lhs, ':')
	if !ok || i <= 0 {
		return Move{}, bad
	}
	p, err := strconv.ParseInt(lhs[i+1:], 10, 32)
	if err != nil || p < 0 {
		return Move{}, bad
	}
	m := Move{Topic: lhs[:i], Partition: int32(p)}
	for _, id := range splitList(rhs) {
		n, err := strconv.ParseInt(id, 10, 32)
		if err != nil || n < 0 {
			return Move{}, bad
		}
		if slices.Contains(m.Replicas, int32(n)) {
			return Move{}, fmt.Errorf("malformed move %q: broker %d is listed twice", s, n)
		}
		m.Replicas = append(m.Replicas, int32(n))
	}
	if len(m.Replicas) == 0 {
		return Move{}, bad
	}
	return m, nil
}

// ParsePlan reads Kafka's reassignment JSON (kafka-reassign-partitions.sh
// --reassignment-json-file): {"version":1,"partitions":[{"topic":"t",
// "partition":0,"replicas":[1,2,3]}]}.
func ParsePlan(b []byte) ([]Move, error) {
	var plan struct {
		Version    int    `json:"version"`
		Partitions []Move `json:"partitions"`
	}
	if err := json.Unmarshal(b, &plan); err != nil {
		return nil, fmt.Errorf("malformed reassignment plan: %v", err)
	}
	if len(plan.Partitions) == 0 {
		return nil, fmt.Errorf("the reassignment plan lists no partitions")
	}
	for _, m := range plan.Partitions {
		if m.Topic == "" || m.Partition < 0 || len(m.Replicas) == 0 {
			return nil, fmt.Errorf("the reassignment plan has an entry without topic, partition or replicas: %+v", m)
		}
	}
	return plan.Partitions, nil
}

// MoveStatus is where one partition's reassignment stands.
type MoveStatus struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"` // the current replica set (target and old during a move)
	Target    []int32 `json:"target,omitempty"`
	Adding    []int32 `json:"adding"`
	Removing  []int32 `json:"removing"`
	ISR       []int32 `json:"isr"`
	Leader    int32   `json:"leader"`
	Done      bool    `json:"done"`
	Error     string  `json:"error,omitempty"`
}

// Reassign starts moves (cancel: cancels the moves of those partitions
// instead). The error is the first partition refused.
func (c *Client) Reassign(ctx context.Context, moves []Move, cancel bool) ([]MoveStatus, error) {
	req := kadm.AlterPartitionAssignmentsReq{}
	for _, m := range moves {
		if cancel {
			req.CancelAssign(m.Topic, m.Partition)
		} else {
			req.Assign(m.Topic, m.Partition, m.Replicas)
		}
	}
	resps, err := c.adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return nil, c.Explain(ctx, err)
	}
	var out []MoveStatus
	var errs []error
	for _, m := range moves {
		st := MoveStatus{Topic: m.Topic, Partition: m.Partition, Target: m.Replicas}
		if r, ok := resps[m.Topic][m.Partition]; ok {
			subject := fmt.Sprintf("partition %s/%d", m.Topic, m.Partition)
			if e := c.codeErr(subject, r.Err, strPtr(r.ErrMessage), kmsg.AlterPartitionAssignments.Int16()); e != nil {
				st.Error, errs = e.Error(), append(errs, e)
			}
		}
		out = append(out, st)
	}
	return out, firstOf(errs)
}

// ReassignStatus reports the moves in progress (moves empty: every one in
// the cluster), or, for the moves given, whether each reached its target.
func (c *Client) ReassignStatus(ctx context.Context, moves []Move) ([]MoveStatus, error) {
	md, err := c.adm.Metadata(ctx)
	if err != nil {
		return nil, c.Explain(ctx, err)
	}
	set := kadm.TopicsSet{}
	for _, m := range moves {
		set.Add(m.Topic, m.Partition)
	}
	if len(moves) == 0 {
		set = md.Topics.TopicsSet()
	}
	ongoing, err := c.adm.ListPartitionReassignments(ctx, set)
	if err != nil {
		return nil, c.Explain(ctx, err)
	}
	out := []MoveStatus{}
	if len(moves) == 0 {
		for _, r := range ongoing.Sorted() {
			out = append(out, moveStatus(md, Move{Topic: r.Topic, Partition: r.Partition}, ongoing))
		}
		return out, nil
	}
	for _, m := range moves {
		out = append(out, moveStatus(md, m, ongoing))
	}
	return out, nil
}

func moveStatus(md kadm.Metadata, m Move, ongoing kadm.ListPartitionReassignmentsResponses) MoveStatus {
	st := MoveStatus{Topic: m.Topic, Partition: m.Partition, Target: m.Replicas, Adding: []int32{}, Removing: []int32{}, Leader: -1}
	p, ok := md.Topics[m.Topic].Partitions[m.Partition]
	if !ok {
		st.Error = fmt.Sprintf("partition %s/%d does not exist", m.Topic, m.Partition)
		return st
	}
	st.Replicas, st.ISR, st.Leader = p.Replicas, sortedIDs(p.ISR), p.Leader
	r, moving := ongoing[m.Topic][m.Partition]
	if moving {
		st.Adding, st.Removing = nonNil(r.AddingReplicas), nonNil(r.RemovingReplicas)
	}
	st.Done = !moving && (m.Replicas == nil || slices.Equal(sortedIDs(p.Replicas), sortedIDs(m.Replicas)))
	return st
}
