package replication

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
)

// LeaderClient is a replica fetcher's connection to one leader broker: the
// two requests a fetcher sends. A fetcher uses it from its own goroutine
// only. The byte fields of a response (a fetch's record batches) may alias
// a buffer the client reuses: they are valid until the next call.
type LeaderClient interface {
	Fetch(ctx context.Context, req *kmsg.FetchRequest) (*kmsg.FetchResponse, error)
	ListOffsets(ctx context.Context, req *kmsg.ListOffsetsRequest) (*kmsg.ListOffsetsResponse, error)
	// Close drops the connection.
	Close()
}

// Network deadlines of the leader client: a fetch may wait MaxWait on the
// leader, then has this long to arrive; a ListOffsets has listOffsetsTimeout.
const (
	fetchResponseTimeout = 30 * time.Second
	listOffsetsTimeout   = 10 * time.Second
)

// protocolLeaderClient is the LeaderClient of a broker: a protocol.Client
// to the leader's inter-broker listener, re-dialled when its address changes.
type protocolLeaderClient struct {
	leader   int32
	addr     func(brokerID int32) (string, bool)
	clientID string
	maxWait  time.Duration
	security protocol.ClientSecurity
	client   *protocol.Client // nil until the first request
}

func newProtocolLeaderClient(leader, localID int32, opts FetcherOptions) *protocolLeaderClient {
	return &protocolLeaderClient{leader: leader, addr: opts.LeaderAddr, maxWait: opts.MaxWait, security: opts.Security,
		clientID: fmt.Sprintf("kbroker-replica-fetcher-%d", localID)}
}

// connect returns a client for the leader's current address.
func (c *protocolLeaderClient) connect() (*protocol.Client, error) {
	addr, ok := c.addr(c.leader)
	if !ok {
		return nil, fmt.Errorf("no address for broker %d", c.leader)
	}
	if c.client == nil || c.client.Addr() != addr {
		if c.client != nil {
			c.client.Close()
		}
		c.client = protocol.NewClient(addr, c.clientID, protocol.WithSecurity(c.security))
	}
	return c.client, nil
}

func (c *protocolLeaderClient) Fetch(ctx context.Context, req *kmsg.FetchRequest) (*kmsg.FetchResponse, error) {
	client, err := c.connect()
	if err != nil {
		return nil, err
	}
	resp, err := client.RequestWithin(ctx, c.maxWait+fetchResponseTimeout, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.FetchResponse), nil
}

func (c *protocolLeaderClient) ListOffsets(ctx context.Context, req *kmsg.ListOffsetsRequest) (*kmsg.ListOffsetsResponse, error) {
	client, err := c.connect()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, listOffsetsTimeout)
	defer cancel()
	resp, err := client.Request(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.ListOffsetsResponse), nil
}

func (c *protocolLeaderClient) Close() {
	if c.client != nil {
		c.client.Close()
		c.client = nil
	}
}
