package txn

import "fmt"

// State is the state of a transactional id, as Kafka's TransactionState.
// Its value is the int8 transaction_status code of the __transaction_state
// records (Empty=0 ... PrepareEpochFence=7).
//
// Legal transitions, Kafka's validPreviousStates:
//
//	        +-------- AddPartitions / AddOffsets (the next transaction) ---------+
//	        v                                                                    |
//	Empty -> Ongoing --EndTxn commit--> PrepareCommit --markers--> CompleteCommit -+
//	  ^       |  |                                                               |
//	  |       |  +--InitProducerId, timeout--> PrepareEpochFence                 |
//	  |       |                                     |                            |
//	  |       +--EndTxn abort--> PrepareAbort <-----+      --markers--> CompleteAbort
//	  |                            ^                                             |
//	  |                            +-- TV2 EndTxn abort from Empty, Complete* ---+
//	  +------------- InitProducerId (epoch bump) from Empty, Complete* ----------+
//	Dead <- Empty, CompleteCommit, CompleteAbort (transactional.id.expiration.ms)
//
//	to                 valid previous states
//	Empty              Empty, CompleteCommit, CompleteAbort
//	Ongoing            Ongoing, Empty, CompleteCommit, CompleteAbort
//	PrepareCommit      Ongoing
//	PrepareAbort       Ongoing, PrepareEpochFence, Empty, CompleteCommit, CompleteAbort
//	CompleteCommit     PrepareCommit
//	CompleteAbort      PrepareAbort
//	Dead               Empty, CompleteCommit, CompleteAbort
//	PrepareEpochFence  Ongoing
//
// PrepareEpochFence is only ever a pending state: the coordinator replaces
// it with PrepareAbort in the same step, so it is never written. Dead is
// never written either: a tombstone is.
type State int8

const (
	Empty             State = 0
	Ongoing           State = 1
	PrepareCommit     State = 2
	PrepareAbort      State = 3
	CompleteCommit    State = 4
	CompleteAbort     State = 5
	Dead              State = 6
	PrepareEpochFence State = 7
)

// stateNames are Kafka's names: what ListTransactions and
// DescribeTransactions show and what ListTransactions filters by.
var stateNames = [...]string{
	Empty:             "Empty",
	Ongoing:           "Ongoing",
	PrepareCommit:     "PrepareCommit",
	PrepareAbort:      "PrepareAbort",
	CompleteCommit:    "CompleteCommit",
	CompleteAbort:     "CompleteAbort",
	Dead:              "Dead",
	PrepareEpochFence: "PrepareEpochFence",
}

func (s State) String() string {
	if s.known() {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", int8(s))
}

func (s State) known() bool { return s >= 0 && int(s) < len(stateNames) }

// StateFromName is the inverse of String for the eight states.
func StateFromName(name string) (State, bool) {
	for s, n := range stateNames {
		if n == name {
			return State(s), true
		}
	}
	return 0, false
}

// validPrevious tells whether a transactional id may move to s from prev.
func (s State) validPrevious(prev State) bool {
	switch s {
	case Empty:
		return prev == Empty || prev == CompleteCommit || prev == CompleteAbort
	case Ongoing:
		return prev == Ongoing || prev == Empty || prev == CompleteCommit || prev == CompleteAbort
	case PrepareCommit:
		return prev == Ongoing
	case PrepareAbort:
		return prev == Ongoing || prev == PrepareEpochFence || prev == Empty ||
			prev == CompleteCommit || prev == CompleteAbort
	case CompleteCommit:
		return prev == PrepareCommit
	case CompleteAbort:
		return prev == PrepareAbort
	case Dead:
		return prev == Empty || prev == CompleteCommit || prev == CompleteAbort
	case PrepareEpochFence:
		return prev == Ongoing
	}
	return false
}

// checkTransition returns an error unless from -> to is legal.
func checkTransition(from, to State) error {
	if !to.validPrevious(from) {
		return fmt.Errorf("txn: illegal transition %v -> %v", from, to)
	}
	return nil
}

// expirationAllowed: no transaction is open, so the id may expire
// (Kafka's isExpirationAllowed).
func (s State) expirationAllowed() bool {
	return s == Empty || s == CompleteCommit || s == CompleteAbort
}

// inTransaction: a transaction is open or being completed (Kafka's
// hasPendingTransaction).
func (s State) inTransaction() bool {
	return s == Ongoing || s == PrepareCommit || s == PrepareAbort
}
