package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/internal/testsupport"
)

// The log gauges report each partition's log as storage measures it: its
// bytes on disk and its segment count (they read 0 while replication's
// Snapshot did not fill them).
func TestLogGaugesMeasureTheLog(t *testing.T) {
	br := startTestBroker(t, func(c *config.Config) { c.LogSegmentBytes = 1 << 20 })
	createTopic(t, br, "gauges")
	batch := benchBatch(100, 1000) // ~100 KiB: 11 of them roll the first 1 MiB segment
	for range 12 {
		resp := runRequest(t, br, testsupport.ProduceRequest("gauges", 0, 1, 30000, batch))
		if code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("produce: error %d", code)
		}
	}
	part, ok := br.replicas.Partition("gauges", 0)
	if !ok {
		t.Fatal("no partition gauges-0")
	}
	wantSize, wantSegments := part.Log().Size(), part.Log().NumSegments()
	if wantSize < 12*int64(len(batch)) || wantSegments < 2 {
		t.Fatalf("log of %d bytes in %d segments: the produce did not land", wantSize, wantSegments)
	}
	size, okSize := gaugeValue(t, br, "kbroker_log_size_bytes", "gauges", "0")
	segments, okSegs := gaugeValue(t, br, "kbroker_log_segments", "gauges", "0")
	if !okSize || !okSegs {
		t.Fatal("the log gauges of gauges-0 are missing")
	}
	if int64(size) != wantSize {
		t.Errorf("kbroker_log_size_bytes = %v, the log holds %d bytes", size, wantSize)
	}
	if int(segments) != wantSegments {
		t.Errorf("kbroker_log_segments = %v, the log has %d segments", segments, wantSegments)
	}
}

// gaugeValue scrapes the broker's registry for the gauge name with labels
// topic and partition.
func gaugeValue(t *testing.T, br *Broker, name, topic, partition string) (float64, bool) {
	t.Helper()
	return gaugeWith(t, br, name, map[string]string{"topic": topic, "partition": partition})
}

// gaugeWith reads the gauge name whose labels include want.
func gaugeWith(t *testing.T, br *Broker, name string, want map[string]string) (float64, bool) {
	t.Helper()
	families, err := br.metrics.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue metrics
				}
			}
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}
