package compat

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// A second client family: sarama's transactional producer (the flow before
// KIP-890 part 2: AddPartitionsToTxn v0-v3 from the client, EndTxn <= v3)
// commits and aborts, and read_committed consumers of both families see
// only committed records, franz-go's and sarama's alike.
func TestTxnSaramaCommitAbort(t *testing.T) {
	tg := singleNode(t)
	adm := newAdmin(t, tg.seeds)
	topic := newTopic(t, adm, 2, 1, nil)

	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_6_0_0
	cfg.ClientID = "kbroker-txn-test"
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Transaction.ID = uniqueTopic("sarama-txn")
	cfg.Producer.Transaction.Retry.Backoff = 50 * time.Millisecond
	cfg.Net.MaxOpenRequests = 1
	cfg.Metadata.Retry.Backoff = 100 * time.Millisecond
	producer, err := sarama.NewSyncProducer(tg.seeds, cfg)
	must(t, err, "sarama transactional producer")
	defer producer.Close()
	txn := func(prefix string, commit bool) {
		t.Helper()
		must(t, producer.BeginTxn(), "sarama BeginTxn")
		for _, v := range values(prefix, 10) {
			_, _, err := producer.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(v)})
			must(t, err, "sarama produce %s", v)
		}
		if commit {
			must(t, producer.CommitTxn(), "sarama CommitTxn")
		} else {
			must(t, producer.AbortTxn(), "sarama AbortTxn")
		}
	}
	txn("s-commit1-", true)
	txn("s-abort-", false)
	txn("s-commit2-", true)

	// franz-go's transactions in the same partitions, interleaved.
	cl := txnProducer(t, tg.seeds, uniqueTopic("kgo-txn"))
	ctx := ctxTimeout(t, time.Minute)
	must(t, produceTxn(ctx, cl, topic, values("k-abort-", 10), false), "franz-go aborted transaction")
	must(t, produceTxn(ctx, cl, topic, values("k-commit-", 10), true), "franz-go transaction")

	want := slices.Concat(values("s-commit1-", 10), values("s-commit2-", 10), values("k-commit-", 10))
	slices.Sort(want)
	got := readValues(t, tg.seeds, topic, len(want), 20*time.Second, true)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("franz-go read_committed read %d records, want %d: %v", len(got), len(want), got)
	}
	got = saramaReadCommitted(t, tg.seeds, topic, 2, len(want))
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("sarama read_committed read %d records, want %d: %v", len(got), len(want), got)
	}
}

// saramaReadCommitted reads want records of topic's partitions with a
// read_committed sarama consumer (and a second more, to see extras).
func saramaReadCommitted(t *testing.T, seeds []string, topic string, partitions int32, want int) []string {
	t.Helper()
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_6_0_0
	cfg.Consumer.IsolationLevel = sarama.ReadCommitted
	cfg.Consumer.MaxWaitTime = 200 * time.Millisecond
	consumer, err := sarama.NewConsumer(seeds, cfg)
	must(t, err, "sarama consumer")
	defer consumer.Close()
	msgs := make(chan string, want+100)
	errs := make(chan error, 16)
	for p := range partitions {
		pc, err := consumer.ConsumePartition(topic, p, sarama.OffsetOldest)
		must(t, err, "sarama ConsumePartition %d", p)
		defer pc.AsyncClose()
		go func() {
			for m := range pc.Messages() {
				msgs <- string(m.Value)
			}
		}()
		go func() {
			for e := range pc.Errors() {
				errs <- e
			}
		}()
	}
	ctx := ctxTimeout(t, 20*time.Second)
	var got []string
	var extra <-chan time.Time
	for {
		select {
		case v := <-msgs:
			got = append(got, v)
			if len(got) == want {
				extra = time.After(time.Second)
			}
		case err := <-errs:
			if !strings.Contains(err.Error(), "retriable") {
				t.Fatalf("sarama consumer: %v", err)
			}
		case <-extra:
			return got
		case <-ctx.Done():
			t.Fatalf("sarama read %d of %d records: %v", len(got), want, fmt.Sprint(got))
			return nil
		}
	}
}
