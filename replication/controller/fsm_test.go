package controller

import (
	"bytes"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
)

func TestRecordEncoding(t *testing.T) {
	data, err := encodeEntry(&partitionChangeRecord{Topic: "t", TopicID: uuid{1}, Partition: 2, Leader: 3, ISR: []int32{3}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), `{"type":"PartitionChange","v":1,"topic":"t",`) {
		t.Fatalf("encoding %s", data)
	}
	data, _ = encodeEntry(&activationRecord{NodeID: 0})
	if string(data) != `{"type":"Activation","v":1,"nodeId":0}` {
		t.Fatalf("encoding %s", data)
	}
	in := []record{&fenceBrokerRecord{ID: 1, Epoch: 5}, &setConfigRecord{ResourceType: resourceBroker, Key: "k", Value: ptrTo("v")}}
	data, err = encodeEntry(in...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := decodeEntry(data)
	if err != nil || !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip: %v %#v", err, out)
	}
	if _, err := decodeEntry([]byte(`{"type":"FenceBroker","v":2,"id":1}`)); err == nil {
		t.Fatal("newer record version accepted")
	}
	if _, err := decodeEntry([]byte(`{"type":"Nope","v":1}`)); err == nil {
		t.Fatal("unknown record type accepted")
	}
}

func TestApplyBasics(t *testing.T) {
	tf := newTestFSM(t)
	tf.apply(&initClusterRecord{ClusterID: "c1"})
	if err := tf.tryApply(&initClusterRecord{ClusterID: "c2"}); err == nil {
		t.Fatal("cluster id changed")
	}
	reg := tf.apply(&registerBrokerRecord{ID: 7, Listeners: []Endpoint{{Name: "CONTROLLER", Host: "h", Port: 1}}})
	img := tf.img()
	b := img.Broker(7)
	if b.Epoch != int64(reg) || !b.Fenced || b.Live() {
		t.Fatalf("registered broker %+v", b)
	}
	if e, ok := img.EndpointFor(7, "CONTROLLER"); !ok || e.Host != "h" {
		t.Fatalf("endpoint %+v %v", e, ok)
	}
	if err := tf.tryApply(&unfenceBrokerRecord{ID: 7, Epoch: int64(reg) - 1}); err == nil {
		t.Fatal("unfence at a stale epoch applied")
	}
	tf.apply(&unfenceBrokerRecord{ID: 7, Epoch: int64(reg)})
	if got := tf.img().LiveBrokers(); len(got) != 1 || got[0].ID != 7 {
		t.Fatalf("live %v", got)
	}
	tf.apply(&producerIDsRecord{BrokerID: 7, BrokerEpoch: int64(reg), NextProducerID: 1000})
	if tf.img().NextProducerID != 1000 {
		t.Fatal("producer ids")
	}
	if tf.img().AppliedIndex != tf.idx {
		t.Fatalf("applied index %d, want %d", tf.img().AppliedIndex, tf.idx)
	}
}

// A batch is atomic: one bad record leaves the image unchanged.
func TestApplyBatchAtomic(t *testing.T) {
	tf := newTestFSM(t)
	tf.registerLive(1)
	tf.createTopic("t", 1, []int32{1})
	before := tf.img()
	err := tf.tryApply(
		&setConfigRecord{ResourceType: resourceTopic, Resource: "t", Key: "a", Value: ptrTo("1")},
		&partitionChangeRecord{Topic: "t", TopicID: uuid{1}, Partition: 9, Leader: 1, ISR: []int32{1}},
	)
	if err == nil {
		t.Fatal("bad batch applied")
	}
	after := tf.img()
	if after.Topics["t"] != before.Topics["t"] || len(after.Topics["t"].Configs) != 0 {
		t.Fatal("partial batch visible")
	}
	if after.AppliedIndex != tf.idx {
		t.Fatal("rejected entry did not advance the applied index")
	}
}

func TestTopicLifecycle(t *testing.T) {
	tf := newTestFSM(t)
	tf.registerLive(1, 2)
	tf.createTopic("t", 9, []int32{1, 2})
	if err := tf.tryApply(&createTopicRecord{Name: "t", ID: uuid{8}, Partitions: []partitionRecord{{Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}}}); err == nil {
		t.Fatal("duplicate topic")
	}
	tf.apply(&createPartitionsRecord{Topic: "t", TopicID: uuid{9}, Partitions: []partitionRecord{{Replicas: []int32{2, 1}, ISR: []int32{2, 1}, Leader: 2}}})
	img := tf.img()
	if p := img.Partition("t", 1); p == nil || p.Index != 1 || p.Leader != 2 {
		t.Fatalf("new partition %+v", p)
	}
	if img.TopicsByID[[16]byte{9}] != img.Topics["t"] {
		t.Fatal("TopicsByID out of sync")
	}
	tf.apply(&deleteTopicRecord{Name: "t", ID: uuid{9}})
	img = tf.img()
	if len(img.Topics) != 0 || len(img.TopicsByID) != 0 || img.Partition("t", 0) != nil {
		t.Fatal("topic not deleted")
	}
}

func TestSnapshotRestoreRoundTrip(t *testing.T) {
	tf := newTestFSM(t)
	tf.apply(&initClusterRecord{ClusterID: "cluster"})
	tf.registerLive(1, 2, 3)
	tf.createTopic("a", 1, []int32{1, 2, 3}, []int32{2, 3, 1})
	tf.createTopic("b", 2, []int32{3})
	tf.apply(&setConfigRecord{ResourceType: resourceTopic, Resource: "a", Key: "retention.ms", Value: ptrTo("1000")})
	tf.apply(&setConfigRecord{ResourceType: resourceBroker, Resource: "", Key: "x", Value: ptrTo("y")})
	tf.apply(&setConfigRecord{ResourceType: resourceGroup, Resource: "g", Key: "share.auto.offset.reset", Value: ptrTo("earliest")})
	tf.fence(2)
	img := tf.img()
	tf.apply(&controlledShutdownRecord{ID: 3, Epoch: img.Brokers[3].Epoch})
	tf.apply(&producerIDsRecord{BrokerID: 1, BrokerEpoch: img.Brokers[1].Epoch, NextProducerID: 2000})
	tf.apply(&featureLevelRecord{Name: "group.version", Level: 0})
	tf.apply(&featureLevelRecord{Name: "metadata.version", Level: 25})
	tf.apply(&commitMarkerRecord{})
	want := tf.img()
	other := restoredCopy(t, tf)
	got := other.img()
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("restored image differs:\nwant %+v\ngot  %+v", want, got)
	}
	// The restored image keeps applying.
	other.idx = got.AppliedIndex
	other.fence(1)
	// 2 is fenced and 3 is shutting down (its ISR entries stay: the shutdown
	// record was applied alone): nobody can lead a-0.
	if p := other.img().Partition("a", 0); p.Leader != NoLeader || !slices.Equal(p.ISR, []int32{3}) {
		t.Fatalf("after restore and fence: %+v", p)
	}
}

// restoredCopy is a new FSM restored from a snapshot of tf's image.
func restoredCopy(t *testing.T, tf *testFSM) *testFSM {
	t.Helper()
	snap, err := tf.f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	other := newTestFSM(t)
	if err := other.f.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	return other
}

// ApplyBatch hands configuration entries to the FSM: they advance AppliedIndex.
func TestApplyBatchConfigurationEntries(t *testing.T) {
	f := newFSM(testLogger(t), nil)
	data, _ := encodeEntry(&initClusterRecord{ClusterID: "c"})
	res := f.ApplyBatch([]*raft.Log{
		{Index: 1, Type: raft.LogConfiguration},
		{Index: 2, Type: raft.LogCommand, Data: data},
		{Index: 3, Type: raft.LogConfiguration},
	})
	if len(res) != 3 || res[1] != nil {
		t.Fatalf("results %v", res)
	}
	if img := f.image(); img.AppliedIndex != 3 || img.ClusterID != "c" {
		t.Fatalf("image %+v", img)
	}
}

type memSink struct{ bytes.Buffer }

func (*memSink) ID() string    { return "mem" }
func (*memSink) Cancel() error { return nil }
func (*memSink) Close() error  { return nil }
