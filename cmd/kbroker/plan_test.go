package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kbroker/kbroker/plan"
)

// The defaults reproduce the design exercise, each figure with its formula.
func TestPlanDefaults(t *testing.T) {
	res := runCmd(t, nil, nil, "plan")
	if res.code != exitOK || res.cfg != nil || res.stderr != "" {
		t.Fatalf("exit %d, broker started %v, stderr %q", res.code, res.cfg != nil, res.stderr)
	}
	for _, want := range []string{
		"Ingress              1,000 MB/s\n",
		"1,000,000 x 1,000 B x 1 = 1,000,000,000 B/s = 1,000 MB/s\n",
		"Replication traffic  2,000 MB/s\n",
		"ingress x (RF - 1) = 1,000 x (3 - 1) = 2,000 MB/s",
		"Disk writes          3,000 MB/s\n",
		"ingress x RF = 1,000 x 3 = 3,000 MB/s",
		"Brokers              25\n",
		"ceil(disk writes / (broker write x target utilisation)) = ceil(3,000 / (200 x 0.6)) = ceil(3,000 / 120) = 25\n",
		"Storage              1,814,400 GB over 7 days, 72,576 GB per broker\n",
		"= 1,000 x 86,400 x 7 x 3 = 1,814,400,000 MB = 1,814,400 GB\n",
		"1,814,400 GB / 25 brokers = 72,576 GB",
		"Partitions           at least 100\n",
		"ceil(ingress / partition throughput) = ceil(1,000 / 10) = 100\n",
		"Consumers            at most 100 useful per group\n",
	} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, res.stdout)
		}
	}
}

func TestPlanFlags(t *testing.T) {
	res := runCmd(t, nil, nil, "plan", "--peak-factor=2", "--consumer-mbps=4", "--messages-per-sec=1e6",
		"--message-bytes=1000", "--replication-factor=3", "--retention-days=7", "--broker-write-mbps=200",
		"--target-utilisation=0.6", "--partition-mbps=10")
	if res.code != exitOK {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	for _, want := range []string{
		"Ingress              2,000 MB/s\n",
		"at peak; the average is 1,000 MB/s",
		"Brokers              50\n",
		// Storage comes from the average rate, not the peak.
		"Storage              1,814,400 GB over 7 days, 36,288 GB per broker\n",
		"the average, not the peak",
		"Partitions           at least 500\n",
		"ceil(ingress / partition throughput) = ceil(2,000 / 10) = 200\n",
		"ceil(ingress / consumer throughput) = ceil(2,000 / 4) = 500,",
		"Consumers            at most 500 useful per group\n",
	} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, res.stdout)
		}
	}

	res = runCmd(t, nil, nil, "plan", "--messages-per-sec=10", "--message-bytes=100")
	if !strings.Contains(res.stdout, "Brokers              3\n") || !strings.Contains(res.stdout, "raised to RF = 3") {
		t.Errorf("a tiny workload does not get RF brokers:\n%s", res.stdout)
	}
}

func TestPlanJSON(t *testing.T) {
	res := runCmd(t, nil, nil, "plan", "--json")
	if res.code != exitOK || res.stderr != "" {
		t.Fatalf("exit %d, stderr %q", res.code, res.stderr)
	}
	var got plan.Plan
	dec := json.NewDecoder(strings.NewReader(res.stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("not a plan: %v\n%s", err, res.stdout)
	}
	if got.Inputs != plan.Defaults() || got.IngressMBps != 1_000 || got.ReplicationMBps != 2_000 ||
		got.DiskWriteMBps != 3_000 || got.Brokers != 25 || got.StorageTotalGB != 1_814_400 ||
		got.StoragePerBrokerGB != 72_576 || got.Partitions != 100 || got.MaxConsumersPerGroup != 100 {
		t.Errorf("figures %+v", got)
	}
	// The names machines read.
	for _, key := range []string{`"ingress_mbps": 1000,`, `"replication_mbps": 2000,`, `"disk_write_mbps": 3000,`,
		`"brokers": 25,`, `"storage_total_gb": 1814400,`, `"storage_per_broker_gb": 72576,`, `"partitions": 100,`,
		`"max_consumers_per_group": 100`, `"messages_per_sec": 1000000,`} {
		if !strings.Contains(res.stdout, key) {
			t.Errorf("JSON lacks %s:\n%s", key, res.stdout)
		}
	}
}

func TestPlanBadInputExitsTwo(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--messages-per-sec=0"}, "plan: --messages-per-sec=0 is out of range: must be > 0\n"},
		{[]string{"--message-bytes=-1"}, "plan: --message-bytes=-1 is out of range: must be > 0\n"},
		{[]string{"--message-bytes=NaN"}, "plan: --message-bytes=NaN is invalid: must be a finite number > 0\n"},
		{[]string{"--replication-factor=0"}, "plan: --replication-factor=0 is out of range: must be in [1, 32767]\n"},
		{[]string{"--retention-days=0"}, "plan: --retention-days=0 is out of range: must be > 0\n"},
		{[]string{"--broker-write-mbps=0"}, "plan: --broker-write-mbps=0 is out of range: must be > 0\n"},
		{[]string{"--target-utilisation=60"}, "plan: --target-utilisation=60 is out of range: must be in (0, 1], a fraction: 0.6 for 60%\n"},
		{[]string{"--target-utilisation=0"}, "plan: --target-utilisation=0 is out of range"},
		{[]string{"--partition-mbps=0"}, "plan: --partition-mbps=0 is out of range: must be > 0\n"},
		{[]string{"--consumer-mbps=-4"}, "plan: --consumer-mbps=-4 is out of range: must be >= 0 (0: not considered)\n"},
		{[]string{"--peak-factor=0.5"}, "plan: --peak-factor=0.5 is out of range: must be >= 1 (peak rate / average rate)\n"},
		{[]string{"--peak-factor=Inf"}, "plan: --peak-factor=+Inf is invalid: must be a finite number >= 1 (peak rate / average rate)\n"},
		{[]string{"--messages-per-sec=0", "--replication-factor=-1", "--json"},
			"plan: --messages-per-sec=0 is out of range: must be > 0\nplan: --replication-factor=-1 is out of range"},
		{[]string{"--message-bytes=lots"}, `invalid argument "lots" for "--message-bytes" flag`},
		{[]string{"--replication-factor=2.5"}, `invalid argument "2.5" for "--replication-factor" flag`},
		{[]string{"--utilisation=0.5"}, "unknown flag: --utilisation"},
		{[]string{"extra"}, `unknown command "extra" for "kbroker plan"`},
	} {
		res := runCmd(t, nil, nil, append([]string{"plan"}, tc.args...)...)
		if res.code != exitUsage || res.stdout != "" || !strings.Contains(res.stderr, tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d and %q", tc.args, res.code, res.stdout, res.stderr, exitUsage, tc.want)
		}
	}
}

func TestNum(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want string
	}{
		{0, "0"},
		{7, "7"},
		{0.6, "0.6"},
		{1_000, "1,000"},
		{72_576, "72,576"},
		{1_814_400, "1,814,400"},
		{1_814_400_000, "1,814,400,000"},
		{1_000.001, "1,000.001"},
		{2.0000000001, "2"},
		{123_456.7891, "123,456.789"},
		{-1_234.5, "-1,234.5"},
		{0.0001234, "0.000123"},
	} {
		if got := num(tc.in); got != tc.want {
			t.Errorf("num(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
