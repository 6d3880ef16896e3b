package compat

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Transactions under the StandardAuthorizer, as Kafka: a transactional id
// needs WRITE (InitProducerId answers TRANSACTIONAL_ID_AUTHORIZATION_FAILED
// without it) and DESCRIBE to be found; WriteTxnMarkers is for brokers only
// (CLUSTER_ACTION): a client's markers are refused and nothing is written.
func TestTxnACLs(t *testing.T) {
	sc := startSecureCluster(t, secureOpts{properties: []string{"allow.everyone.if.no.acl.found=false"}})
	adm := sc.admin()
	topic := uniqueTopic("txn-acl")
	newTopicNamed(t, adm, topic)
	id := uniqueTopic("alice-txn")
	createACLs(t, adm, kadm.NewACLs().Allow("User:alice").Topics(topic).Operations(kadm.OpWrite, kadm.OpDescribe, kadm.OpRead))
	ctx := ctxTimeout(t, time.Minute)

	alice := sc.client(0, append(sc.plain("alice", alicePassword), kgo.TransactionalID(id), kgo.RecordRetries(2))...)
	err := alice.BeginTransaction()
	if err == nil {
		err = alice.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("denied")}).FirstErr()
	}
	if !errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
		t.Fatalf("a transaction without WRITE on its id: %v", err)
	}
	alice.Close()

	createACLs(t, adm, kadm.NewACLs().Allow("User:alice").TransactionalIDs(id).Operations(kadm.OpWrite, kadm.OpDescribe))
	alice = sc.client(0, append(sc.plain("alice", alicePassword), kgo.TransactionalID(id), kgo.RecordRetries(20))...)
	defer alice.Close()
	must(t, produceTxn(ctx, alice, topic, []string{"allowed"}, true), "alice's transaction with WRITE on her id")

	req := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = 1, 0, true, 1000
	m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: topic, Partitions: []int32{0}}}
	req.Markers = append(req.Markers, m)
	// EndTxn is answered once PrepareCommit is written; the commit marker
	// lands after it. Wait for it (the record and its marker: end offset 2)
	// so that only a refused marker could move the end offset below.
	waitFor(t, 30*time.Second, "alice's commit marker", func() error {
		if end := endOffset(t, adm, topic); end != 2 {
			return fmt.Errorf("end offset %d, want 2", end)
		}
		return nil
	})
	before := endOffset(t, adm, topic)
	resp, err := alice.Request(ctx, req)
	must(t, err, "WriteTxnMarkers")
	if code := resp.(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode; code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("WriteTxnMarkers from a client: code %d, want CLUSTER_AUTHORIZATION_FAILED", code)
	}
	if after := endOffset(t, adm, topic); after != before {
		t.Fatalf("a refused marker was written: end offset %d -> %d", before, after)
	}
}
