package compat

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/admin"
)

// kbroker transactions (KIP-664's kafka-transactions.sh): list shows a
// transaction open on a partition with its coordinator's view (Ongoing,
// not hanging), find-hanging leaves it out, and abort writes its ABORT
// marker from outside: the last stable offset moves on and read_committed
// never returns its records; a second abort finds nothing open.
func TestTxnAdminAbort(t *testing.T) {
	tg := singleNode(t)
	adm := newAdmin(t, tg.seeds)
	topic := newTopic(t, adm, 1, 1, nil)
	id := uniqueTopic("admin-abort")
	ctx := ctxTimeout(t, time.Minute)

	open := txnProducer(t, tg.seeds, id, kgo.RecordRetries(2))
	must(t, open.BeginTransaction(), "begin")
	for _, v := range values("open-", 3) {
		must(t, open.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(), "produce")
	}
	var listed []admin.OpenTransaction
	kbjson(t, tg.seeds, &listed, "", "transactions", "list", topic)
	if len(listed) != 1 || listed[0].StartOffset != 0 || listed[0].TransactionalID != id ||
		listed[0].CoordinatorState != "Ongoing" || listed[0].Hanging {
		t.Fatalf("transactions list: %+v", listed)
	}
	var hanging []admin.OpenTransaction
	kbjson(t, tg.seeds, &hanging, "", "transactions", "find-hanging", topic, "--max-transaction-timeout", "0s")
	if len(hanging) != 0 {
		t.Fatalf("find-hanging lists a transaction its coordinator runs: %+v", hanging)
	}

	kbjson(t, tg.seeds, nil, "", "transactions", "abort", "--topic", topic, "--partition", "0", "--start-offset", "0")
	waitFor(t, 20*time.Second, "the last stable offset to pass the aborted transaction", func() error {
		ends, err := adm.ListCommittedOffsets(ctx, topic)
		if err != nil {
			return err
		}
		if o, _ := ends.Lookup(topic, 0); o.Offset != endOffset(t, adm, topic) || o.Offset < 4 {
			return fmt.Errorf("LSO %d", o.Offset)
		}
		return nil
	})
	kbjson(t, tg.seeds, &listed, "", "transactions", "list", topic)
	if len(listed) != 0 {
		t.Fatalf("still open after the abort: %+v", listed)
	}
	kbfails(t, tg.seeds, 1, "no transaction open at that offset",
		"transactions", "abort", "--topic", topic, "--partition", "0", "--start-offset", strconv.Itoa(0))

	more := txnProducer(t, tg.seeds, uniqueTopic("after"))
	must(t, produceTxn(ctx, more, topic, []string{"after"}, true), "a transaction after the abort")
	if got := readValues(t, tg.seeds, topic, 1, 20*time.Second, true); len(got) != 1 || got[0] != "after" {
		t.Fatalf("read_committed after the abort: %v", got)
	}
}
