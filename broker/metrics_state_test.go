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
	size, okSize := metricValue(t, br, "kbroker_log_size_bytes", "topic", "gauges", "partition", "0")
	segments, okSegs := metricValue(t, br, "kbroker_log_segments", "topic", "gauges", "partition", "0")
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
