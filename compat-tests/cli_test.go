package compat

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// cliRun is one run of the kbroker binary's admin commands.
type cliRun struct {
	code           int
	stdout, stderr string
}

// kbcli runs the built kbroker with args (and stdin) against seeds.
func kbcli(t *testing.T, seeds []string, stdin string, args ...string) cliRun {
	t.Helper()
	if len(seeds) > 0 {
		args = append(args, "--brokers", strings.Join(seeds, ","))
	}
	return kbcliEnv(t, nil, stdin, args...)
}

// kbcliEnv runs the built kbroker with args, stdin and env (KBROKER_*)
// and nothing of the test's own environment.
func kbcliEnv(t *testing.T, env []string, stdin string, args ...string) cliRun {
	t.Helper()
	cmd := exec.Command(kbrokerBin, args...)
	cmd.Env = append([]string{"HOME=" + t.TempDir()}, env...) // no default profile
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(90 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("kbroker %v timed out\nstderr: %s", args, errOut.String())
	}
	return cliRun{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errOut.String()}
}

// kbjson runs a command that must succeed with --format json and decodes
// its output into v (nil: not decoded).
func kbjson(t *testing.T, seeds []string, v any, stdin string, args ...string) cliRun {
	t.Helper()
	res := kbcli(t, seeds, stdin, append(args, "--format", "json")...)
	if res.code != 0 {
		t.Fatalf("kbroker %v: exit %d\nstderr: %s", args, res.code, res.stderr)
	}
	if v != nil {
		if err := json.Unmarshal([]byte(res.stdout), v); err != nil {
			t.Fatalf("kbroker %v: output is not JSON (%v):\n%s", args, err, res.stdout)
		}
	}
	return res
}

// kbfails runs a command that must fail with exit status code and one line
// on stderr containing want.
func kbfails(t *testing.T, seeds []string, code int, want string, args ...string) {
	t.Helper()
	res := kbcli(t, seeds, "", args...)
	if res.code != code || !strings.Contains(res.stderr, want) || strings.Count(res.stderr, "\n") != 1 ||
		strings.Contains(res.stderr, "goroutine ") {
		t.Fatalf("kbroker %v: exit %d, stderr %q; want exit %d and one line with %q", args, res.code, res.stderr, code, want)
	}
}

// jsonLines decodes one JSON object per line.
func jsonLines[T any](t *testing.T, s string) []T {
	t.Helper()
	var out []T
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		if line == "" {
			continue
		}
		var v T
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		out = append(out, v)
	}
	return out
}

type cliPartition struct {
	Partition     int32   `json:"partition"`
	Leader        int32   `json:"leader"`
	Replicas      []int32 `json:"replicas"`
	ISR           []int32 `json:"isr"`
	LogStart      int64   `json:"log_start_offset"`
	HighWatermark int64   `json:"high_watermark"`
	LogEnd        int64   `json:"log_end_offset"`
	Size          int64   `json:"size_bytes"`
}

type cliRecord struct {
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Timestamp int64  `json:"timestamp"`
	Key       string `json:"key"`
	Value     string `json:"value"`
	Headers   []struct {
		Key, Value string
	} `json:"headers"`
}

// Every admin command of the kbroker binary against a 3-broker cluster:
// its JSON output, and its effect seen through kadm.
func TestCLIOnThreeBrokers(t *testing.T) {
	needOwnCluster(t)
	t.Parallel()
	c := startCluster(t, clusterOpts{brokers: 3, flags: replicationFlags()})
	seeds := c.seeds()
	adm := newAdmin(t, seeds)
	ctx := ctxTimeout(t, 3*time.Minute)
	topic, moved := uniqueTopic("cli"), uniqueTopic("cli-moved")

	t.Run("cluster info", func(t *testing.T) {
		var info struct {
			ClusterID  string `json:"cluster_id"`
			Controller int32  `json:"controller"`
			Brokers    []struct {
				ID      int32  `json:"id"`
				Version string `json:"version"`
			} `json:"brokers"`
		}
		kbjson(t, seeds, &info, "", "cluster", "info")
		if len(info.Brokers) != 3 || info.Controller < 1 || info.ClusterID == "" || info.Brokers[0].Version == "" {
			t.Fatalf("cluster info %+v", info)
		}
	})
	t.Run("topic create, list, describe", func(t *testing.T) {
		kbjson(t, seeds, nil, "", "topic", "create", topic, "-p", "3", "-r", "3", "-c", "retention.ms=3600000")
		kbjson(t, seeds, nil, "", "topic", "create", moved, "-p", "1", "-r", "2")
		c.waitTopicEverywhere(topic, 3, 3)
		type listed struct {
			Name              string `json:"name"`
			Partitions        int    `json:"partitions"`
			ReplicationFactor int    `json:"replication_factor"`
		}
		var list []listed
		kbjson(t, seeds, &list, "", "topic", "list")
		i := slices.IndexFunc(list, func(x listed) bool { return x.Name == topic })
		if i < 0 || list[i].Partitions != 3 || list[i].ReplicationFactor != 3 {
			t.Fatalf("topic list %+v", list)
		}
		d := describeTopicCLI(t, seeds, topic)
		for _, p := range d.Partitions {
			if len(p.ISR) != 3 || p.Leader < 1 || p.HighWatermark != 0 {
				t.Fatalf("partition %+v", p)
			}
		}
		if v := d.config("retention.ms"); v.Value != "3600000" || v.Source != "DYNAMIC_TOPIC_CONFIG" {
			t.Fatalf("retention.ms %+v", v)
		}
		kbfails(t, seeds, 1, "TOPIC_ALREADY_EXISTS (Kafka error 36", "topic", "create", topic)
	})
	t.Run("topic alter-config and add-partitions", func(t *testing.T) {
		kbjson(t, seeds, nil, "", "topic", "alter-config", topic, "--set", "min.insync.replicas=2", "--delete", "retention.ms")
		// Any broker may answer DescribeConfigs: wait for the change to reach it.
		waitFor(t, 10*time.Second, "the altered configs", func() error {
			rcs, err := adm.DescribeTopicConfigs(ctx, topic)
			if err != nil {
				return err
			}
			rc, _ := rcs.On(topic, nil)
			for _, cfg := range rc.Configs {
				if cfg.Key == "min.insync.replicas" && cfg.MaybeValue() != "2" || cfg.Key == "retention.ms" && cfg.Source.String() != "DEFAULT_CONFIG" {
					return fmt.Errorf("%s=%s (%v)", cfg.Key, cfg.MaybeValue(), cfg.Source)
				}
			}
			return nil
		})
		kbjson(t, seeds, nil, "", "topic", "add-partitions", topic, "--num", "1")
		c.waitTopicEverywhere(topic, 4, 3)
	})
	t.Run("produce and consume", func(t *testing.T) {
		var in strings.Builder
		for i := range 12 {
			fmt.Fprintf(&in, "key-%d:value-%d\n", i, i)
		}
		acks := jsonLines[struct {
			Partition int32 `json:"partition"`
			Offset    int64 `json:"offset"`
		}](t, kbjson(t, seeds, nil, in.String(), "produce", topic, "-K", ":", "-H", "source=cli").stdout)
		if len(acks) != 12 {
			t.Fatalf("%d acknowledgements, want 12", len(acks))
		}
		got := map[string]string{}
		for _, r := range consumeN(t, seeds, topic, 12, 30*time.Second) {
			if len(r.Headers) != 1 || r.Headers[0].Key != "source" || string(r.Headers[0].Value) != "cli" {
				t.Fatalf("record headers %v", r.Headers)
			}
			got[string(r.Key)] = string(r.Value)
		}
		if got["key-7"] != "value-7" || len(got) != 12 {
			t.Fatalf("consumed with kgo: %v", got)
		}
		recs := jsonLines[cliRecord](t, kbjson(t, seeds, nil, "", "consume", topic, "--to", "end").stdout)
		if len(recs) != 12 || len(recs[0].Headers) != 1 || recs[0].Headers[0].Value != "cli" {
			t.Fatalf("consume --to end: %d records %+v", len(recs), recs)
		}
		p := acks[0].Partition
		last := jsonLines[cliRecord](t, kbjson(t, seeds, nil, "", "consume", topic, "-p", fmt.Sprint(p), "-o", "-1", "--to", "end").stdout)
		if len(last) != 1 || last[0].Partition != p {
			t.Fatalf("the last record of partition %d: %+v", p, last)
		}
		two := jsonLines[cliRecord](t, kbjson(t, seeds, nil, "", "consume", topic, "-n", "2", "--encoding", "hex").stdout)
		if len(two) != 2 || !strings.HasPrefix(two[0].Value, "76616c75652d") { // "value-"
			t.Fatalf("consume -n 2 --encoding hex: %+v", two)
		}
		d := describeTopicCLI(t, seeds, topic)
		var hw int64
		for _, pt := range d.Partitions {
			hw += pt.HighWatermark
			if pt.HighWatermark > 0 && (pt.Size <= 0 || pt.LogEnd != pt.HighWatermark) {
				t.Errorf("partition %+v: a size and a log end at the high watermark expected", pt)
			}
		}
		if hw != 12 {
			t.Fatalf("high watermarks sum to %d, want 12", hw)
		}
	})
	group := uniqueTopic("cli-group")
	t.Run("group consume, describe, seek, delete", func(t *testing.T) {
		recs := jsonLines[cliRecord](t, kbjson(t, seeds, nil, "", "consume", topic, "-g", group, "-n", "12").stdout)
		if len(recs) != 12 {
			t.Fatalf("group consume read %d records", len(recs))
		}
		if d := describeGroupCLI(t, seeds, group); d.TotalLag != 0 || len(d.Partitions) != 4 {
			t.Fatalf("after reading everything: %+v", d)
		}
		kbjson(t, seeds, nil, "a:1\nb:2\nc:3\n", "produce", topic, "-K", ":")
		d := describeGroupCLI(t, seeds, group)
		if d.TotalLag != 3 || d.State != "Empty" {
			t.Fatalf("after 3 more records: %+v", d)
		}
		var groups []struct{ Group, State string }
		kbjson(t, seeds, &groups, "", "group", "list")
		if !slices.ContainsFunc(groups, func(g struct{ Group, State string }) bool { return g.Group == group }) {
			t.Fatalf("group list %+v", groups)
		}
		var plan struct {
			Partitions []struct {
				Current, New int64
			} `json:"partitions"`
		}
		kbjson(t, seeds, &plan, "", "group", "seek", group, "--to", "earliest", "--dry-run")
		if len(plan.Partitions) != 4 || describeGroupCLI(t, seeds, group).TotalLag != 3 {
			t.Fatalf("dry run %+v moved the group", plan)
		}
		kbjson(t, seeds, nil, "", "group", "seek", group, "--to", "earliest")
		offs, err := adm.FetchOffsets(ctx, group)
		must(t, err, "FetchOffsets")
		offs.Each(func(o kadm.OffsetResponse) {
			if o.At != 0 {
				t.Errorf("after seek to earliest: %s/%d at %d", o.Topic, o.Partition, o.At)
			}
		})
		if d := describeGroupCLI(t, seeds, group); d.TotalLag != 15 {
			t.Fatalf("lag after seek to earliest: %d, want 15", d.TotalLag)
		}
		kbjson(t, seeds, nil, "", "group", "seek", group, "--to", "@-1h")
		kbjson(t, seeds, nil, "", "group", "delete", group)
		kbfails(t, seeds, 1, fmt.Sprintf("group %q does not exist", group), "group", "describe", group)
	})
	t.Run("timestamps: produce, consume from and to, seek", func(t *testing.T) {
		timed := uniqueTopic("cli-timed")
		kbjson(t, seeds, nil, "", "topic", "create", timed, "-p", "1", "-r", "3")
		c.waitTopicEverywhere(timed, 1, 3)
		const t0 = int64(1_700_000_000_000)
		var in strings.Builder
		for i := range 5 { // one record a second from t0
			fmt.Fprintf(&in, `{"value":"at-%d","timestamp":%d}`+"\n", i, t0+int64(i)*1000)
		}
		kbjson(t, seeds, nil, in.String(), "produce", timed, "--input", "json")
		from := jsonLines[cliRecord](t, kbjson(t, seeds, nil, "", "consume", timed, "-o", fmt.Sprintf("@%d", t0+1500), "--to", "end").stdout)
		if len(from) != 3 || from[0].Offset != 2 || from[0].Value != "at-2" || from[0].Timestamp != t0+2000 {
			t.Fatalf("consume -o @t0+1.5s: %+v", from)
		}
		to := jsonLines[cliRecord](t, kbjson(t, seeds, nil, "", "consume", timed, "--to", fmt.Sprintf("@%d", t0+2500)).stdout)
		if len(to) != 3 || to[2].Offset != 2 {
			t.Fatalf("consume --to @t0+2.5s: %+v", to)
		}
		group := uniqueTopic("cli-timed-group")
		kbjson(t, seeds, nil, "", "consume", timed, "-g", group, "-n", "5")
		kbjson(t, seeds, nil, "", "group", "seek", group, "--to", fmt.Sprintf("@%d", t0+3000))
		offs, err := adm.FetchOffsets(ctx, group)
		must(t, err, "FetchOffsets")
		if o, ok := offs.Lookup(timed, 0); !ok || o.At != 3 {
			t.Fatalf("after seek to @t0+3s: %+v, want offset 3", o)
		}
		kbjson(t, seeds, nil, "", "group", "seek", group, "--to", "@-1h") // every record is older: the end
		offs, err = adm.FetchOffsets(ctx, group)
		must(t, err, "FetchOffsets")
		if o, _ := offs.Lookup(timed, 0); o.At != 5 {
			t.Fatalf("after seek to an hour ago (records of 2023): offset %d, want the end, 5", o.At)
		}
	})
	t.Run("group describe with a live member", func(t *testing.T) {
		live := uniqueTopic("cli-live-group")
		cl := newClient(t, seeds, kgo.ConsumerGroup(live), kgo.ConsumeTopics(topic), kgo.ClientID("cli-test-member"))
		var d struct {
			State   string `json:"state"`
			Members []struct {
				ClientID   string `json:"client_id"`
				Assignment []struct {
					Topic      string  `json:"topic"`
					Partitions []int32 `json:"partitions"`
				} `json:"assignment"`
			} `json:"members"`
			Partitions []struct {
				ClientID string `json:"client_id"`
			} `json:"partitions"`
		}
		waitFor(t, 30*time.Second, "the member in group describe", func() error {
			pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			cl.PollFetches(pctx) // joins the group and keeps the member alive
			cancel()
			res := kbcli(t, seeds, "", "group", "describe", live, "--format", "json")
			if err := json.Unmarshal([]byte(res.stdout), &d); err != nil {
				return fmt.Errorf("exit %d: %s", res.code, res.stderr)
			}
			if d.State != "Stable" || len(d.Members) != 1 || len(d.Members[0].Assignment) != 1 || len(d.Members[0].Assignment[0].Partitions) != 4 {
				return fmt.Errorf("%+v", d)
			}
			return nil
		})
		if d.Members[0].ClientID != "cli-test-member" || d.Members[0].Assignment[0].Topic != topic {
			t.Fatalf("member %+v", d.Members[0])
		}
		for _, p := range d.Partitions {
			if p.ClientID != "cli-test-member" {
				t.Fatalf("partition rows without the member's client: %+v", d.Partitions)
			}
		}
		kbfails(t, seeds, 1, "has 1 active members (state Stable)", "group", "seek", live, "--to", "earliest", "--topics", topic) // Kafka refuses to move a group with members
	})
	t.Run("cluster config", func(t *testing.T) {
		var cfg struct {
			Broker  int32 `json:"broker"`
			Configs []struct{ Name, Value, Source string }
		}
		kbjson(t, seeds, nil, "", "cluster", "config", "--broker", "2", "--set", "log.retention.ms=7200000")
		waitFor(t, 10*time.Second, "broker 2 to apply the change", func() error {
			kbjson(t, seeds, &cfg, "", "cluster", "config", "--broker", "2", "--changed")
			i := slices.IndexFunc(cfg.Configs, func(e struct{ Name, Value, Source string }) bool { return e.Name == "log.retention.ms" })
			if cfg.Broker != 2 || i < 0 || cfg.Configs[i].Value != "7200000" || cfg.Configs[i].Source != "DYNAMIC_BROKER_CONFIG" {
				return fmt.Errorf("broker 2 configs %+v", cfg)
			}
			return nil
		})
		kbjson(t, seeds, nil, "", "cluster", "config", "--broker", "2", "--delete", "log.retention.ms")
	})
	t.Run("reassign", func(t *testing.T) {
		md, err := adm.Metadata(ctx, moved)
		must(t, err, "Metadata")
		from := md.Topics[moved].Partitions[0].Replicas
		to := []int32{otherThan([]int32{1, 2, 3}, from...)[0], from[0]}
		var res struct {
			Moves []struct {
				Replicas []int32 `json:"replicas"`
				Done     bool    `json:"done"`
			} `json:"moves"`
		}
		run := kbjson(t, seeds, &res, "", "reassign", fmt.Sprintf("%s:0=%d,%d", moved, to[0], to[1]))
		if len(res.Moves) != 1 || !res.Moves[0].Done || !slices.Equal(sorted(res.Moves[0].Replicas), sorted(to)) ||
			!strings.Contains(run.stderr, "(1/1 done)") {
			t.Fatalf("reassign %v -> %v: %+v\nprogress: %s", from, to, res, run.stderr)
		}
		st := c.waitPartition(moved, 0, 30*time.Second, "the new replicas", func(s partitionState) bool {
			return slices.Equal(sorted(s.replicas), sorted(to))
		})
		t.Logf("moved %s/0 from %v to %v", moved, from, st.replicas)
		kbjson(t, seeds, nil, "", "reassign", "status")
	})
	t.Run("bad input", func(t *testing.T) {
		kbfails(t, seeds, 1, `topic "no-such-topic" does not exist`, "topic", "describe", "no-such-topic")
		kbfails(t, seeds, 1, `topic "no-such-topic" does not exist`, "consume", "no-such-topic", "--to", "end")
		kbfails(t, seeds, 2, `malformed offset "yesterday"`, "consume", topic, "-o", "yesterday")
		kbfails(t, seeds, 2, `malformed offset "@noon"`, "group", "seek", "g", "--to", "@noon")
		kbfails(t, seeds, 2, "malformed move", "reassign", moved+":0=1,two")
		kbfails(t, seeds, 1, "has no partition 9", "consume", topic, "-p", "9")
		kbfails(t, seeds[:0], 1, "cannot reach any broker of 127.0.0.1:1", "topic", "list", "--brokers", "127.0.0.1:1")
	})
	t.Run("health, a broker killed", func(t *testing.T) {
		var h struct {
			Healthy         bool             `json:"healthy"`
			UnderReplicated []map[string]any `json:"under_replicated_partitions"`
			Down            []int32          `json:"brokers_down"`
		}
		kbjson(t, seeds, &h, "", "cluster", "health")
		if !h.Healthy {
			t.Fatalf("health before the kill: %+v", h)
		}
		victim := c.node(3)
		victim.kill9()
		waitFor(t, 15*time.Second, "cluster health to report broker 3 down", func() error {
			res := kbcli(t, c.runningSeeds(), "", "cluster", "health", "--format", "json")
			if err := json.Unmarshal([]byte(res.stdout), &h); err != nil {
				return fmt.Errorf("exit %d: %s %s", res.code, res.stdout, res.stderr)
			}
			if res.code != 1 || h.Healthy || len(h.UnderReplicated) == 0 || !slices.Equal(h.Down, []int32{3}) {
				return fmt.Errorf("exit %d: %+v", res.code, h)
			}
			return nil
		})
		c.restart(victim)
		kbjson(t, c.seeds(), &h, "", "cluster", "health", "--wait", "60s")
		if !h.Healthy {
			t.Fatalf("health --wait returned unhealthy: %+v", h)
		}
	})
	t.Run("topic delete", func(t *testing.T) {
		kbjson(t, seeds, nil, "", "topic", "delete", topic, moved)
		waitFor(t, 10*time.Second, "the topic gone from metadata", func() error {
			md, err := adm.Metadata(ctx, topic)
			if err != nil {
				return err
			}
			if md.Topics.Has(topic) {
				return fmt.Errorf("topic %s still in metadata", topic)
			}
			return nil
		})
	})
}

type cliTopic struct {
	Partitions []cliPartition `json:"partitions"`
	Configs    []struct{ Name, Value, Source string }
}

func (d cliTopic) config(name string) struct{ Name, Value, Source string } {
	for _, c := range d.Configs {
		if c.Name == name {
			return c
		}
	}
	return struct{ Name, Value, Source string }{}
}

func describeTopicCLI(t *testing.T, seeds []string, topic string) cliTopic {
	t.Helper()
	var d cliTopic
	kbjson(t, seeds, &d, "", "topic", "describe", topic)
	return d
}

type cliGroup struct {
	State      string `json:"state"`
	TotalLag   int64  `json:"total_lag"`
	Partitions []struct {
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
		Committed int64  `json:"committed_offset"`
		LogEnd    int64  `json:"log_end_offset"`
		Lag       int64  `json:"lag"`
	} `json:"partitions"`
}

func describeGroupCLI(t *testing.T, seeds []string, group string) cliGroup {
	t.Helper()
	var d cliGroup
	kbjson(t, seeds, &d, "", "group", "describe", group)
	return d
}
