package sharepartition

import (
	"context"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/broker/shareconfig"
	"github.com/kbroker/kbroker/internal/coordkit"
)

// Key identifies a share-partition: a share group on one topic-partition.
type Key struct {
	Group     string
	TopicID   [16]byte
	Topic     string // for logs and metrics
	Partition int32
}

// Log is the topic-partition's log as the share-partition leader sees it.
// The broker implements it over its replica; every method must be cheap
// and safe for concurrent use.
type Log interface {
	LogStartOffset() int64
	HighWatermark() int64
	// LastStableOffset is the first offset of the oldest open transaction,
	// or the high watermark (read_committed acquires below it only).
	LastStableOffset() int64
	// OffsetForTimestamp returns the first offset whose timestamp is at
	// least ts (ListOffsets by timestamp); ok=false when there is none.
	OffsetForTimestamp(ts int64) (offset int64, ok bool)
}

// StateStore is the share coordinator as a share-partition leader uses it
// (Kafka's Persister): the broker routes each request to the leader of the
// key's __share_group_state partition, this broker's
// sharestate.Coordinator or another broker. An error is a transport
// failure; Kafka errors are codes in the response.
type StateStore interface {
	ReadShareGroupState(ctx context.Context, req *kmsg.ReadShareGroupStateRequest) (*kmsg.ReadShareGroupStateResponse, error)
	WriteShareGroupState(ctx context.Context, req *kmsg.WriteShareGroupStateRequest) (*kmsg.WriteShareGroupStateResponse, error)
}

// Batch describes one record batch the broker read from the log for a
// ShareFetch: its offsets and what read_committed needs. The broker parses
// only the batch header.
type Batch struct {
	BaseOffset, LastOffset int64
	ProducerID             int64
	Transactional          bool
	Control                bool
	// Abort: a control batch holding an ABORT marker.
	Abort bool
}

// AbortedTxn is an aborted transaction overlapping the fetched range, as
// the fetch path returns them (Kafka's FetchResponse AbortedTransactions).
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
}

// AcquireMode is ShareFetch v2's ShareAcquireMode (KIP-1206).
type AcquireMode int8

const (
	// BatchOptimized acquires whole batches; MaxRecords may be exceeded to
	// end on a batch boundary.
	BatchOptimized AcquireMode = 0
	// RecordLimit acquires at most MaxRecords records.
	RecordLimit AcquireMode = 1
)

// AckBatch is one acknowledgement batch of a request.
type AckBatch struct {
	FirstOffset, LastOffset int64
	// Types holds one type for the whole range, or one per offset.
	Types []AckType
}

// Options are what every share-partition of a broker shares.
type Options struct {
	Store StateStore
	// Config returns a group's effective share configuration; nil: the
	// defaults of shareconfig.DefaultBounds.
	Config func(group string) shareconfig.Config
	// OnAvailable is called (without locks held) when records of a
	// share-partition became acquirable again (released, lock expired) or
	// acknowledgements moved its start offset (a full window has room
	// again), so that the broker wakes the ShareFetch requests waiting on
	// it.
	OnAvailable func(Key)
	// WriteTimeout bounds one state read or write (the persister's
	// request timeout, 30s).
	WriteTimeout time.Duration
	// MaxSessions is group.share.max.share.sessions (2000).
	MaxSessions int

	coordkit.Clock
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.Config == nil {
		def := shareconfig.DefaultBounds().Defaults()
		o.Config = func(string) shareconfig.Config { return def }
	}
	if o.OnAvailable == nil {
		o.OnAvailable = func(Key) {}
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 30 * time.Second
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = 2000
	}
	o.Clock = o.Clock.OrDefault()
	o.Logger = coordkit.LoggerOrDiscard(o.Logger)
	return o
}
