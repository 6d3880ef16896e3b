package compat

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// scrape reads a node's /metrics and sums each metric name's samples whose
// labels contain every filter ("topic=\"x\"").
func scrape(t *testing.T, n *node) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + n.metricsAddr + "/metrics")
	if err != nil {
		t.Fatalf("scraping node %d: %v", n.id, err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		name := line[:i]
		out[name] = v
		if j := strings.IndexByte(name, '{'); j > 0 {
			out[name[:j]] += v
		}
	}
	return out
}

// /metrics moves during a produce/consume run and a broker kill: request and
// byte counters grow, under-replicated partitions go above 0 and back to 0,
// ISR shrinks and expands are counted; /healthz and /readyz answer.
func TestMetricsMoveDuringFaults(t *testing.T) {
	needOwnCluster(t)
	t.Parallel()
	c := startCluster(t, clusterOpts{brokers: 3, metrics: true, flags: replicationFlags()})
	adm := newAdmin(t, c.seeds())
	topic := newTopic(t, adm, 3, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")})
	c.waitTopicEverywhere(topic, 3, 3)
	for _, n := range c.nodes {
		for _, path := range []string{"/healthz", "/readyz"} {
			resp, err := http.Get("http://" + n.metricsAddr + path)
			must(t, err, "GET %s", path)
			if resp.StatusCode != 200 {
				t.Fatalf("node %d %s: %s", n.id, path, resp.Status)
			}
			resp.Body.Close()
		}
	}
	before := scrape(t, c.nodes[0])
	produceN(t, c.seeds(), topic, 300, "m")
	consumeN(t, c.seeds(), topic, 300, time.Minute)
	sum := func(name string) float64 {
		total := 0.0
		for _, n := range c.nodes {
			if n.Running() {
				total += scrape(t, n)[name]
			}
		}
		return total
	}
	after := scrape(t, c.nodes[0])
	if after["kbroker_requests_total"] <= before["kbroker_requests_total"] {
		t.Fatal("kbroker_requests_total did not grow")
	}
	if in := sum("kbroker_topic_records_in_total"); in < 300 {
		t.Fatalf("records in across brokers: %v, want >= 300", in)
	}
	if out := sum("kbroker_topic_bytes_out_total"); out == 0 {
		t.Fatal("no bytes out counted")
	}
	if sum("kbroker_under_replicated_partitions") != 0 {
		t.Fatal("under-replicated partitions before any fault")
	}
	victim := c.nodes[2]
	victim.kill9()
	waitFor(t, 30*time.Second, "under-replicated partitions > 0", func() error {
		if v := sum("kbroker_under_replicated_partitions"); v == 0 {
			return fmt.Errorf("%v", v)
		}
		return nil
	})
	if sum("kbroker_isr_shrinks_total") == 0 {
		t.Log("no ISR shrink counted by leaders (the controller fenced the broker first)")
	}
	c.restart(victim)
	c.waitServing(60 * time.Second)
	waitFor(t, 60*time.Second, "under-replicated partitions back to 0", func() error {
		if v := sum("kbroker_under_replicated_partitions"); v != 0 {
			return fmt.Errorf("%v", v)
		}
		return nil
	})
	if sum("kbroker_isr_expands_total") == 0 {
		t.Fatal("ISR expansions not counted after the broker came back")
	}
	m := scrape(t, c.nodes[0])
	for _, name := range []string{"kbroker_request_duration_seconds_count", "kbroker_raft_term", "kbroker_raft_commit_index",
		"kbroker_connections", "kbroker_log_size_bytes", "kbroker_log_segments", "go_goroutines", "kbroker_leader_elections_total"} {
		if _, ok := m[name]; !ok {
			t.Errorf("metric %s missing", name)
		}
	}
}
