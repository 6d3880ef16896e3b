package sharepartition

import "fmt"

// RecordState is the delivery state of one in-flight record (Kafka's
// RecordState; the values are those persisted in state batches).
//
//	            acquire (delivery count +1)
//	Available ──────────────────────────────> Acquired
//	    ^                                        │ │ │
//	    │ release, lock timeout (count < limit)  │ │ │ accept
//	    └────────────────────────────────────────┘ │ └──────> Acknowledged (terminal)
//	                                               │ reject, gap, release or lock
//	                                               │ timeout at the delivery limit
//	                                               └────────> Archived (terminal)
//
// A transition made by an acknowledgement or a lock timeout is pending
// until its state write commits (inflight.pending): a pending record is
// neither acquirable nor acknowledgeable, and a failed write rolls it back.
type RecordState int8

const (
	Available    RecordState = 0
	Acquired     RecordState = 1
	Acknowledged RecordState = 2
	Archived     RecordState = 4
)

var recordStateNames = [...]string{Available: "AVAILABLE", Acquired: "ACQUIRED", Acknowledged: "ACKNOWLEDGED", 3: "", Archived: "ARCHIVED"}

func (s RecordState) String() string {
	if s >= 0 && int(s) < len(recordStateNames) && recordStateNames[s] != "" {
		return recordStateNames[s]
	}
	return fmt.Sprintf("RecordState(%d)", int8(s))
}

// terminal: the record is done with; the start offset may pass it.
func (s RecordState) terminal() bool { return s == Acknowledged || s == Archived }

// legalRecordTransitions lists every transition a record may make.
var legalRecordTransitions = map[[2]RecordState]bool{
	{Available, Acquired}:    true,
	{Available, Archived}:    true, // aborted transaction, delivery limit lowered, log start moved
	{Acquired, Available}:    true,
	{Acquired, Acknowledged}: true,
	{Acquired, Archived}:     true,
	{Acquired, Acquired}:     true, // lock renewed
}

// checkTransition panics on an illegal transition: a bug of this package,
// never client input (client input is validated first).
func checkTransition(from, to RecordState) {
	if !legalRecordTransitions[[2]RecordState{from, to}] {
		panic(fmt.Sprintf("sharepartition: illegal record transition %s -> %s", from, to))
	}
}

// partitionState is the lifecycle of a share-partition (Kafka's
// SharePartitionState).
//
//	Empty ──Initialize──> Initializing ──read ok──> Active ──write FENCED_*──> Fenced
//	                           │                      │
//	                           └──read error──> Failed └──Close──> Fenced
//
// Only an Active partition acquires and acknowledges. Failed and Fenced
// are final: the broker drops the partition and makes a new one on the
// next request (which reads the state again).
type partitionState int8

const (
	stateEmpty partitionState = iota
	stateInitializing
	stateActive
	stateFailed
	stateFenced
)

var partitionStateNames = [...]string{stateEmpty: "EMPTY", stateInitializing: "INITIALIZING", stateActive: "ACTIVE", stateFailed: "FAILED", stateFenced: "FENCED"}

func (s partitionState) String() string {
	if int(s) < len(partitionStateNames) {
		return partitionStateNames[s]
	}
	return fmt.Sprintf("partitionState(%d)", int8(s))
}

var legalPartitionTransitions = map[[2]partitionState]bool{
	{stateEmpty, stateInitializing}:  true,
	{stateInitializing, stateActive}: true,
	{stateInitializing, stateFailed}: true,
	{stateActive, stateFenced}:       true,
	{stateEmpty, stateFenced}:        true,
	{stateInitializing, stateFenced}: true, // closed while reading
	{stateFailed, stateFenced}:       true,
}

func checkPartitionTransition(from, to partitionState) {
	if !legalPartitionTransitions[[2]partitionState{from, to}] {
		panic(fmt.Sprintf("sharepartition: illegal partition transition %s -> %s", from, to))
	}
}

// AckType is an acknowledgement type of ShareFetch and ShareAcknowledge
// (Kafka's AcknowledgeType; RENEW is KIP-1222, v2 with IsRenewAck).
type AckType int8

const (
	AckGap     AckType = 0
	AckAccept  AckType = 1
	AckRelease AckType = 2
	AckReject  AckType = 3
	AckRenew   AckType = 4
)

// inflight is one record of the window.
type inflight struct {
	state         RecordState
	deliveryCount int16
	member        string // the acquirer, while Acquired
	lockExpiryMs  int64  // while Acquired
	// pending: the state above is waiting for its write; before is what
	// a failed write restores.
	pending bool
	before  recordSnapshot
}

type recordSnapshot struct {
	state         RecordState
	deliveryCount int16
	member        string
	lockExpiryMs  int64
}

func (r *inflight) snapshot() recordSnapshot {
	return recordSnapshot{r.state, r.deliveryCount, r.member, r.lockExpiryMs}
}

// transition moves the record to a new state as part of a write: it stays
// pending (not acquirable or acknowledgeable) until the write commits.
func (r *inflight) transition(to RecordState, deliveryCount int16) {
	checkTransition(r.state, to)
	r.before = r.snapshot()
	r.pending = true
	r.state, r.deliveryCount = to, deliveryCount
	if to != Acquired {
		r.member, r.lockExpiryMs = "", 0
	}
}

func (r *inflight) commit() { r.pending, r.before = false, recordSnapshot{} }

func (r *inflight) rollback() {
	b := r.before
	r.state, r.deliveryCount, r.member, r.lockExpiryMs = b.state, b.deliveryCount, b.member, b.lockExpiryMs
	r.pending, r.before = false, recordSnapshot{}
}
