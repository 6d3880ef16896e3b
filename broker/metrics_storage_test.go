package broker

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kbroker/kbroker/storage"
)

// The log manager's health is in the metrics: partitions whose log cannot
// be opened by reason (every reason present, zeros included), offline log
// dirs, mapped segments and how many partitions the kernel limits hold.
func TestStorageHealthMetrics(t *testing.T) {
	br := startTestBroker(t)
	gauges := func() map[string]float64 {
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
				out[name] = m.GetGauge().GetValue()
			}
		}
		return out
	}
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
