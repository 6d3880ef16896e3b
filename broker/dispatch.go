package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
)

// handlerFunc serves one API.
type handlerFunc func(ctx context.Context, req *protocol.Request) protocol.Response

// api is one row of the dispatch table: the versions kbroker serves and the
// handler. ApiVersions is generated from this table.
type api struct {
	key        int16
	minVersion int16
	maxVersion int16
	handle     handlerFunc
}

// apis is the dispatch table, one line per API. Minimums follow Kafka 4.0
// (record batch v2 only); maximums are the newest versions whose semantics
// kbroker implements. It is the one source of the versions served: each
// api_NN_*.go header repeats its row for the reader, and dispatch_test.go
// fails when the two disagree.
func (b *Broker) apis() []api {
	return []api{
		{0, 3, 12, b.handleProduce},
		{1, 4, 16, b.handleFetch},
		{2, 1, 9, b.handleListOffsets},
		{3, 0, 12, b.handleMetadata},
		{8, 2, 9, b.handleOffsetCommit},
		{9, 1, 9, b.handleOffsetFetch},
		{10, 0, 6, b.handleFindCoordinator},
		{11, 0, 9, b.handleJoinGroup},
		{12, 0, 4, b.handleHeartbeat},
		{13, 0, 5, b.handleLeaveGroup},
		{14, 0, 5, b.handleSyncGroup},
		{15, 0, 5, b.handleDescribeGroups},
		{16, 0, 5, b.handleListGroups},
		{17, 0, 1, b.handleSaslHandshake},
		{18, 0, 4, b.handleApiVersions},
		{19, 2, 7, b.handleCreateTopics},
		{20, 1, 6, b.handleDeleteTopics},
		{21, 0, 2, b.handleDeleteRecords},
		{22, 0, 5, b.handleInitProducerID},
		{23, 2, 4, b.handleOffsetForLeaderEpoch},
		{24, 0, 5, b.handleAddPartitionsToTxn},
		{25, 0, 4, b.handleAddOffsetsToTxn},
		{26, 0, 5, b.handleEndTxn},
		{27, 0, 1, b.handleWriteTxnMarkers},
		{28, 0, 5, b.handleTxnOffsetCommit},
		{29, 0, 3, b.handleDescribeAcls},
		{30, 0, 3, b.handleCreateAcls},
		{31, 0, 3, b.handleDeleteAcls},
		{32, 1, 4, b.handleDescribeConfigs},
		{33, 0, 2, b.handleAlterConfigs},
		{35, 1, 4, b.handleDescribeLogDirs},
		{36, 0, 2, b.handleSaslAuthenticate},
		{37, 0, 3, b.handleCreatePartitions},
		{42, 0, 2, b.handleDeleteGroups},
		{43, 0, 2, b.handleElectLeaders},
		{44, 0, 1, b.handleIncrementalAlterConfigs},
		{45, 0, 0, b.handleAlterPartitionReassignments},
		{46, 0, 0, b.handleListPartitionReassignments},
		{47, 0, 0, b.handleOffsetDelete},
		{48, 0, 1, b.handleDescribeClientQuotas},
		{49, 0, 1, b.handleAlterClientQuotas},
		{50, 0, 0, b.handleDescribeUserScramCredentials},
		{51, 0, 0, b.handleAlterUserScramCredentials},
		{57, 0, 2, b.handleUpdateFeatures},
		{60, 0, 1, b.handleDescribeCluster},
		{61, 0, 0, b.handleDescribeProducers},
		{65, 0, 0, b.handleDescribeTransactions},
		{66, 0, 2, b.handleListTransactions},
		{68, 0, 1, b.handleConsumerGroupHeartbeat},
		{69, 0, 1, b.handleConsumerGroupDescribe},
		{74, 0, 1, b.handleListConfigResources},
		{75, 0, 0, b.handleDescribeTopicPartitions},
		{76, 0, 1, b.handleShareGroupHeartbeat},
		{77, 0, 1, b.handleShareGroupDescribe},
		{78, 0, 2, b.handleShareFetch},
		{79, 0, 2, b.handleShareAcknowledge},
		{83, 0, 0, b.handleInitializeShareGroupState},
		{84, 0, 0, b.handleReadShareGroupState},
		{85, 0, 1, b.handleWriteShareGroupState},
		{86, 0, 0, b.handleDeleteShareGroupState},
		{87, 0, 1, b.handleReadShareGroupStateSummary},
		{90, 0, 1, b.handleDescribeShareGroupOffsets},
		{91, 0, 0, b.handleAlterShareGroupOffsets},
		{92, 0, 0, b.handleDeleteShareGroupOffsets},
	}
}

// dispatcher routes requests by key and enforces version ranges.
type dispatcher struct {
	table map[int16]api
	// fallback answers keys the table does not have (nil: refuse).
	errorResponse func(req *protocol.Request, code int16) kmsg.Response
	// around, if set, runs each served request's handler (the broker's
	// client quotas, quotas.go).
	around func(ctx context.Context, req *protocol.Request, handle handlerFunc) protocol.Response
}

func newDispatcher(apis []api) *dispatcher {
	d := &dispatcher{table: make(map[int16]api, len(apis)), errorResponse: errorResponse}
	for _, a := range apis {
		d.table[a.key] = a
	}
	return d
}

// Handle implements protocol.Handler.
func (d *dispatcher) Handle(ctx context.Context, req *protocol.Request) protocol.Response {
	a, ok := d.table[req.Key]
	if !ok {
		// An API we do not serve: Kafka closes the connection, since a client
		// should have checked ApiVersions first.
		return protocol.Response{Close: true}
	}
	if req.Version < a.minVersion || req.Version > a.maxVersion {
		if req.Key == protocol.ApiVersionsKey {
			return a.handle(ctx, req) // answers with the v0 fallback itself
		}
		if body := d.ErrorResponse(req, kerr.UnsupportedVersion.Code); body != nil {
			return protocol.Response{Body: body}
		}
		return protocol.Response{Close: true}
	}
	if d.around != nil {
		return d.around(ctx, req, a.handle)
	}
	return a.handle(ctx, req)
}

// ErrorResponse implements protocol.Handler.
func (d *dispatcher) ErrorResponse(req *protocol.Request, code int16) kmsg.Response {
	return d.errorResponse(req, code)
}

// apiVersionKeys lists the table for ApiVersions, sorted by key.
func (d *dispatcher) apiVersionKeys() []kmsg.ApiVersionsResponseApiKey {
	out := make([]kmsg.ApiVersionsResponseApiKey, 0, len(d.table))
	for key := int16(0); key < 1000 && len(out) < len(d.table); key++ {
		if a, ok := d.table[key]; ok {
			out = append(out, kmsg.ApiVersionsResponseApiKey{ApiKey: a.key, MinVersion: a.minVersion, MaxVersion: a.maxVersion})
		}
	}
	return out
}
