package broker

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testsupport"
	"github.com/kbroker/kbroker/storage"
)

// The log manager's health is in the metrics: partitions whose log cannot
// be opened by reason (every reason present, zeros included), offline log
// dirs, mapped segments and how many partitions the kernel limits hold.
func TestStorageHealthMetrics(t *testing.T) {
	br := startTestBroker(t)
	gauges := func() map[string]float64 { return gatherMetrics(t, br) }
	g := gauges()
	for _, reason := range storage.OfflineReasons() {
		v, ok := g["kbroker_storage_offline_partitions,reason="+reason]
		if !ok || v != 0 {
			t.Errorf("offline partitions (%s): %v %v", reason, v, ok)
		}
	}
	if g["kbroker_storage_offline_log_dirs"] != 0 {
		t.Error("an offline log dir at start")
	}
	if _, err := os.ReadDir("/proc/self"); err == nil && g["kbroker_storage_partition_capacity"] <= 0 {
		t.Errorf("partition capacity %v on Linux", g["kbroker_storage_partition_capacity"])
	}
	// A partition whose directory cannot be made (a file is in the way).
	if err := os.WriteFile(filepath.Join(br.cfg.LogDirs[0], "blocked-0"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := br.logs.Open(storage.TopicPartition{Topic: "blocked", Partition: 0}, [16]byte{}, storage.LogConfig{}); err == nil {
		t.Fatal("opened a log where a file is")
	}
	if v := gauges()["kbroker_storage_offline_partitions,reason="+storage.ReasonStorageError]; v != 1 {
		t.Fatalf("offline partitions after a failed open: %v", v)
	}
}

// Durable acks show in the metrics: group commit rounds, the logs they
// flushed, every log flush, the syncs that reached the file system, and
// the round durations.
func TestGroupCommitMetrics(t *testing.T) {
	br := startTestBroker(t)
	values := func() map[string]float64 { return gatherMetrics(t, br) }
	before := values()
	createTopicWith(t, br, "durable", map[string]string{"flush.messages": "1"})
	for range 5 {
		req := testsupport.ProduceRequest("durable", 0, -1, 30000, benchBatch(1, 10))
		if code := runRequest(t, br, req).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("produce: %v", kerr.ErrorForCode(code))
		}
	}
	after := values()
	for _, name := range []string{"kbroker_storage_group_commit_rounds_total", "kbroker_storage_group_commit_log_flushes_total",
		"kbroker_storage_log_flushes_total", "kbroker_storage_syncs_total,kind=data", "kbroker_storage_group_commit_round_seconds"} {
		if after[name] <= before[name] {
			t.Errorf("%s did not grow: %v -> %v", name, before[name], after[name])
		}
	}
	if after["kbroker_storage_syncs_total,kind=dir"] == 0 {
		t.Error("no directory sync counted")
	}
}

// gatherMetrics returns every series of the broker's registry by name and
// labels ("name,label=value"): a gauge's or counter's value, a
// histogram's sample count.
func gatherMetrics(t *testing.T, br *Broker) map[string]float64 {
	t.Helper()
	mfs, err := br.metrics.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range m.GetLabel() {
				name += "," + l.GetName() + "=" + l.GetValue()
			}
			switch {
			case m.GetCounter() != nil:
				out[name] = m.GetCounter().GetValue()
			case m.GetHistogram() != nil:
				out[name] = float64(m.GetHistogram().GetSampleCount())
			default:
				out[name] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}
