// Package plan is the capacity estimate behind `kbroker plan`: from a
// message rate and size, a replication factor, a retention time and what
// one broker and one partition can sustain, it derives the traffic, the
// number of brokers, the storage and the number of partitions of a Kafka
// cluster.
//
// Units are decimal: 1 MB = 10^6 bytes, 1 GB = 10^3 MB, throughputs are
// MB/s (the "mbps" of the flags and JSON names; megabytes, not megabits).
//
// The figures, with R the message rate times the message size:
//
//	ingress       = R x peak factor                   (what producers send at peak)
//	replication   = ingress x (RF - 1)                 (followers fetch every byte from the leader)
//	disk writes   = ingress x RF                       (every replica writes every byte)
//	brokers       = max(ceil(disk writes / (broker write x target utilisation)), RF)
//	storage       = R x 86,400 s x retention days x RF (average rate: a peak is not kept up for days)
//	per broker    = storage / brokers
//	partitions    = max(ceil(ingress / partition MB/s), ceil(ingress / consumer MB/s))
//	consumers     = partitions                         (a group uses at most one consumer per partition)
//
// The package does no I/O: [Compute] is a pure function, and its errors
// name the `kbroker plan` flag at fault.
package plan

import (
	"errors"
	"fmt"
	"math"
)

// Unit conversions (decimal).
const (
	BytesPerMB   = 1e6
	MBPerGB      = 1e3
	SecondsInDay = 86400
)

// MaxCount is the largest number of brokers or partitions a plan may
// need: Kafka's broker ids and partition counts are int32.
const MaxCount = math.MaxInt32

// MaxReplicationFactor is Kafka's limit: the replication factor is an
// int16 in CreateTopics.
const MaxReplicationFactor = math.MaxInt16

// Inputs describe the workload and the hardware. Field comments give the
// flag of each.
type Inputs struct {
	MessagesPerSec    float64 `json:"messages_per_sec"`   // --messages-per-sec, > 0: average rate
	MessageBytes      float64 `json:"message_bytes"`      // --message-bytes, > 0
	ReplicationFactor int     `json:"replication_factor"` // --replication-factor, in [1, 32767]
	RetentionDays     float64 `json:"retention_days"`     // --retention-days, > 0
	BrokerWriteMBps   float64 `json:"broker_write_mbps"`  // --broker-write-mbps, > 0: one broker's sustained disk write
	TargetUtilisation float64 `json:"target_utilisation"` // --target-utilisation, in (0, 1]: share of BrokerWriteMBps to plan for
	PartitionMBps     float64 `json:"partition_mbps"`     // --partition-mbps, > 0: what one partition sustains
	ConsumerMBps      float64 `json:"consumer_mbps"`      // --consumer-mbps, >= 0: what one consumer processes; 0 = not considered
	PeakFactor        float64 `json:"peak_factor"`        // --peak-factor, >= 1: peak rate / average rate
}

// Defaults are the inputs of the design exercise: 1,000,000 msg/s of
// 1,000 B, RF 3, 7 days, brokers writing 200 MB/s used at 60%, 10 MB/s per
// partition, consumers not considered, no peak above the average.
func Defaults() Inputs {
	return Inputs{
		MessagesPerSec:    1_000_000,
		MessageBytes:      1_000,
		ReplicationFactor: 3,
		RetentionDays:     7,
		BrokerWriteMBps:   200,
		TargetUtilisation: 0.6,
		PartitionMBps:     10,
		ConsumerMBps:      0,
		PeakFactor:        1,
	}
}

// Plan is the estimate. Rates are MB/s, storage GB.
type Plan struct {
	Inputs Inputs `json:"inputs"`

	AverageIngressMBps float64 `json:"average_ingress_mbps"` // messages/s x bytes / 10^6
	IngressMBps        float64 `json:"ingress_mbps"`         // average x peak factor: what the cluster is sized for
	ReplicationMBps    float64 `json:"replication_mbps"`     // ingress x (RF - 1), broker to broker
	DiskWriteMBps      float64 `json:"disk_write_mbps"`      // ingress x RF, over all brokers

	BrokerUsableMBps     float64 `json:"broker_usable_mbps"`     // broker write x target utilisation
	BrokersForThroughput int     `json:"brokers_for_throughput"` // ceil(disk writes / usable per broker)
	Brokers              int     `json:"brokers"`                // max(BrokersForThroughput, RF)

	StorageTotalGB     float64 `json:"storage_total_gb"`      // average ingress x retention x RF
	StoragePerBrokerGB float64 `json:"storage_per_broker_gb"` // StorageTotalGB / Brokers

	PartitionsForThroughput int `json:"partitions_for_throughput"` // ceil(ingress / partition MB/s)
	PartitionsForConsumers  int `json:"partitions_for_consumers"`  // ceil(ingress / consumer MB/s); 0 when not considered
	Partitions              int `json:"partitions"`                // the larger of the two
	MaxConsumersPerGroup    int `json:"max_consumers_per_group"`   // = Partitions
}

// Compute validates in and derives the plan. Every invalid input is
// reported, joined into one error; each message names the flag, the value
// and the allowed range.
func Compute(in Inputs) (Plan, error) {
	if err := in.Validate(); err != nil {
		return Plan{}, err
	}
	p := Plan{Inputs: in}
	rf := float64(in.ReplicationFactor)
	p.AverageIngressMBps = in.MessagesPerSec * in.MessageBytes / BytesPerMB
	p.IngressMBps = p.AverageIngressMBps * in.PeakFactor
	p.ReplicationMBps = p.IngressMBps * (rf - 1)
	p.DiskWriteMBps = p.IngressMBps * rf
	p.BrokerUsableMBps = in.BrokerWriteMBps * in.TargetUtilisation
	p.StorageTotalGB = p.AverageIngressMBps * SecondsInDay * in.RetentionDays * rf / MBPerGB

	for _, v := range []float64{p.IngressMBps, p.ReplicationMBps, p.DiskWriteMBps, p.StorageTotalGB} {
		if math.IsInf(v, 0) {
			return Plan{}, errors.New("plan: the inputs overflow: the figures exceed what a float64 holds; check the units (--message-bytes is bytes, rates are MB/s)")
		}
	}
	var errs []error
	count := func(what string, x float64) int {
		n, err := ceilCount(what, x)
		errs = append(errs, err)
		return n
	}
	p.BrokersForThroughput = count("brokers", p.DiskWriteMBps/p.BrokerUsableMBps)
	p.Brokers = max(p.BrokersForThroughput, in.ReplicationFactor)
	p.PartitionsForThroughput = count("partitions", p.IngressMBps/in.PartitionMBps)
	if in.ConsumerMBps > 0 {
		p.PartitionsForConsumers = count("partitions", p.IngressMBps/in.ConsumerMBps)
	}
	p.Partitions = max(p.PartitionsForThroughput, p.PartitionsForConsumers)
	p.MaxConsumersPerGroup = p.Partitions
	if err := errors.Join(errs...); err != nil {
		return Plan{}, err
	}
	p.StoragePerBrokerGB = p.StorageTotalGB / float64(p.Brokers)
	return p, nil
}

// Validate reports every input out of its range, joined.
func (in Inputs) Validate() error {
	var errs []error
	positive := func(flag string, v float64) {
		errs = append(errs, check(flag, v, v > 0, "> 0"))
	}
	positive("messages-per-sec", in.MessagesPerSec)
	positive("message-bytes", in.MessageBytes)
	if rf := in.ReplicationFactor; rf < 1 || rf > MaxReplicationFactor {
		errs = append(errs, fmt.Errorf("plan: --replication-factor=%d is out of range: must be in [1, %d]", rf, MaxReplicationFactor))
	}
	positive("retention-days", in.RetentionDays)
	positive("broker-write-mbps", in.BrokerWriteMBps)
	u := in.TargetUtilisation
	errs = append(errs, check("target-utilisation", u, u > 0 && u <= 1, "in (0, 1], a fraction: 0.6 for 60%"))
	positive("partition-mbps", in.PartitionMBps)
	errs = append(errs, check("consumer-mbps", in.ConsumerMBps, in.ConsumerMBps >= 0, ">= 0 (0: not considered)"))
	errs = append(errs, check("peak-factor", in.PeakFactor, in.PeakFactor >= 1, ">= 1 (peak rate / average rate)"))
	return errors.Join(errs...)
}

// check returns nil when v is a finite number and ok, else an error naming
// flag, v and the allowed range.
func check(flag string, v float64, ok bool, allowed string) error {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return fmt.Errorf("plan: --%s=%v is invalid: must be a finite number %s", flag, v, allowed)
	case !ok:
		return fmt.Errorf("plan: --%s=%v is out of range: must be %s", flag, v, allowed)
	}
	return nil
}

// ceilCount rounds x up to a whole number of brokers or partitions, at
// least 1. A
// quotient within 1e-9 (relative) of an integer is that integer: decimal
// inputs are inexact in binary (200 x 0.6 is not exactly 120), and
// 3,000 / 119.99999999999999 must still need 25 brokers, not 26.
func ceilCount(what string, x float64) (int, error) {
	if r := math.Round(x); math.Abs(x-r) <= 1e-9*math.Max(1, math.Abs(x)) {
		x = r
	}
	n := math.Ceil(x)
	if !(n <= MaxCount) { // also catches +Inf and NaN
		return 0, fmt.Errorf("plan: the inputs need %.3g %s, more than %d: check the units (--message-bytes is bytes, rates are MB/s)", x, what, MaxCount)
	}
	return max(int(n), 1), nil
}
