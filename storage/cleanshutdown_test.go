package storage

import (
	"os"
	"path/filepath"
	"testing"
)

// The clean-shutdown marker carries the broker epoch (Kafka's
// {"version":0,"brokerEpoch":N}); a restart reports it only when every log
// dir shut down cleanly with the same one (KIP-966 registration).
func TestCleanShutdownBrokerEpoch(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	m, _, _, _ := newTestManager(t, []string{a, b})
	if got := m.PreviousBrokerEpoch(); got != -1 {
		t.Fatalf("first start: PreviousBrokerEpoch = %d, want -1", got)
	}
	l, err := m.Open(TopicPartition{"t", 0}, [16]byte{1}, smallConfig())
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 10, 1, 0)
	m.SetBrokerEpoch(42)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(a, CleanShutdownFile))
	if string(data) != `{"version":0,"brokerEpoch":42}` {
		t.Fatalf("marker = %q", data)
	}

	m, _, _, _ = newTestManager(t, []string{a, b})
	if got := m.PreviousBrokerEpoch(); got != 42 {
		t.Fatalf("after a clean shutdown: PreviousBrokerEpoch = %d, want 42", got)
	}
	// Not closed (a crash): no marker, so the next start is unclean.
	m.stopSyncers()
	m, _, _, _ = newTestManager(t, []string{a, b})
	if got := m.PreviousBrokerEpoch(); got != -1 {
		t.Fatalf("after a crash: PreviousBrokerEpoch = %d, want -1", got)
	}
	m.SetBrokerEpoch(43)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// One dir's marker lost (or from another run): unclean.
	if err := os.WriteFile(filepath.Join(b, CleanShutdownFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	m, _, _, _ = newTestManager(t, []string{a, b})
	if got := m.PreviousBrokerEpoch(); got != -1 {
		t.Fatalf("with an empty marker in one dir: PreviousBrokerEpoch = %d, want -1", got)
	}
	m.Close()
}

func TestParseCleanShutdown(t *testing.T) {
	for in, want := range map[string]int64{
		`{"version":0,"brokerEpoch":7}`: 7,
		``:                              -1,
		`{"version":1,"brokerEpoch":7}`: -1,
		`{"brokerEpoch":-5}`:            -1,
		`garbage`:                       -1,
	} {
		if got := parseCleanShutdown([]byte(in)); got != want {
			t.Errorf("parseCleanShutdown(%q) = %d, want %d", in, got, want)
		}
	}
}
