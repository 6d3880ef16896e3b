package storage

import (
	"encoding/json"
)

// The clean-shutdown marker, .kafka_cleanshutdown in each log dir, as Kafka
// 3.7+ writes it (CleanShutdownFileHandler): {"version":0,"brokerEpoch":N},
// N being the broker epoch of the registration the broker shut down with.
// Its presence means every log of the dir was flushed and closed (no
// recovery needed); the epoch lets the broker tell the controller, when it
// registers again, that it shut down cleanly (KIP-966: a broker that did
// not may have lost unflushed data and must leave the eligible leader
// replicas). An empty marker (older kbroker) is clean with the epoch
// unknown.

type cleanShutdownMarker struct {
	Version     int   `json:"version"`
	BrokerEpoch int64 `json:"brokerEpoch"`
}

// encodeCleanShutdown is the marker's content for a broker epoch (-1:
// unknown, an empty marker).
func encodeCleanShutdown(epoch int64) []byte {
	if epoch < 0 {
		return nil
	}
	b, _ := json.Marshal(cleanShutdownMarker{Version: 0, BrokerEpoch: epoch})
	return b
}

// parseCleanShutdown returns the broker epoch a marker holds, -1 when it
// holds none (empty, another version, or unreadable).
func parseCleanShutdown(b []byte) int64 {
	var m cleanShutdownMarker
	if len(b) == 0 || json.Unmarshal(b, &m) != nil || m.Version != 0 || m.BrokerEpoch < 0 {
		return -1
	}
	return m.BrokerEpoch
}

// SetBrokerEpoch records the broker epoch that Close writes into the
// clean-shutdown markers (the broker's registration when it shuts down).
func (m *Manager) SetBrokerEpoch(epoch int64) { m.brokerEpoch.Store(epoch) }

// PreviousBrokerEpoch is the broker epoch the previous run shut down
// cleanly with: the one every log dir's clean-shutdown marker held, or -1
// when a dir had no marker (an unclean shutdown: a crash, a power loss, a
// failed log dir), an empty one, or they disagree.
func (m *Manager) PreviousBrokerEpoch() int64 {
	epoch := int64(-1)
	for i, ds := range m.dirs {
		if !ds.clean || ds.cleanEpoch < 0 || (i > 0 && ds.cleanEpoch != epoch) {
			return -1
		}
		epoch = ds.cleanEpoch
	}
	return epoch
}
