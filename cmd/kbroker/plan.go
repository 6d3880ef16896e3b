package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kbroker/kbroker/plan"
)

func (a *app) planCmd() *cobra.Command {
	in := plan.Defaults()
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "plan [flags]",
		Short: "Estimate brokers, storage and partitions for a workload",
		Long: "Estimate the size of a cluster: traffic, brokers, storage and partitions,\n" +
			"each with the formula it comes from. The defaults are the design exercise:\n" +
			"1,000,000 msg/s of 1,000 B, RF 3, 7 days, 200 MB/s brokers at 60%, 10 MB/s\n" +
			"per partition. Units are decimal: 1 MB = 10^6 B, 1 GB = 10^3 MB; mbps means\n" +
			"MB/s (megabytes).",
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			p, err := plan.Compute(in)
			if err != nil {
				return &configError{err}
			}
			if asJSON {
				return writePlanJSON(a.stdout, p)
			}
			return writePlan(a.stdout, p)
		},
	}
	f := cmd.Flags()
	f.Float64Var(&in.MessagesPerSec, "messages-per-sec", in.MessagesPerSec, "messages produced per second, on average")
	f.Float64Var(&in.MessageBytes, "message-bytes", in.MessageBytes, "average size of a message in bytes")
	f.IntVar(&in.ReplicationFactor, "replication-factor", in.ReplicationFactor, "replicas of each partition")
	f.Float64Var(&in.RetentionDays, "retention-days", in.RetentionDays, "how long messages are kept, in days")
	f.Float64Var(&in.BrokerWriteMBps, "broker-write-mbps", in.BrokerWriteMBps, "sustained disk write throughput of one broker, MB/s")
	f.Float64Var(&in.TargetUtilisation, "target-utilisation", in.TargetUtilisation, "share of --broker-write-mbps to plan for, in (0, 1]")
	f.Float64Var(&in.PartitionMBps, "partition-mbps", in.PartitionMBps, "throughput one partition sustains, MB/s")
	f.Float64Var(&in.ConsumerMBps, "consumer-mbps", in.ConsumerMBps, "throughput one consumer processes, MB/s; 0: not considered")
	f.Float64Var(&in.PeakFactor, "peak-factor", in.PeakFactor, "peak rate / average rate; sizes throughput, not storage")
	f.BoolVar(&asJSON, "json", false, "print the plan as JSON")
	f.VisitAll(plainFloatDefault)
	return cmd
}

// plainFloatDefault shows a float flag's default as 1000000, not 1e+06.
func plainFloatDefault(fl *pflag.Flag) {
	if fl.Value.Type() != "float64" {
		return
	}
	if v, err := strconv.ParseFloat(fl.DefValue, 64); err == nil {
		fl.DefValue = strconv.FormatFloat(v, 'f', -1, 64)
	}
}

func writePlanJSON(w io.Writer, p plan.Plan) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(p)
}

// writePlan prints each figure with the formula it comes from, the formula
// with the numbers put in, and why.
func writePlan(w io.Writer, p plan.Plan) error {
	in := p.Inputs
	n, rf := num, strconv.Itoa(in.ReplicationFactor)
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	figure := func(name, value string) { line("%-21s%s", name, value) }
	why := func(format string, args ...any) { line("    "+format, args...) }

	line("Capacity plan: %s msg/s x %s B, replication factor %s, %s days of retention, peak factor %s.",
		n(in.MessagesPerSec), n(in.MessageBytes), rf, n(in.RetentionDays), n(in.PeakFactor))
	line("Decimal units: 1 MB = 10^6 B, 1 GB = 10^3 MB.")
	line("")
	figure("Ingress", n(p.IngressMBps)+" MB/s")
	why("messages/s x message bytes x peak factor = %s x %s B x %s = %s B/s = %s MB/s",
		n(in.MessagesPerSec), n(in.MessageBytes), n(in.PeakFactor), n(p.IngressMBps*plan.BytesPerMB), n(p.IngressMBps))
	if in.PeakFactor != 1 {
		why("at peak; the average is %s MB/s. Throughput is sized for the peak.", n(p.AverageIngressMBps))
	}
	figure("Replication traffic", n(p.ReplicationMBps)+" MB/s")
	why("ingress x (RF - 1) = %s x (%s - 1) = %s MB/s: each follower fetches every byte from the leader",
		n(p.IngressMBps), rf, n(p.ReplicationMBps))
	figure("Disk writes", n(p.DiskWriteMBps)+" MB/s")
	why("ingress x RF = %s x %s = %s MB/s: the leader and each follower write every byte",
		n(p.IngressMBps), rf, n(p.DiskWriteMBps))

	figure("Brokers", strconv.Itoa(p.Brokers))
	why("ceil(disk writes / (broker write x target utilisation)) = ceil(%s / (%s x %s)) = ceil(%s / %s) = %d",
		n(p.DiskWriteMBps), n(in.BrokerWriteMBps), n(in.TargetUtilisation),
		n(p.DiskWriteMBps), n(p.BrokerUsableMBps), p.BrokersForThroughput)
	if p.Brokers > p.BrokersForThroughput {
		why("raised to RF = %s: the replicas of a partition must be on different brokers", rf)
	} else {
		why("at least RF = %s brokers, one per replica of a partition: satisfied", rf)
	}

	figure("Storage", fmt.Sprintf("%s GB over %s days, %s GB per broker", n(p.StorageTotalGB), n(in.RetentionDays), n(p.StoragePerBrokerGB)))
	why("average ingress x 86,400 s/day x retention days x RF = %s x 86,400 x %s x %s = %s MB = %s GB",
		n(p.AverageIngressMBps), n(in.RetentionDays), rf, n(p.StorageTotalGB*plan.MBPerGB), n(p.StorageTotalGB))
	if in.PeakFactor != 1 {
		why("the average, not the peak: a peak does not last the whole retention")
	}
	why("per broker: %s GB / %d brokers = %s GB, with partitions spread evenly", n(p.StorageTotalGB), p.Brokers, n(p.StoragePerBrokerGB))

	figure("Partitions", fmt.Sprintf("at least %d", p.Partitions))
	why("ceil(ingress / partition throughput) = ceil(%s / %s) = %d",
		n(p.IngressMBps), n(in.PartitionMBps), p.PartitionsForThroughput)
	if in.ConsumerMBps > 0 {
		why("ceil(ingress / consumer throughput) = ceil(%s / %s) = %d, so that one consumer per partition keeps up",
			n(p.IngressMBps), n(in.ConsumerMBps), p.PartitionsForConsumers)
	} else {
		why("consumer throughput not considered (--consumer-mbps=0)")
	}
	figure("Consumers", fmt.Sprintf("at most %d useful per group", p.MaxConsumersPerGroup))
	why("= partitions: a partition goes to one consumer of a group, so more consumers than %d sit idle", p.Partitions)

	_, err := io.WriteString(w, b.String())
	return err
}

// num formats x for people: thousands separators and at most three
// decimals (1,814,400; 0.6; 1,000.001), or three significant digits below
// 0.001.
func num(x float64) string {
	if x != 0 && math.Abs(x) < 0.001 {
		return strconv.FormatFloat(x, 'g', 3, 64)
	}
	s := strconv.FormatFloat(x, 'f', 3, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	whole, frac, _ := strings.Cut(s, ".")
	for i := len(whole) - 3; i > 0; i -= 3 {
		whole = whole[:i] + "," + whole[i:]
	}
	if frac != "" {
		frac = "." + frac
	}
	return sign + whole + frac
}
