package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The verification errors a producer gets, by Produce version, as Kafka's
// ReplicaManager translates them (and TxnOffsetCommit's, as its group
// coordinator does).
func TestProduceVerifyError(t *testing.T) {
	for _, c := range []struct {
		code    *kerr.Error
		version int16
		want    *kerr.Error
	}{
		{kerr.ProducerFenced, 12, kerr.InvalidProducerEpoch},
		{kerr.TransactionAbortable, 10, kerr.InvalidTxnState},
		{kerr.TransactionAbortable, 11, kerr.TransactionAbortable},
		{kerr.InvalidTxnState, 12, kerr.InvalidTxnState},
		{kerr.CoordinatorNotAvailable, 12, kerr.NotEnoughReplicas},
		{kerr.NotCoordinator, 3, kerr.NotEnoughReplicas},
		{kerr.CoordinatorLoadInProgress, 9, kerr.NotEnoughReplicas},
		{kerr.NetworkException, 12, kerr.NotEnoughReplicas},
		{kerr.ConcurrentTransactions, 11, kerr.NotEnoughReplicas},
		{kerr.ConcurrentTransactions, 12, kerr.ConcurrentTransactions},
		{kerr.InvalidProducerIDMapping, 12, kerr.InvalidProducerIDMapping},
	} {
		if got, _ := produceVerifyError(c.code.Code, c.version); got != c.want.Code {
			t.Errorf("%s at Produce v%d: got %s, want %s", c.code.Message, c.version, kerr.ErrorForCode(got), c.want.Message)
		}
	}
	if got, _ := produceVerifyError(0, 12); got != 0 {
		t.Errorf("no error became %d", got)
	}
	for _, c := range []struct {
		code    *kerr.Error
		version int16
		want    *kerr.Error
	}{
		{kerr.CoordinatorNotAvailable, 5, kerr.CoordinatorNotAvailable},
		{kerr.ConcurrentTransactions, 3, kerr.CoordinatorNotAvailable},
		{kerr.TransactionAbortable, 4, kerr.InvalidTxnState},
		{kerr.TransactionAbortable, 5, kerr.TransactionAbortable},
		{kerr.ProducerFenced, 5, kerr.InvalidProducerEpoch},
	} {
		if got := txnCommitVerifyError(c.code.Code, c.version); got != c.want.Code {
			t.Errorf("TxnOffsetCommit v%d, %s: got %s, want %s", c.version, c.code.Message, kerr.ErrorForCode(got), c.want.Message)
		}
	}
}
