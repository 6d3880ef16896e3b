package txn

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/broker/group"
)

// Record is one __transaction_state record; a nil Value is a tombstone. It
// is group.Record, so that the broker's adapter of an internal topic
// partition serves both coordinators.
type Record = group.Record

// Versions of the __transaction_state formats (Kafka's TransactionLogKey
// and TransactionLogValue). The key version doubles as the record type:
// Kafka skips keys of any other version.
const (
	keyVersion          int16 = 0
	valueVersionLegacy  int16 = 0 // finalized transaction.version 0: not flexible
	valueVersionCurrent int16 = 1 // transaction.version 1+: flexible, tagged fields
)

var (
	errUnknownKeyVersion = errors.New("txn: unknown __transaction_state key version")
	errCorruptRecord     = errors.New("txn: corrupt __transaction_state record")
)

// encodeKey returns TransactionLogKey v0: | int16 0 | int16 len | id |.
func encodeKey(id string) []byte {
	k := kmsg.TxnMetadataKey{Version: keyVersion, TransactionalID: id}
	return k.AppendTo(nil)
}

// decodeKey parses a key; errUnknownKeyVersion for other record types.
func decodeKey(key []byte) (string, error) {
	if len(key) < 2 {
		return "", fmt.Errorf("%w: key of %d bytes", errCorruptRecord, len(key))
	}
	if v := int16(binary.BigEndian.Uint16(key)); v != keyVersion {
		return "", fmt.Errorf("%w %d", errUnknownKeyVersion, v)
	}
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(key); err != nil {
		return "", fmt.Errorf("%w: key: %v", errCorruptRecord, err)
	}
	return k.TransactionalID, nil
}

// encodeValue returns the TransactionLogValue of t at version v. Empty
// transactions have a null partition list, as Kafka writes them.
func encodeValue(t *txnState, v int16) []byte {
	val := kmsg.NewTxnMetadataValue()
	val.Version = v
	val.ProducerID, val.ProducerEpoch = t.producerID, t.producerEpoch
	val.PreviousProducerID, val.NextProducerID = t.prevProducerID, t.nextProducerID
	val.TimeoutMillis, val.State = t.timeoutMs, kmsg.TransactionState(t.state)
	val.LastUpdateTimestamp, val.StartTimestamp = t.lastUpdateMs, t.startMs
	val.ClientTransactionVersion = int16(t.clientVersion)
	if t.state != Empty {
		val.Topics = []kmsg.TxnMetadataValueTopic{}
		for topic, partitions := range byTopic(t.sortedPartitions()) {
			val.Topics = append(val.Topics, kmsg.TxnMetadataValueTopic{Topic: topic, Partitions: partitions})
		}
	}
	return val.AppendTo(nil)
}

// decodeValue parses a value; nil for a tombstone. As Kafka's
// readTxnRecordValue, partitions of an Empty transaction are ignored and
// lastProducerEpoch (not persisted) is -1.
func decodeValue(value []byte) (*txnState, error) {
	if value == nil {
		return nil, nil
	}
	val := kmsg.NewTxnMetadataValue()
	if err := val.ReadFrom(value); err != nil {
		return nil, fmt.Errorf("%w: value: %v", errCorruptRecord, err)
	}
	switch {
	case val.Version < valueVersionLegacy || val.Version > valueVersionCurrent:
		return nil, fmt.Errorf("%w: value version %d", errCorruptRecord, val.Version)
	case !State(val.State).known():
		return nil, fmt.Errorf("%w: transaction status %d", errCorruptRecord, val.State)
	}
	t := &txnState{
		producerID: val.ProducerID, prevProducerID: val.PreviousProducerID, nextProducerID: val.NextProducerID,
		producerEpoch: val.ProducerEpoch, lastProducerEpoch: noProducerEpoch,
		timeoutMs: val.TimeoutMillis, state: State(val.State), partitions: map[TopicPartition]struct{}{},
		startMs: val.StartTimestamp, lastUpdateMs: val.LastUpdateTimestamp,
		clientVersion: TransactionVersion(val.ClientTransactionVersion),
	}
	if t.state != Empty {
		for _, topic := range val.Topics {
			for _, p := range topic.Partitions {
				t.partitions[TopicPartition{topic.Topic, p}] = struct{}{}
			}
		}
	}
	return t, nil
}

// decodeRecord parses one record; a nil state is a tombstone.
func decodeRecord(r Record) (string, *txnState, error) {
	id, err := decodeKey(r.Key)
	if err != nil {
		return "", nil, err
	}
	st, err := decodeValue(r.Value)
	return id, st, err
}

// stateRecord is the record of a transition of id.
func stateRecord(id string, t *txnState, valueVersion int16) Record {
	return Record{Key: encodeKey(id), Value: encodeValue(t, valueVersion)}
}

// tombstone removes an expired id.
func tombstone(id string) Record { return Record{Key: encodeKey(id)} }
