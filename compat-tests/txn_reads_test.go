package compat

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Transactions as the other read paths see them: share groups, fetch
// sessions and followers serving consumers (issue 14 with issues 16 and 17).

// shareConsumer is a member of share group group reading topic.
func shareConsumer(t *testing.T, seeds []string, group, topic string) *kgo.Client {
	return newClient(t, seeds, kgo.ConsumeTopics(topic), kgo.ShareGroup(group), kgo.FetchMaxWait(300*time.Millisecond))
}

// shareValues consumes with a share group member (accepting every record)
// until it holds want values, then for another second (a record beyond want
// is one too many), or until d passes.
func shareValues(t *testing.T, cl *kgo.Client, want int, d time.Duration) []string {
	t.Helper()
	return collectValues(t, want, d, func(ctx context.Context) []string {
		var out []string
		for _, r := range cl.PollFetches(ctx).Records() {
			out = append(out, string(r.Value))
			r.Ack(kgo.AckAccept)
		}
		return out
	})
}

// countPrefixes counts values by their prefix up to the first '-'.
func countPrefixes(values []string) map[string]int {
	out := map[string]int{}
	for _, v := range values {
		p, _, _ := strings.Cut(v, "-")
		out[p]++
	}
	return out
}

// A share group reads a topic with committed, aborted and open
// transactions: with share.isolation.level=read_committed it receives
// exactly the committed records, nothing aborted and nothing past the last
// stable offset, and the open transaction's records once it commits; a
// group at read_uncommitted (Kafka's default) receives them all (issue
// 16's remaining item).
func TestTxnShareGroupReadCommitted(t *testing.T) {
	t.Parallel()
	tg := singleNode(t, shareFlags...)
	adm := newAdmin(t, tg.seeds)
	topic := newTopic(t, adm, 2, 1, nil)
	admin := newClient(t, tg.seeds)
	committed, uncommitted := uniqueTopic("share-rc"), uniqueTopic("share-ru")
	setShareConfigs(t, admin, committed, "share.auto.offset.reset", "earliest", "share.isolation.level", "read_committed")
	setShareConfigs(t, admin, uncommitted, "share.auto.offset.reset", "earliest")

	ctx := ctxTimeout(t, 2*time.Minute)
	cl := txnProducer(t, tg.seeds, uniqueTopic("share-txn"))
	must(t, produceTxn(ctx, cl, topic, values("c1-", 10), true), "first transaction")
	must(t, produceTxn(ctx, cl, topic, values("a1-", 10), false), "aborted transaction")
	must(t, produceTxn(ctx, cl, topic, values("c2-", 10), true), "second transaction")
	// An open transaction: its records stay past the last stable offset.
	must(t, cl.BeginTransaction(), "begin the open transaction")
	for _, v := range values("o1-", 5) {
		must(t, cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(), "produce %s", v)
	}

	rc := shareConsumer(t, tg.seeds, committed, topic)
	got := countPrefixes(shareValues(t, rc, 20, 30*time.Second))
	if got["c1"] != 10 || got["c2"] != 10 || len(got) != 2 {
		t.Fatalf("read_committed share group received %v, want 10 c1 and 10 c2 only", got)
	}
	if got := countPrefixes(shareValues(t, shareConsumer(t, tg.seeds, uncommitted, topic), 35, 30*time.Second)); got["c1"] != 10 || got["a1"] != 10 ||
		got["c2"] != 10 || got["o1"] != 5 || len(got) != 4 {
		t.Fatalf("read_uncommitted share group received %v, want every record (c1, a1, c2 and the open o1)", got)
	}
	must(t, cl.EndTransaction(ctx, kgo.TryCommit), "commit the open transaction")
	if got := countPrefixes(shareValues(t, rc, 5, 30*time.Second)); got["o1"] != 5 || len(got) != 1 {
		t.Fatalf("after the commit the read_committed share group received %v, want the 5 o1 records", got)
	}
}

// An incremental fetch session at read_committed (KIP-227): the partition
// is in the incremental answer when a transaction's records move the HW
// with the LSO held at the transaction's start (no records: they are past
// the LSO), and again when its commit marker moves the LSO, now with the
// records. The session's answers carry the real LSO.
func TestTxnIncrementalFetchSeesLSO(t *testing.T) {
	tg := singleNode(t)
	adm := newAdmin(t, tg.seeds)
	topic := newTopic(t, adm, 1, 1, nil)
	ctx := ctxTimeout(t, time.Minute)
	cl := txnProducer(t, tg.seeds, uniqueTopic("session-txn"))
	must(t, produceTxn(ctx, cl, topic, values("c1-", 3), true), "first transaction") // offsets 0-2, marker 3

	raw := newClient(t, tg.seeds)
	md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, raw)
	must(t, err, "metadata")
	var topicID [16]byte
	for _, mt := range md.Topics {
		if mt.Topic != nil && *mt.Topic == topic {
			topicID = mt.TopicID
		}
	}
	sessionID, epoch := int32(0), int32(0)
	// fetch sends the partition at offset when it moved since the last
	// request (an incremental fetch names only what changed).
	lastOffset := int64(-1)
	fetch := func(offset int64, maxWait int32) kmsg.FetchResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(13)
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, maxWait, 1, 1<<20
		req.IsolationLevel = 1
		req.SessionID, req.SessionEpoch = sessionID, epoch
		if offset != lastOffset {
			lastOffset = offset
			ft := kmsg.NewFetchRequestTopic()
			ft.TopicID = topicID
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch, fp.LastFetchedEpoch = offset, 1<<20, -1, -1
			ft.Partitions = append(ft.Partitions, fp)
			req.Topics = append(req.Topics, ft)
		}
		resp, err := req.RequestWith(ctx, raw)
		must(t, err, "fetch")
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			t.Fatalf("fetch session %d epoch %d: %v", sessionID, epoch, err)
		}
		sessionID, epoch = resp.SessionID, epoch+1
		if len(resp.Topics) == 0 {
			return kmsg.FetchResponseTopicPartition{Partition: -1}
		}
		return resp.Topics[0].Partitions[0]
	}
	p := fetch(0, 0) // the full fetch opens the session
	if sessionID == 0 || p.ErrorCode != 0 || p.HighWatermark != 4 || p.LastStableOffset != 4 || len(p.RecordBatches) == 0 {
		t.Fatalf("full fetch: session %d, partition %+v; want a session, HW = LSO = 4 and the committed records", sessionID, p)
	}
	// Nothing changed: the incremental answer leaves the partition out.
	if p := fetch(4, 100); p.Partition >= 0 && len(p.RecordBatches) == 0 {
		p = fetch(4, 100) // the answer to the moved offset may name it once more
	}
	if p := fetch(4, 100); p.Partition >= 0 {
		t.Fatalf("an incremental fetch with nothing new answered the partition: %+v", p)
	}

	must(t, cl.BeginTransaction(), "begin")
	for _, v := range values("o1-", 2) { // offsets 4-5, open
		must(t, cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(), "produce %s", v)
	}
	p = fetch(4, 500)
	if p.Partition != 0 || p.HighWatermark != 6 || p.LastStableOffset != 4 || len(p.RecordBatches) != 0 {
		t.Fatalf("incremental fetch with a transaction open: %+v; want the partition with HW 6, LSO 4 and no records", p)
	}
	must(t, cl.EndTransaction(ctx, kgo.TryCommit), "commit") // marker at 6
	p = fetch(4, 2000)
	if p.Partition != 0 || p.HighWatermark != 7 || p.LastStableOffset != 7 || len(p.RecordBatches) == 0 {
		t.Fatalf("incremental fetch after the commit: %+v; want the partition with HW = LSO = 7 and the records", p)
	}
}

// A follower serving a read_committed consumer (KIP-392, client.rack)
// answers from its own last stable offset and aborted-transaction index:
// the consumer, reading only from the rack-b follower, receives exactly
// the committed records.
func TestTxnReadCommittedFromFollower(t *testing.T) {
	needOwnCluster(t)
	t.Parallel()
	c := startCluster(t, clusterOpts{brokers: 3, metrics: true, nodeFlags: rackFlags,
		flags: replicationFlags("--replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector",
			"--min.insync.replicas=2")})
	seeds := c.seeds()
	adm := newAdmin(t, seeds)
	topic := newTopic(t, adm, 3, 3, nil)
	c.waitTopicEverywhere(topic, 3, 3)
	ctx := ctxTimeout(t, 2*time.Minute)
	cl := txnProducer(t, seeds, uniqueTopic("follower-txn"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	for i := range 3 {
		must(t, produceTxn(ctx, cl, topic, values(fmt.Sprintf("c%d-", i), 12), true), "committed transaction %d", i)
		must(t, produceTxn(ctx, cl, topic, values(fmt.Sprintf("a%d-", i), 12), false), "aborted transaction %d", i)
	}

	consumer := newClient(t, seeds, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.Rack("b"), kgo.FetchMaxWait(200*time.Millisecond))
	var mu sync.Mutex
	var got []string
	waitFor(t, 60*time.Second, "the committed records", func() error {
		fs := consumer.PollFetches(ctx)
		mu.Lock()
		defer mu.Unlock()
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		if len(got) < 36 {
			return fmt.Errorf("%d records", len(got))
		}
		return nil
	})
	extra, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	consumer.PollFetches(extra).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	counts := countPrefixes(got)
	if len(got) != 36 || counts["c0"] != 12 || counts["c1"] != 12 || counts["c2"] != 12 {
		t.Fatalf("read_committed from the follower received %v (%d records), want the 36 committed ones", counts, len(got))
	}
	follower := fmt.Sprintf(`kbroker_consumer_fetch_bytes_total{replica="follower",topic=%q}`, topic)
	leader := fmt.Sprintf(`kbroker_consumer_fetch_bytes_total{replica="leader",topic=%q}`, topic)
	var servedBy []int32
	for _, n := range c.nodes {
		m := scrape(t, n)
		if n.id != 2 && m[leader]+m[follower] > 0 {
			t.Errorf("broker %d (rack %s) served the rack-b consumer", n.id, testRacks[n.id])
		}
		if m[follower] > 0 {
			servedBy = append(servedBy, n.id)
		}
	}
	if !slices.Contains(servedBy, 2) {
		t.Fatalf("the rack-b broker served no consumer bytes as a follower (followers that served: %v)", servedBy)
	}
}

// transactionEpochs runs three transactions (commit, abort, commit) with a
// new transactional producer and returns its producer epoch after
// InitProducerId and after the transactions.
func transactionEpochs(t *testing.T, seeds []string, topic string) (before, after int16) {
	t.Helper()
	ctx := ctxTimeout(t, time.Minute)
	cl := txnProducer(t, seeds, uniqueTopic("tv"))
	_, before, err := cl.ProducerID(ctx)
	must(t, err, "InitProducerId")
	must(t, produceTxn(ctx, cl, topic, values("c-", 5), true), "first transaction")
	must(t, produceTxn(ctx, cl, topic, values("a-", 5), false), "aborted transaction")
	must(t, produceTxn(ctx, cl, topic, values("c-", 5), true), "last transaction")
	_, after, err = cl.ProducerID(ctx)
	must(t, err, "producer id after the transactions")
	return before, after
}

// transaction.version decides which flow clients use (KIP-890): at 2, as a
// new cluster finalizes it, franz-go ends each transaction with EndTxn v5
// and the coordinator bumps the producer's epoch every time; after
// UpdateFeatures lowers it to 1, a new client keeps the TV1 flow (EndTxn
// v4, Produce v11 behind AddPartitionsToTxn), the epoch stays, and
// read_committed still sees only the committed records. As in Kafka, the
// broker follows the versions each request uses.
func TestTxnTransactionVersionDowngrade(t *testing.T) {
	tg := singleNode(t)
	adm := newAdmin(t, tg.seeds)
	topic := newTopic(t, adm, 2, 1, nil)
	if before, after := transactionEpochs(t, tg.seeds, topic); after != before+3 {
		t.Fatalf("transaction.version 2: producer epoch %d after three transactions begun at %d, want one bump per transaction", after, before)
	}

	admin := newClient(t, tg.seeds)
	ctx := ctxTimeout(t, time.Minute)
	req := kmsg.NewPtrUpdateFeaturesRequest()
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = "transaction.version", 1, 2 // safe downgrade
	req.FeatureUpdates, req.TimeoutMillis = []kmsg.UpdateFeaturesRequestFeatureUpdate{u}, 15000
	resp, err := req.RequestWith(ctx, admin)
	must(t, err, "UpdateFeatures")
	must(t, kerr.ErrorForCode(resp.ErrorCode), "UpdateFeatures transaction.version 1")
	if _, f := apiVersionFeatures(ctx, t, admin); f["transaction.version"] != 1 {
		t.Fatalf("transaction.version finalized at %d after the downgrade, want 1", f["transaction.version"])
	}
	if before, after := transactionEpochs(t, tg.seeds, topic); after != before {
		t.Fatalf("transaction.version 1: producer epoch %d after three transactions begun at %d, want no bump", after, before)
	}
	if got := countPrefixes(readValues(t, tg.seeds, topic, 20, 20*time.Second, true)); got["c"] != 20 || len(got) != 1 {
		t.Fatalf("read_committed got %v, want the 20 committed records of both runs", got)
	}
}
