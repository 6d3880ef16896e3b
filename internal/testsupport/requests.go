package testsupport

import "github.com/twmb/franz-go/pkg/kmsg"

// ProduceRequest is a v9 Produce of one record batch to one partition, for
// tests that must see the broker's own answer (no client retries).
func ProduceRequest(topic string, partition int32, acks int16, timeoutMillis int32, batch []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks = acks
	req.TimeoutMillis = timeoutMillis
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}
