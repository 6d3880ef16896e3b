package compat

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/record"
)

// txnProducer is a franz-go transactional producer.
func txnProducer(t *testing.T, seeds []string, id string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return newClient(t, seeds, append([]kgo.Opt{
		kgo.TransactionalID(id), kgo.TransactionTimeout(30 * time.Second),
		kgo.RecordRetries(20), kgo.RequestRetries(20),
	}, opts...)...)
}

// produceTxn produces values in one transaction and commits or aborts it.
func produceTxn(ctx context.Context, cl *kgo.Client, topic string, values []string, commit bool) error {
	if err := cl.BeginTransaction(); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	for _, v := range values {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
			cl.EndTransaction(ctx, kgo.TryAbort)
			return fmt.Errorf("produce %s: %w", v, err)
		}
	}
	return cl.EndTransaction(ctx, kgo.TransactionEndTry(commit))
}

// readValues reads topic from the start until it has want records (or d
// passes: then it reports what it got) at the isolation level given, and
// then for another second: a record beyond want is a duplicate.
func readValues(t *testing.T, seeds []string, topic string, want int, d time.Duration, committed bool) []string {
	t.Helper()
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	cl := newClient(t, seeds, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(iso), kgo.FetchMaxWait(200*time.Millisecond))
	return collectValues(t, want, d, func(ctx context.Context) []string {
		fs := cl.PollFetches(ctx)
		fs.EachError(func(topic string, p int32, err error) {
			if ctx.Err() == nil && !kerr.IsRetriable(err) {
				t.Fatalf("fetch %s-%d: %v", topic, p, err)
			}
		})
		var out []string
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
		return out
	})
}

// collectValues calls poll until it returned want values in all, then for
// another second (a value beyond want is one too many), or until d passes.
func collectValues(t *testing.T, want int, d time.Duration, poll func(context.Context) []string) []string {
	t.Helper()
	ctx := ctxTimeout(t, d)
	var out []string
	extra := ctx
	for ctx.Err() == nil && extra.Err() == nil {
		if len(out) >= want && extra == ctx {
			var cancel context.CancelFunc
			extra, cancel = context.WithTimeout(ctx, time.Second)
			defer cancel()
		}
		out = append(out, poll(extra)...)
	}
	return out
}

// A franz-go transactional producer commits and aborts on one broker:
// read_committed consumers see only the committed records, read_uncommitted
// ones see every record.
func TestTxnCommitAbortSingleNode(t *testing.T) {
	tg := singleNode(t)
	adm := newAdmin(t, tg.seeds)
	topic := newTopic(t, adm, 3, 1, nil)
	cl := txnProducer(t, tg.seeds, uniqueTopic("txn"))
	ctx := ctxTimeout(t, time.Minute)
	must(t, produceTxn(ctx, cl, topic, values("c1-", 10), true), "first transaction")
	must(t, produceTxn(ctx, cl, topic, values("a1-", 10), false), "aborted transaction")
	must(t, produceTxn(ctx, cl, topic, values("c2-", 10), true), "second transaction")

	got := readValues(t, tg.seeds, topic, 20, 20*time.Second, true)
	if len(got) != 20 {
		t.Fatalf("read_committed got %d records, want 20: %v", len(got), got)
	}
	for _, v := range got {
		if v[0] == 'a' {
			t.Fatalf("read_committed returned aborted record %s", v)
		}
	}
	if got := readValues(t, tg.seeds, topic, 30, 20*time.Second, false); len(got) != 30 {
		t.Fatalf("read_uncommitted got %d records, want 30", len(got))
	}
}

// Transactional batches pipelined on one connection keep their order. A
// opens the transaction on partition 0 and waits for its verification; B,
// written right behind it, adds the other partitions partition 0's leader
// leads (its verification writes to the transaction log); F, written
// during A's handling, may find partition 0's transaction already open,
// yet must still wait behind B: appended first, its sequence would come
// before B's (OUT_OF_ORDER_SEQUENCE_NUMBER, which a transactional producer
// cannot recover from).
func TestTxnPipelinedBatchesKeepOrder(t *testing.T) {
	t.Parallel()
	c := startCluster(t, clusterOpts{brokers: 3})
	seeds := c.seeds()
	adm := newAdmin(t, seeds)
	topic := newTopic(t, adm, 9, 3, nil)
	cl := newClient(t, seeds)
	ctx := ctxTimeout(t, time.Minute)
	var leader int32
	var led []int32
	waitFor(t, 30*time.Second, "the topic's leaders", func() error {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return err
		}
		ps := md.Topics[topic].Partitions
		if len(ps) != 9 || ps[0].Leader < 0 {
			return fmt.Errorf("%d partitions known", len(ps))
		}
		leader, led = ps[0].Leader, nil
		for _, p := range ps.Sorted() {
			if p.Leader == leader {
				led = append(led, p.Partition)
			}
		}
		return nil
	})
	var addr string
	for _, n := range c.nodes {
		if n.id == leader {
			addr = n.clientAddr
		}
	}
	nc, err := net.Dial("tcp", addr)
	must(t, err, "dial the leader")
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(time.Minute))
	rd := bufio.NewReader(nc)
	corr := int32(0)
	for round := range 20 {
		id := uniqueTopic("pipe")
		findTxnCoordinator(t, cl, id)
		init := kmsg.NewPtrInitProducerIDRequest()
		init.TransactionalID, init.TransactionTimeoutMillis = &id, 30000
		var ip *kmsg.InitProducerIDResponse
		waitFor(t, 30*time.Second, "InitProducerId", func() error {
			resp, err := init.RequestWith(ctx, cl)
			if err != nil {
				return err
			}
			ip = resp
			return kerr.ErrorForCode(ip.ErrorCode)
		})
		seqs := map[int32]int32{}
		send := func(parts ...int32) {
			req := kmsg.NewPtrProduceRequest()
			req.SetVersion(12)
			req.TransactionID, req.Acks, req.TimeoutMillis = &id, -1, 10000
			rt := kmsg.ProduceRequestTopic{Topic: topic}
			for _, p := range parts {
				r := record.Record{Value: []byte("v")}
				now := time.Now().UnixMilli()
				b := record.NewBatch(record.BatchHeader{PartitionLeaderEpoch: -1, Attributes: record.AttrTransactional,
					BaseTimestamp: now, MaxTimestamp: now, ProducerID: ip.ProducerID, ProducerEpoch: ip.ProducerEpoch,
					BaseSequence: seqs[p], RecordCount: 1}, record.AppendRecord(nil, &r))
				seqs[p]++
				rt.Partitions = append(rt.Partitions, kmsg.ProduceRequestTopicPartition{Partition: p, Records: b.Bytes()})
			}
			req.Topics = []kmsg.ProduceRequestTopic{rt}
			corr++
			writeRequest(t, nc, corr, req)
		}
		// F goes out at different points of A's handling.
		send(0)      // A
		send(led...) // B
		time.Sleep(time.Duration(round%10) * 200 * time.Microsecond)
		send(0) // F
		for _, name := range []string{"A", "B", "F"} {
			frame, err := readFrame(rd)
			must(t, err, "round %d: %s", round, name)
			resp := kmsg.NewPtrProduceResponse()
			resp.SetVersion(12)
			must(t, resp.ReadFrom(frame[5:]), "round %d: %s: decode", round, name) // correlation id, header tags
			for _, p := range resp.Topics[0].Partitions {
				must(t, kerr.ErrorForCode(p.ErrorCode), "round %d: %s: partition %d", round, name, p.Partition)
			}
		}
	}
}
