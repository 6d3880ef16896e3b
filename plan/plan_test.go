package plan

import (
	"math"
	"strings"
	"testing"
)

// The design exercise: 1,000,000 msg/s x 1,000 B, RF 3, 7 days, 200 MB/s
// brokers at 60%, 10 MB/s per partition.
func TestDefaultsReproduceTheExercise(t *testing.T) {
	p, err := Compute(Defaults())
	if err != nil {
		t.Fatal(err)
	}
	want := Plan{
		Inputs:                  Defaults(),
		AverageIngressMBps:      1_000,
		IngressMBps:             1_000,
		ReplicationMBps:         2_000,
		DiskWriteMBps:           3_000,
		BrokerUsableMBps:        p.BrokerUsableMBps, // 200 x 0.6, checked below
		BrokersForThroughput:    25,
		Brokers:                 25,
		StorageTotalGB:          1_814_400,
		StoragePerBrokerGB:      72_576,
		PartitionsForThroughput: 100,
		PartitionsForConsumers:  0,
		Partitions:              100,
		MaxConsumersPerGroup:    100,
	}
	if p != want {
		t.Errorf("Compute(Defaults())\n got %+v\nwant %+v", p, want)
	}
	if math.Abs(p.BrokerUsableMBps-120) > 1e-9 {
		t.Errorf("usable MB/s per broker %v, want 120", p.BrokerUsableMBps)
	}
}

func TestCompute(t *testing.T) {
	with := func(f func(*Inputs)) Inputs {
		in := Defaults()
		f(&in)
		return in
	}
	for _, tc := range []struct {
		name string
		in   Inputs
		// ingress, replication, disk writes (MB/s); brokers; storage total and per broker (GB); partitions
		ingress, repl, disk  float64
		brokers              int
		storage, perBroker   float64
		partitions, consumer int
	}{
		{"peak factor sizes throughput, not storage", with(func(in *Inputs) { in.PeakFactor = 2 }),
			2_000, 4_000, 6_000, 50, 1_814_400, 36_288, 200, 0},
		{"consumers slower than partitions need more partitions", with(func(in *Inputs) { in.ConsumerMBps = 4 }),
			1_000, 2_000, 3_000, 25, 1_814_400, 72_576, 250, 250},
		{"consumers faster than partitions change nothing", with(func(in *Inputs) { in.ConsumerMBps = 50 }),
			1_000, 2_000, 3_000, 25, 1_814_400, 72_576, 100, 20},
		{"RF 1: no replication traffic", with(func(in *Inputs) { in.ReplicationFactor = 1 }),
			1_000, 0, 1_000, 9, 604_800, 67_200, 100, 0},
		{"a small workload still needs RF brokers and one partition",
			with(func(in *Inputs) { in.MessagesPerSec, in.MessageBytes = 100, 100 }),
			0.01, 0.02, 0.03, 3, 0.01 * 86_400 * 7 * 3 / 1_000, 0.01 * 86_400 * 7 / 1_000, 1, 0},
		{"full utilisation and a fractional rate round up",
			with(func(in *Inputs) { in.TargetUtilisation, in.MessagesPerSec = 1, 1_000_001 }),
			1_000.001, 2_000.002, 3_000.003, 16, 1_814_401.8144, 1_814_401.8144 / 16, 101, 0},
		{"half a day of retention", with(func(in *Inputs) { in.RetentionDays = 0.5 }),
			1_000, 2_000, 3_000, 25, 129_600, 5_184, 100, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Compute(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			near := func(what string, got, want float64) {
				t.Helper()
				if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
					t.Errorf("%s = %v, want %v", what, got, want)
				}
			}
			near("ingress", p.IngressMBps, tc.ingress)
			near("replication", p.ReplicationMBps, tc.repl)
			near("disk writes", p.DiskWriteMBps, tc.disk)
			near("storage", p.StorageTotalGB, tc.storage)
			near("storage per broker", p.StoragePerBrokerGB, tc.perBroker)
			if p.Brokers != tc.brokers || p.Partitions != tc.partitions || p.MaxConsumersPerGroup != tc.partitions ||
				p.PartitionsForConsumers != tc.consumer {
				t.Errorf("brokers %d partitions %d (for consumers %d) max consumers %d, want %d, %d (%d), %d",
					p.Brokers, p.Partitions, p.PartitionsForConsumers, p.MaxConsumersPerGroup,
					tc.brokers, tc.partitions, tc.consumer, tc.partitions)
			}
		})
	}
}

// Decimal inputs are inexact in binary; a quotient that is an integer on
// paper must not round up to the next one.
func TestCeilCountToleratesBinaryRounding(t *testing.T) {
	for _, tc := range []struct {
		x    float64
		want int
	}{
		{3_000 / (200 * 0.6), 25},
		{25.000000000000004, 25},
		{24.999999999999996, 25},
		{25.001, 26},
		{0.3, 1},
		{1e-15, 1},
	} {
		if got, err := ceilCount("brokers", tc.x); err != nil || got != tc.want {
			t.Errorf("ceilCount(%v) = %d, %v; want %d", tc.x, got, err, tc.want)
		}
	}
}

func TestInvalidInputs(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, tc := range []struct {
		mutate func(*Inputs)
		want   string
	}{
		{func(in *Inputs) { in.MessagesPerSec = 0 }, "plan: --messages-per-sec=0 is out of range: must be > 0"},
		{func(in *Inputs) { in.MessagesPerSec = -5 }, "plan: --messages-per-sec=-5 is out of range: must be > 0"},
		{func(in *Inputs) { in.MessagesPerSec = nan }, "plan: --messages-per-sec=NaN is invalid: must be a finite number > 0"},
		{func(in *Inputs) { in.MessageBytes = 0 }, "plan: --message-bytes=0 is out of range: must be > 0"},
		{func(in *Inputs) { in.MessageBytes = inf }, "plan: --message-bytes=+Inf is invalid: must be a finite number > 0"},
		{func(in *Inputs) { in.ReplicationFactor = 0 }, "plan: --replication-factor=0 is out of range: must be in [1, 32767]"},
		{func(in *Inputs) { in.ReplicationFactor = 40_000 }, "plan: --replication-factor=40000 is out of range: must be in [1, 32767]"},
		{func(in *Inputs) { in.RetentionDays = 0 }, "plan: --retention-days=0 is out of range: must be > 0"},
		{func(in *Inputs) { in.RetentionDays = math.Inf(-1) }, "plan: --retention-days=-Inf is invalid: must be a finite number > 0"},
		{func(in *Inputs) { in.BrokerWriteMBps = -200 }, "plan: --broker-write-mbps=-200 is out of range: must be > 0"},
		{func(in *Inputs) { in.TargetUtilisation = 0 }, "plan: --target-utilisation=0 is out of range: must be in (0, 1], a fraction: 0.6 for 60%"},
		{func(in *Inputs) { in.TargetUtilisation = 60 }, "plan: --target-utilisation=60 is out of range: must be in (0, 1], a fraction: 0.6 for 60%"},
		{func(in *Inputs) { in.TargetUtilisation = nan }, "plan: --target-utilisation=NaN is invalid: must be a finite number in (0, 1]"},
		{func(in *Inputs) { in.PartitionMBps = 0 }, "plan: --partition-mbps=0 is out of range: must be > 0"},
		{func(in *Inputs) { in.ConsumerMBps = -1 }, "plan: --consumer-mbps=-1 is out of range: must be >= 0 (0: not considered)"},
		{func(in *Inputs) { in.ConsumerMBps = nan }, "plan: --consumer-mbps=NaN is invalid: must be a finite number >= 0"},
		{func(in *Inputs) { in.PeakFactor = 0.5 }, "plan: --peak-factor=0.5 is out of range: must be >= 1 (peak rate / average rate)"},
		{func(in *Inputs) { in.PeakFactor = nan }, "plan: --peak-factor=NaN is invalid: must be a finite number >= 1"},
		{func(in *Inputs) { in.MessagesPerSec, in.MessageBytes = 1e300, 1e300 }, "plan: the inputs overflow"},
		{func(in *Inputs) { in.PartitionMBps = 1e-300 }, "plan: the inputs need 1e+303 partitions, more than 2147483647"},
		{func(in *Inputs) { in.BrokerWriteMBps = 1e-9 }, "plan: the inputs need 5e+12 brokers, more than 2147483647"},
	} {
		in := Defaults()
		tc.mutate(&in)
		p, err := Compute(in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one containing %q", in, err, tc.want)
		}
		if p != (Plan{}) {
			t.Errorf("%+v: a plan with the error: %+v", in, p)
		}
	}
}

// All bad inputs are reported at once, in flag order.
func TestInvalidInputsAllReported(t *testing.T) {
	_, err := Compute(Inputs{})
	if err == nil {
		t.Fatal("zero Inputs accepted")
	}
	var flags []string
	for _, line := range strings.Split(err.Error(), "\n") {
		flag, _, _ := strings.Cut(strings.TrimPrefix(line, "plan: --"), "=")
		flags = append(flags, flag)
	}
	want := "messages-per-sec message-bytes replication-factor retention-days broker-write-mbps target-utilisation partition-mbps peak-factor"
	if got := strings.Join(flags, " "); got != want {
		t.Errorf("flags reported: %s\nwant: %s", got, want)
	}
}
