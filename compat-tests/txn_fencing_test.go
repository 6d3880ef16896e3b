package compat

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kbroker/kbroker/record"
)

// A zombie producer (the old epoch) is fenced once a new instance with the
// same transactional id has called InitProducerId: its open transaction is
// aborted, its later produces and its commit are refused, and
// read_committed consumers never see its records.
func TestTxnZombieFenced(t *testing.T) {
	tg := singleNode(t)
	adm := newAdmin(t, tg.seeds)
	topic := newTopic(t, adm, 1, 1, nil)
	id := uniqueTopic("zombie")
	ctx := ctxTimeout(t, time.Minute)

	zombie := txnProducer(t, tg.seeds, id, kgo.RecordRetries(2))
	must(t, zombie.BeginTransaction(), "zombie begin")
	for _, v := range values("zombie-", 5) {
		must(t, zombie.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(), "zombie produce")
	}
	fresh := txnProducer(t, tg.seeds, id)
	must(t, produceTxn(ctx, fresh, topic, values("fresh-", 5), true), "the new instance's transaction")

	err := zombie.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("zombie-late")}).FirstErr()
	if !errors.Is(err, kerr.InvalidProducerEpoch) && !errors.Is(err, kerr.ProducerFenced) {
		t.Fatalf("zombie produce after the fence: %v, want INVALID_PRODUCER_EPOCH or PRODUCER_FENCED", err)
	}
	if err := zombie.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Fatal("the zombie committed")
	}
	got := readValues(t, tg.seeds, topic, 5, 20*time.Second, true)
	checkExactlyOnce(t, values("fresh-", 5), got, "")
}

// A transaction nobody ends is aborted by the coordinator once it is open
// longer than its transaction.timeout.ms: the producer is fenced and the
// last stable offset moves on, so read_committed consumers are not held
// back; its records are never read_committed. While it is open,
// DescribeProducers shows where it starts, ListTransactions lists it and
// the LSO lag metric counts it; the timed-out abort is counted.
func TestTxnHungAbortedByTimeout(t *testing.T) {
	needOwnCluster(t)
	c := startCluster(t, clusterOpts{brokers: 1, metrics: true,
		flags: []string{"--transaction.abort.timed.out.transaction.cleanup.interval.ms=200"}})
	tg := target{seeds: c.seeds(), c: c}
	adm := newAdmin(t, tg.seeds)
	topic := newTopic(t, adm, 1, 1, nil)
	id := uniqueTopic("hung")
	ctx := ctxTimeout(t, time.Minute)

	hung := txnProducer(t, tg.seeds, id, kgo.TransactionTimeout(1500*time.Millisecond), kgo.RecordRetries(2))
	must(t, hung.BeginTransaction(), "begin")
	for _, v := range values("hung-", 5) {
		must(t, hung.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(), "produce")
	}
	committedEnd := func() (int64, int64) {
		hw := endOffset(t, adm, topic)
		ends, err := adm.ListCommittedOffsets(ctx, topic) // ListOffsets latest, read_committed: the LSO
		must(t, err, "ListCommittedOffsets")
		o, _ := ends.Lookup(topic, 0)
		return hw, o.Offset
	}
	if hw, lso := committedEnd(); hw != 5 || lso != 0 {
		t.Fatalf("open transaction: HW %d LSO %d, want 5 and 0", hw, lso)
	}
	producers, err := adm.DescribeProducers(ctx, kadm.TopicsSet{topic: {0: {}}})
	must(t, err, "DescribeProducers")
	if ps := producers.SortedProducers(); len(ps) != 1 || ps[0].CurrentTxnStartOffset != 0 {
		t.Fatalf("DescribeProducers with the transaction open: %+v", ps)
	}
	listed, err := adm.ListTransactions(ctx, nil, []string{"Ongoing"})
	must(t, err, "ListTransactions")
	if _, ok := listed[id]; !ok {
		t.Fatalf("ListTransactions Ongoing: %+v", listed)
	}
	if m := scrape(t, c.nodes[0]); m["kbroker_last_stable_offset_lag_messages"] != 5 || m["kbroker_transactions_open"] != 1 {
		t.Fatalf("metrics with the transaction open: lso lag %v, open %v",
			m["kbroker_last_stable_offset_lag_messages"], m["kbroker_transactions_open"])
	}
	waitFor(t, 30*time.Second, "the coordinator to abort the hung transaction", func() error {
		if hw, lso := committedEnd(); lso != hw || hw < 6 {
			return errors.New("the last stable offset is still held back")
		}
		return nil
	})
	described, err := adm.DescribeTransactions(ctx, id)
	must(t, err, "DescribeTransactions")
	if d, ok := described[id]; !ok || d.State != "CompleteAbort" {
		t.Fatalf("described %+v", described)
	}
	if m := scrape(t, c.nodes[0]); m["kbroker_transactions_timed_out_total"] != 1 || m["kbroker_transactions_producers_fenced_total"] != 1 ||
		m["kbroker_last_stable_offset_lag_messages"] != 0 {
		t.Fatalf("metrics after the timeout: timed out %v, fenced %v, lso lag %v", m["kbroker_transactions_timed_out_total"],
			m["kbroker_transactions_producers_fenced_total"], m["kbroker_last_stable_offset_lag_messages"])
	}
	err = hung.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("hung-late")}).FirstErr()
	if err == nil {
		t.Fatal("the timed-out producer is not fenced")
	}
	more := txnProducer(t, tg.seeds, uniqueTopic("after"))
	must(t, produceTxn(ctx, more, topic, []string{"after"}, true), "a transaction after the abort")
	if got := readValues(t, tg.seeds, topic, 1, 20*time.Second, true); len(got) != 1 || got[0] != "after" {
		t.Fatalf("read_committed after the timeout: %v", got)
	}
}

// Bad input gets Kafka's errors and writes nothing: markers from a stale
// coordinator or for a stale producer epoch, a produce with a stale epoch,
// a transactional produce to a partition not in the transaction, a control
// batch from a client, a transactional batch without a transactional id,
// EndTxn and AddPartitionsToTxn for an unknown id, a timeout above
// transaction.max.timeout.ms.
func TestTxnBadInput(t *testing.T) {
	tg := singleNode(t, "--transaction.max.timeout.ms=60000")
	adm := newAdmin(t, tg.seeds)
	topic := newTopic(t, adm, 1, 1, nil)
	// The transaction flow before KIP-890 part 2: a client that caps
	// Produce at v11, AddPartitionsToTxn at v3 and EndTxn at v3 (kgo
	// would send the newest versions otherwise).
	versions := kversion.Stable()
	versions.SetMaxKeyVersion(0, 11)
	versions.SetMaxKeyVersion(24, 3)
	versions.SetMaxKeyVersion(26, 3)
	cl := newClient(t, tg.seeds, kgo.MaxVersions(versions))
	ctx := ctxTimeout(t, time.Minute)
	id := uniqueTopic("bad")
	request := func(req kmsg.Request) kmsg.Response {
		t.Helper()
		resp, err := cl.Request(ctx, req)
		must(t, err, "%T", req)
		return resp
	}
	findTxnCoordinator(t, cl, id)

	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis = kmsg.StringPtr(id), 120000
	if code := request(init).(*kmsg.InitProducerIDResponse).ErrorCode; code != kerr.InvalidTransactionTimeout.Code {
		t.Fatalf("timeout above the maximum: code %d", code)
	}
	init.TransactionTimeoutMillis = 30000
	initProducer := func() *kmsg.InitProducerIDResponse {
		t.Helper()
		var ip *kmsg.InitProducerIDResponse
		waitFor(t, 30*time.Second, "InitProducerId", func() error {
			ip = request(init).(*kmsg.InitProducerIDResponse)
			return kerr.ErrorForCode(ip.ErrorCode)
		})
		return ip
	}
	initProducer()
	ip := initProducer() // epoch 1: the transaction below has an older epoch to be fenced with
	pid, epoch := ip.ProducerID, ip.ProducerEpoch

	end := kmsg.NewPtrEndTxnRequest()
	end.SetVersion(3) // the flow before KIP-890 part 2, as AddPartitionsToTxn v3 below
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = uniqueTopic("unknown"), 1234, 0, true
	if code := request(end).(*kmsg.EndTxnResponse).ErrorCode; code != kerr.InvalidProducerIDMapping.Code {
		t.Fatalf("EndTxn of an unknown id: code %d", code)
	}
	// A fresh request each time: kgo rewrites a v3 request it sends.
	addPartition := func(id string, pid int64, epoch int16) int16 {
		add := kmsg.NewPtrAddPartitionsToTxnRequest()
		add.TransactionalID, add.ProducerID, add.ProducerEpoch = id, pid, epoch
		add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: topic, Partitions: []int32{0}}}
		return request(add).(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode
	}
	if code := addPartition(uniqueTopic("unknown"), 1234, 0); code != kerr.InvalidProducerIDMapping.Code {
		t.Fatalf("AddPartitionsToTxn of an unknown id: code %d", code)
	}

	produceAt := func(version int16, txnID *string, b record.Batch) int16 {
		t.Helper()
		versions.SetMaxKeyVersion(0, version)
		req := kmsg.NewPtrProduceRequest()
		req.TransactionID, req.Acks, req.TimeoutMillis = txnID, -1, 10000
		req.Topics = []kmsg.ProduceRequestTopic{{Topic: topic, Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: b.Bytes()}}}}
		return request(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
	}
	produce := func(txnID *string, b record.Batch) int16 { return produceAt(11, txnID, b) }
	txnBatch := func(pid int64, epoch int16, seq int32) record.Batch {
		r := record.Record{Value: []byte("v")}
		return record.NewBatch(record.BatchHeader{PartitionLeaderEpoch: -1, Attributes: record.AttrTransactional,
			BaseTimestamp: time.Now().UnixMilli(), MaxTimestamp: time.Now().UnixMilli(),
			ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, RecordCount: 1}, record.AppendRecord(nil, &r))
	}
	// Not in the transaction: TRANSACTION_ABORTABLE from Produce v11 (KIP-1050),
	// INVALID_TXN_STATE for older clients.
	if code := produce(&id, txnBatch(pid, epoch, 0)); code != kerr.TransactionAbortable.Code {
		t.Fatalf("transactional produce v11 to a partition not in the transaction: code %d", code)
	}
	if code := produceAt(10, &id, txnBatch(pid, epoch, 0)); code != kerr.InvalidTxnState.Code {
		t.Fatalf("transactional produce v10 to a partition not in the transaction: code %d", code)
	}
	if code := produce(nil, txnBatch(pid, epoch, 0)); code != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("transactional batch without a transactional id: code %d", code)
	}
	marker := record.NewEndTxnMarkerBatch(pid, epoch, time.Now().UnixMilli(), record.EndTxnMarker{Type: record.ControlCommit})
	if code := produce(&id, marker); code != kerr.InvalidRecord.Code {
		t.Fatalf("control batch from a client: code %d", code)
	}
	if end := endOffset(t, adm, topic); end != 0 {
		t.Fatalf("refused produces wrote %d records", end)
	}

	// A real transaction, then markers and produces of the past.
	must(t, kerr.ErrorForCode(addPartition(id, pid, epoch)), "AddPartitionsToTxn")
	must(t, kerr.ErrorForCode(produce(&id, txnBatch(pid, epoch, 0))), "transactional produce")
	end.TransactionalID, end.ProducerID, end.ProducerEpoch = id, pid, epoch
	must(t, kerr.ErrorForCode(request(end).(*kmsg.EndTxnResponse).ErrorCode), "EndTxn")
	waitFor(t, 10*time.Second, "the commit marker", func() error {
		if end := endOffset(t, adm, topic); end != 2 {
			return errors.New("no marker yet")
		}
		return nil
	})
	ip = initProducer() // a new instance: epoch+1 at the coordinator
	if code := produce(&id, txnBatch(pid, epoch, 1)); code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("produce with the fenced epoch: code %d", code)
	}

	markers := kmsg.NewPtrWriteTxnMarkersRequest()
	markers.SetVersion(1)
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = pid, epoch-1, false, 0
	m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: topic, Partitions: []int32{0}}}
	markers.Markers = []kmsg.WriteTxnMarkersRequestMarker{m}
	code := request(markers).(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode
	if code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("marker with a stale producer epoch: code %d", code)
	}
	// The coordinator wrote the commit with its epoch (the partition's
	// leader epoch, 0 on a fresh single node): a marker from a lower one
	// is a stale coordinator's.
	markers.Markers[0].ProducerEpoch, markers.Markers[0].CoordinatorEpoch = ip.ProducerEpoch, -1
	code = request(markers).(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode
	if code != kerr.TransactionCoordinatorFenced.Code {
		t.Fatalf("marker from a stale coordinator: code %d", code)
	}
	if end := endOffset(t, adm, topic); end != 2 {
		t.Fatalf("refused markers and produces wrote: end offset %d, want 2", end)
	}
}

// findTxnCoordinator waits until the transaction coordinator of id
// answers (the state topic is created on the first FindCoordinator).
func findTxnCoordinator(t *testing.T, cl *kgo.Client, id string) {
	t.Helper()
	waitFor(t, 30*time.Second, "the transaction coordinator", func() error {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType, req.CoordinatorKeys = 1, []string{id}
		resp, err := req.RequestWith(context.Background(), cl)
		if err != nil {
			return err
		}
		return kerr.ErrorForCode(resp.Coordinators[0].ErrorCode)
	})
}
