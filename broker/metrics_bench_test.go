package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
)

// BenchmarkMetricsObserve is what every answered request costs the request
// metrics (protocol.ServerOptions.Observe): a produce answer of one
// partition.
func BenchmarkMetricsObserve(b *testing.B) {
	m := newMetrics()
	req := &protocol.Request{Header: protocol.Header{Key: 0, Version: 12}}
	resp := kmsg.NewPtrProduceResponse()
	resp.Topics = []kmsg.ProduceResponseTopic{{Topic: "t", Partitions: []kmsg.ProduceResponseTopicPartition{{Partition: 0}}}}
	b.ReportAllocs()
	for b.Loop() {
		m.observe(req, resp, time.Millisecond)
	}
}
