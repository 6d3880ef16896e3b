package broker

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
)

// FuzzDispatch feeds arbitrary frames through the request decoder and the
// dispatcher of a live single-node broker: every handler must answer (or ask
// to close the connection) without panicking, whatever the input.
func FuzzDispatch(f *testing.F) {
	b := startTestBroker(f)
	for _, req := range seedRequests() {
		for _, v := range []int16{0, 3, 7, req.MaxVersion()} {
			req.SetVersion(v)
			f.Add(encodeFrame(req))
		}
	}
	if files, err := filepath.Glob("testdata/frames/*"); err == nil {
		for _, name := range files {
			if data, err := os.ReadFile(name); err == nil {
				f.Add(data)
			}
		}
	}
	info := &protocol.ConnInfo{ID: 1, Listener: "PLAINTEXT"}
	f.Fuzz(func(t *testing.T, frame []byte) {
		req, err := protocol.ParseRequest(frame)
		if err != nil {
			return
		}
		req.Conn = info
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		resp := b.dispatch.Handle(ctx, req)
		if resp.Later != nil {
			resp.Later(ctx)
		}
		if resp.Done != nil {
			resp.Done()
		}
	})
}

// seedRequests are well-formed requests of every API the broker serves.
func seedRequests() []kmsg.Request {
	topic := "fuzz"
	md := kmsg.NewPtrMetadataRequest()
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: &topic}}
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: topic, NumPartitions: 1, ReplicationFactor: 1}}
	fe := kmsg.NewPtrFetchRequest()
	fe.Topics = []kmsg.FetchRequestTopic{{Topic: topic, Partitions: []kmsg.FetchRequestTopicPartition{{PartitionMaxBytes: 1024}}}}
	pr := kmsg.NewPtrProduceRequest()
	pr.Acks = 1
	pr.Topics = []kmsg.ProduceRequestTopic{{Topic: topic, Partitions: []kmsg.ProduceRequestTopicPartition{{Records: make([]byte, 70)}}}}
	lo := kmsg.NewPtrListOffsetsRequest()
	lo.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: topic, Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Timestamp: -1}}}}
	dc := kmsg.NewPtrDescribeConfigsRequest()
	dc.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: topic}}
	dq := kmsg.NewPtrDescribeClientQuotasRequest()
	dq.Components = []kmsg.DescribeClientQuotasRequestComponent{{EntityType: "user", MatchType: kmsg.QuotasMatchTypeDefault}}
	aq := kmsg.NewPtrAlterClientQuotasRequest()
	aq.Entries = []kmsg.AlterClientQuotasRequestEntry{{Entity: []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "client-id", Name: &topic}},
		Ops: []kmsg.AlterClientQuotasRequestEntryOp{{Key: "producer_byte_rate", Value: 1 << 30}}}}
	return []kmsg.Request{kmsg.NewPtrApiVersionsRequest(), md, ct, fe, pr, lo, dc, dq, aq,
		kmsg.NewPtrInitProducerIDRequest(), kmsg.NewPtrOffsetForLeaderEpochRequest(), kmsg.NewPtrDescribeClusterRequest(),
		kmsg.NewPtrDeleteTopicsRequest()}
}

// encodeFrame encodes a request without its size prefix, as ParseRequest takes it.
func encodeFrame(req kmsg.Request) []byte {
	dst := kbin.AppendInt16(nil, req.Key())
	dst = kbin.AppendInt16(dst, req.GetVersion())
	dst = kbin.AppendInt32(dst, 1)
	dst = kbin.AppendString(dst, "fuzz")
	if req.IsFlexible() {
		dst = append(dst, 0)
	}
	return req.AppendTo(dst)
}
