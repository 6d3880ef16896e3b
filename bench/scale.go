package main

// The scale workloads of issue 20, part 3: what one more partition,
// connection or consumer group costs. Not in make bench's default list (they
// take about as long as the rest together); make bench-scale runs them.
//
//   - partitions (partitions.go): 1,000 and 10,000 partitions at RF=3 on
//     three brokers, each repetition on a fresh cluster;
//   - connections: on one broker, one producer alone (conn-one), the same
//     with 1,000 idle connections open (conn-idle: the brokers' memory per
//     connection and the producer's rate beside them), and 100 producers on
//     their own connections (conn-many), every run the same record cap;
//   - consumers: a topic written once (cg-fill, as w2), then read whole by
//     one consumer group (cg-one) and by 10 groups at once (cg-many).
//
// connections and consumers are groups of the suite like w2/w3: their
// clusters are kept for the stage, their topic created fresh each repetition
// and deleted after it, the targets rotated.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// scaleConfig sizes the scale workloads.
type scaleConfig struct {
	PartitionCounts  []int         // partitions: total partitions of each step
	PerTopic         int           // partitions: partitions per topic
	Idle             time.Duration // partitions: the idle CPU window after ready
	MetadataRequests int           // partitions: full Metadata requests timed
	ReadyTimeout     time.Duration // partitions: deadline of each wait (ready, restart)
	Stall            time.Duration // partitions: a wait whose progress has not grown for this long fails
	IdleConns        int           // connections: idle connections of conn-idle
	Producers        int           // connections: producers of conn-many
	Groups           int           // consumers: groups of cg-many
}

var defaultScale = scaleConfig{
	PartitionCounts: []int{1000, 10000}, PerTopic: 100, Idle: 20 * time.Second, MetadataRequests: 100,
	ReadyTimeout: 5 * time.Minute, Stall: 60 * time.Second, IdleConns: 1000, Producers: 100, Groups: 10,
}

// selectors are the --workloads names that stand for several workloads.
var selectors = map[string][]string{
	"connections": {"conn-one", "conn-idle", "conn-many"},
	"consumers":   {"cg-fill", "cg-one", "cg-many"},
	"queue":       {"qs-fill1", "qs-share", "qs-share-2000", "qs-fill4", "qs-classic"},
}

// expandWorkloads replaces each selector by its workloads, keeping order
// and dropping repeats.
func expandWorkloads(names []string) []string {
	var out []string
	for _, n := range names {
		ws, ok := selectors[n]
		if !ok {
			ws = []string{n}
		}
		for _, w := range ws {
			if !slices.Contains(out, w) {
				out = append(out, w)
			}
		}
	}
	return out
}

// scaleWorkloads are the connections and consumers workloads, sized by sc.
func scaleWorkloads(sc scaleConfig) map[string]workload {
	one := loadConfig{Topic: "conn", Partitions: 12, RF: 1, RecordBytes: 1024, Acks: "all", Idempotent: true,
		Linger: 10 * time.Millisecond, Mode: "produce", Producers: 1}
	idle, many := one, one
	idle.IdleConns, many.Producers = sc.IdleConns, sc.Producers
	fill := loadConfig{Topic: "cg", Partitions: 12, RF: 3, RecordBytes: 1024, Acks: "all", Idempotent: true,
		Linger: 10 * time.Millisecond, Mode: "produce", Producers: 1}
	readers := func(n int) loadConfig { return loadConfig{Topic: "cg", Mode: "groups", Groups: n} }
	const conn = "12 partitions, RF 1, 1 broker, 1 KiB records, acks=all (idempotent)"
	return map[string]workload{
		"conn-one":  {name: "conn-one", brokers: 1, load: one, desc: "one producer, " + conn},
		"conn-idle": {name: "conn-idle", brokers: 1, load: idle, desc: fmt.Sprintf("one producer beside %d idle connections (raw TCP, ApiVersions done; their memory measured on a fresh cluster of the target), %s", sc.IdleConns, conn)},
		"conn-many": {name: "conn-many", brokers: 1, load: many, desc: fmt.Sprintf("%d producers on their own connections, the cap shared, %s", sc.Producers, conn)},
		"cg-fill":   {name: "cg-fill", brokers: 3, load: fill, desc: "the consumers' topic: w2's producer (12 partitions, RF 3, 1 KiB, acks=all), 3 brokers"},
		"cg-one":    {name: "cg-one", brokers: 3, reads: "cg-fill", load: readers(1), desc: "one consumer group reads all of cg-fill's topic"},
		"cg-many":   {name: "cg-many", brokers: 3, reads: "cg-fill", load: readers(sc.Groups), desc: fmt.Sprintf("%d consumer groups read all of cg-fill's topic at once (total delivered)", sc.Groups)},
	}
}

// parseCounts reads "1000,10000".
func parseCounts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("--partition-counts: %q is not a positive number", f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--partition-counts: none given")
	}
	return out, nil
}
