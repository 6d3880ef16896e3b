package replication

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/internal/fuzzseed"
)

// throttledSeeds are (config value, broker) pairs.
func throttledSeeds() [][]any {
	var seeds [][]any
	for _, s := range []string{"*", "0:1,1:2,2:3", "0:1, 0:2 ,3:1", "", "1:1,1:1", "x:1,2:y"} {
		seeds = append(seeds, []any{s, 1})
	}
	return seeds
}

func TestWriteThrottledReplicasSeedCorpus(t *testing.T) {
	if !fuzzseed.Enabled() {
		t.Skip("set KBROKER_WRITE_SEEDS=1 to rewrite testdata/fuzz")
	}
	fuzzseed.Write(t, "FuzzThrottledReplicas", throttledSeeds())
}

// FuzzThrottledReplicas parses throttled replica lists as brokers read
// their topics' configs: no panic; a partition is never listed twice; and
// for a list the config validation accepts, the partitions read for a
// broker are exactly those listed with it ("*" throttles all).
func FuzzThrottledReplicas(f *testing.F) {
	for _, s := range throttledSeeds() {
		f.Add(s[0].(string), s[1].(int))
	}
	f.Fuzz(func(t *testing.T, value string, broker int) {
		list := strings.Split(value, ",")
		got := ParseThrottledReplicas(list, int32(broker))
		seen := map[int32]bool{}
		for _, p := range got.Partitions {
			if seen[p] {
				t.Fatalf("partition %d read twice from %q", p, value)
			}
			seen[p] = true
		}
		if config.ValidateTopicConfig("leader.replication.throttled.replicas", value) != nil {
			return
		}
		if got.All {
			if !slices.Contains(list, "*") && !slices.ContainsFunc(list, func(s string) bool { return strings.TrimSpace(s) == "*" }) {
				t.Fatalf("%q throttles everything", value)
			}
			return
		}
		listed := func(p int32) bool {
			return slices.ContainsFunc(list, func(s string) bool {
				var lp, lb int64
				// Whitespace of any kind around the items and the colon
				// is trimmed, as Kafka's list configs trim (and the
				// parser and the validator do): "\n0:1" lists 0:1.
				_, err := fmt.Sscanf(strings.Join(strings.Fields(s), ""), "%d:%d", &lp, &lb)
				return err == nil && int32(lp) == p && int32(lb) == int32(broker)
			})
		}
		for _, p := range got.Partitions {
			if !listed(p) {
				t.Fatalf("%q: partition %d read for broker %d", value, p, broker)
			}
		}
	})
}
