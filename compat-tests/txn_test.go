package compat

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
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
	ctx := ctxTimeout(t, d)
	var out []string
	extra := ctx
	for ctx.Err() == nil && extra.Err() == nil {
		if len(out) >= want && extra == ctx {
			var cancel context.CancelFunc
			extra, cancel = context.WithTimeout(ctx, time.Second)
			defer cancel()
		}
		fs := cl.PollFetches(extra)
		fs.EachError(func(topic string, p int32, err error) {
			if extra.Err() == nil && !kerr.IsRetriable(err) {
				t.Fatalf("fetch %s-%d: %v", topic, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
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
