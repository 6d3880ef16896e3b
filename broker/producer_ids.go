package broker

import (
	"context"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// producerIDs hands out producer ids from blocks the controller allocates
// (AllocateProducerIds, KIP-730), so that ids are unique across the cluster
// and across restarts.
type producerIDs struct {
	b *Broker

	mu   sync.Mutex // guards next and end; held while fetching a new block
	next int64
	end  int64 // exclusive
}

func newProducerIDs(b *Broker) *producerIDs { return &producerIDs{b: b} }

// allocate returns a fresh producer id.
func (p *producerIDs) allocate(ctx context.Context) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next >= p.end {
		if err := p.fetchBlockLocked(ctx); err != nil {
			return -1, err
		}
	}
	id := p.next
	p.next++
	return id, nil
}

func (p *producerIDs) fetchBlockLocked(ctx context.Context) error {
	req := kmsg.NewPtrAllocateProducerIDsRequest()
	req.BrokerID = p.b.cfg.NodeID
	req.BrokerEpoch = p.b.ctrl.BrokerEpoch()
	resp, err := p.b.ctrl.Forward(ctx, req)
	if err != nil {
		return fmt.Errorf("allocating producer ids: %w", err)
	}
	r := resp.(*kmsg.AllocateProducerIDsResponse)
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		return fmt.Errorf("allocating producer ids: %w", err)
	}
	if r.ProducerIDLen <= 0 {
		return fmt.Errorf("allocating producer ids: empty block")
	}
	p.next, p.end = r.ProducerIDStart, r.ProducerIDStart+int64(r.ProducerIDLen)
	return nil
}
