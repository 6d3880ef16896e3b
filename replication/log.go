package replication

import (
	"github.com/kbroker/kbroker/record"
	"github.com/kbroker/kbroker/storage"
)

// ReplicaLog is what a Partition needs of its log: *storage.Log implements
// it, and so does the in-memory log of the replication simulator
// (sim_memlog_test.go), whose contract test (log_contract_test.go) runs the
// same cases against both.
//
// The contract, as storage.Log documents it: offsets and the HW are safe to
// read at any time; appends, truncation and log start moves serialise in the
// log; SetHighWatermark clamps into [log start, log end]; Read returns whole
// batches from the one holding offset; TruncateTo drops a batch holding the
// offset whole and truncates the epoch history with it, but is a no-op at or
// beyond the log end; TruncateFullyAndStartAt empties the log and its epoch
// history; SetLogStartOffset refuses to pass the HW. The epoch cache is the
// log's leader-epoch history (Kafka's LeaderEpochFileCache), written through
// on every change.
type ReplicaLog interface {
	LogEndOffset() int64
	LogStartOffset() int64
	HighWatermark() int64
	// SetHighWatermark stores hw clamped to the log and returns what it stored.
	SetHighWatermark(hw int64) int64
	EpochCache() *storage.EpochCache
	// Size and NumSegments measure the log (metrics).
	Size() int64
	NumSegments() int

	// AppendAsLeader assigns offsets from the log end and stamps leaderEpoch
	// into each batch; AppendAsFollower appends batches as the leader wrote
	// them, from the log end.
	AppendAsLeader(batches []record.Batch, leaderEpoch int32, opt storage.AppendOptions) (storage.AppendInfo, error)
	AppendAsFollower(batches []byte) (storage.AppendInfo, error)
	Read(offset int64, maxBytes int32, maxOffset int64, minOneBatch bool) (storage.ReadResult, error)
	TruncateTo(offset int64) error
	TruncateFullyAndStartAt(offset int64) error
	SetLogStartOffset(offset int64) error

	// Durable reports flush.messages=1 (durable acknowledgements, issue
	// 19): DurableEnd is then the offset below which the log is on disk,
	// WaitDurable waits for everything appended so far to be, and the
	// flush listener runs after each group commit that flushed the log.
	Durable() bool
	DurableEnd() int64
	WaitDurable() error
	SetFlushListener(f func())
	// SetLogStartListener sets the function called after every move of
	// the log start offset (retention, DeleteRecords, following the
	// leader's, a full truncation): the partition tells its change
	// listeners (changes.go).
	SetLogStartListener(f func())

	// MaxTimestamp and OffsetForTimestamp answer ListOffsets by time.
	MaxTimestamp() (ts int64, offset int64)
	OffsetForTimestamp(ts int64) (offset, timestamp int64, ok bool)

	// Transactions: the last stable offset (min of the first open
	// transaction's first offset and the HW, never moving back), the
	// aborted transactions overlapping [from, upTo) (Kafka's
	// collectAbortedTxns), and the verification a transactional append
	// needs (storage's producer_txn.go has the rules).
	LastStableOffset() int64
	AbortedTransactions(from, upTo int64) []storage.AbortedTxn
	BeginTxnVerification(producerID int64, epoch int16, epochBump bool) storage.VerificationGuard
}

var _ ReplicaLog = (*storage.Log)(nil)
