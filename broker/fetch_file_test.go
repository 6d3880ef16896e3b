package broker

import (
	"bytes"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/internal/testsupport"
	"github.com/kbroker/kbroker/replication"
)

// A fetch from the active segment carries the open segment file and the
// records' offset in it, so that the connection sends them with sendfile;
// a fetch from a rolled segment carries none and goes out from the mapping.
// Either way the file bytes are the records.
func TestFetchRecordsCarryTheirSegmentFile(t *testing.T) {
	br := startTestBroker(t, func(c *config.Config) { c.LogSegmentBytes = 1 << 20 })
	createTopic(t, br, "files")
	batch := benchBatch(100, 1000) // ~100 KiB: the writev/sendfile path
	produce := func() {
		resp := runRequest(t, br, testsupport.ProduceRequest("files", 0, 1, 30000, batch))
		if code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("produce: error %d", code)
		}
	}
	produce()

	fetch := func(offset int64) *fetchRead {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(12)
		req.ReplicaID, req.MaxBytes = -1, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "files"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = offset, 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		fr := br.readFetch(req, nil)
		t.Cleanup(fr.release)
		return fr
	}
	fr := fetch(0)
	if len(fr.files) != 1 || fr.files[0].file == nil {
		t.Fatalf("fetch from the active segment: files %+v, want the open segment file", fr.files)
	}
	if _, ok := fr.body().(vectorFetch); !ok {
		t.Fatalf("a %d-byte fetch is not written zero-copy", fr.bytes)
	}
	onDisk := make([]byte, len(fr.files[0].data))
	if _, err := fr.files[0].file.ReadAt(onDisk, fr.files[0].offset); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(onDisk, fr.resp.Topics[0].Partitions[0].RecordBatches) {
		t.Fatal("the file bytes at the recorded offset are not the fetched records")
	}
	vs := fr.body().(vectorFetch).AppendVectors(nil, nil)
	filePieces := 0
	for _, v := range vs {
		if v.File != nil {
			filePieces++
		}
	}
	if filePieces != 1 {
		t.Fatalf("%d pieces with a file, want 1", filePieces)
	}
	fr.release()

	// Fill past 1 MiB so the first segment rolls: it is closed, its file gone.
	for range 11 {
		produce()
	}
	old := fetch(0)
	if len(old.files) != 1 || old.files[0].file != nil {
		t.Fatalf("fetch from a rolled segment: files %+v, want no file", old.files)
	}
	if len(old.resp.Topics[0].Partitions[0].RecordBatches) == 0 {
		t.Fatal("fetch from a rolled segment returned no records")
	}
}

// createTopic creates a single-partition topic and waits until br leads it.
func createTopic(tb testing.TB, br *Broker, name string) { createTopicWith(tb, br, name, nil) }

// createTopicWith is createTopic with topic configs.
func createTopicWith(tb testing.TB, br *Broker, name string, configs map[string]string) {
	tb.Helper()
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.SetVersion(7)
	ct.TimeoutMillis = 30000
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, 1, 1
	for k, v := range configs {
		t.Configs = append(t.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: k, Value: kmsg.StringPtr(v)})
	}
	ct.Topics = append(ct.Topics, t)
	resp := runRequest(tb, br, ct)
	if code := resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; code != 0 {
		tb.Fatalf("create topic: error %d", code)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if p, ok := br.replicas.Partition(name, 0); ok && p.Role() == replication.RoleLeader {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatal("topic has no local leader after 30s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
