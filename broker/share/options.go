package share

import (
	"context"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/broker/group"
	"github.com/kbroker/kbroker/broker/shareconfig"
	"github.com/kbroker/kbroker/internal/coordkit"
)

// Store is one __consumer_offsets partition (group.Store: the broker's
// adapter serves both coordinators): Append writes records as one batch
// and returns once they are committed (acks=all).
type Store = group.Store

// StateStore is the share coordinator as the group coordinator uses it
// (Kafka's Persister): the broker routes each key to the leader of its
// __share_group_state partition. An error is a transport failure; Kafka
// errors are codes in the response.
type StateStore interface {
	InitializeShareGroupState(ctx context.Context, req *kmsg.InitializeShareGroupStateRequest) (*kmsg.InitializeShareGroupStateResponse, error)
	ReadShareGroupStateSummary(ctx context.Context, req *kmsg.ReadShareGroupStateSummaryRequest) (*kmsg.ReadShareGroupStateSummaryResponse, error)
	DeleteShareGroupState(ctx context.Context, req *kmsg.DeleteShareGroupStateRequest) (*kmsg.DeleteShareGroupStateResponse, error)
}

// Client describes the connection a request came from (group.Client).
type Client = group.Client

// Options configure a Coordinator. Zero fields get Kafka's defaults.
type Options struct {
	NumPartitions int32 // offsets.topic.num.partitions (50)
	MaxGroupSize  int32 // group.share.max.size (200)
	// InitializeRetryInterval: partitions whose share state has been
	// initializing for this long are initialized again
	// (group.share.initialize.retry.interval.ms, 30s).
	InitializeRetryInterval time.Duration
	// StateTimeout bounds one call of the share coordinator (30s).
	StateTimeout time.Duration

	// Config returns a group's effective share configuration (nil: the
	// defaults of shareconfig.DefaultBounds).
	Config func(group string) shareconfig.Config
	// TopicByName and TopicByID look a topic up in the cluster metadata.
	TopicByName func(name string) (id [16]byte, partitions int32, ok bool)
	TopicByID   func(id [16]byte) (name string, partitions int32, ok bool)
	// OtherGroupType names the type of a group id the classic/consumer
	// coordinator (broker/group) has ("classic", "consumer"), "" for none:
	// a group id is of one type only.
	OtherGroupType func(groupID string) string
	// State is the share coordinator.
	State StateStore
	// LatestOffset returns a partition's high watermark (for the lag of
	// DescribeShareGroupOffsets v1); ok=false when unknown.
	LatestOffset func(ctx context.Context, topic string, partition int32) (int64, bool)
	// MemberLeft is told when a member leaves or is fenced (the broker
	// closes its share sessions and releases its records).
	MemberLeft func(group, member string)

	coordkit.Clock
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.NumPartitions <= 0 {
		o.NumPartitions = 50
	}
	if o.MaxGroupSize <= 0 {
		o.MaxGroupSize = 200
	}
	if o.InitializeRetryInterval <= 0 {
		o.InitializeRetryInterval = 30 * time.Second
	}
	if o.StateTimeout <= 0 {
		o.StateTimeout = 30 * time.Second
	}
	if o.Config == nil {
		def := shareconfig.DefaultBounds().Defaults()
		o.Config = func(string) shareconfig.Config { return def }
	}
	if o.TopicByName == nil {
		o.TopicByName = func(string) ([16]byte, int32, bool) { return [16]byte{}, 0, false }
	}
	if o.TopicByID == nil {
		o.TopicByID = func([16]byte) (string, int32, bool) { return "", 0, false }
	}
	if o.OtherGroupType == nil {
		o.OtherGroupType = func(string) string { return "" }
	}
	if o.LatestOffset == nil {
		o.LatestOffset = func(context.Context, string, int32) (int64, bool) { return 0, false }
	}
	if o.MemberLeft == nil {
		o.MemberLeft = func(string, string) {}
	}
	o.Clock = o.Clock.OrDefault()
	o.Logger = coordkit.LoggerOrDiscard(o.Logger)
	return o
}
