package broker

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/internal/testsupport"
	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/replication"
)

// The small-request path of w4 (issue 20) in process: three brokers on
// loopback sockets, a partition with RF=3, and one client sending one
// 1 KiB record per acks=all produce request, one request at a time. Each
// request is appended by the leader, fetched by both followers (their long
// polls woken by the append), acknowledged by their next fetches (which
// move the HW) and answered: the whole replication round trip of one
// record, sockets and goroutine wake-ups included. cpu-us/op is the
// process's CPU time (user and system) per record, which a loaded machine
// disturbs less than ns/op; instructions per record come from running the
// test binary under callgrind (BENCHMARKS.md).

// startTestCluster runs n brokers in process, every node a voter, and stops
// them when the test ends.
func startTestCluster(tb testing.TB, n int) []*Broker {
	tb.Helper()
	ports := testsupport.FreePorts(tb, 2*n)
	var voters []string
	for i := range n {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, ports[2*i+1]))
	}
	vs, err := config.ParseVoters(strings.Join(voters, ","))
	if err != nil {
		tb.Fatal(err)
	}
	brokers := make([]*Broker, n)
	errs := make(chan error, n)
	for i := range n {
		cfg := clusterNodeConfig(tb, i+1, ports[2*i], ports[2*i+1], vs)
		brokers[i] = New(cfg, slog.New(slog.DiscardHandler))
		go func(b *Broker) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			errs <- b.Start(ctx)
		}(brokers[i])
	}
	tb.Cleanup(func() {
		for _, b := range brokers {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			b.Shutdown(ctx)
			cancel()
		}
	})
	for range n {
		if err := <-errs; err != nil {
			tb.Fatal(err)
		}
	}
	return brokers
}

func clusterNodeConfig(tb testing.TB, id, clientPort, controllerPort int, voters []config.Voter) *config.Config {
	cfg := config.Defaults()
	cfg.NodeID = int32(id)
	l, err := config.ParseListeners(fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", clientPort, controllerPort))
	if err != nil {
		tb.Fatal(err)
	}
	cfg.Listeners, cfg.AdvertisedListeners = l, l[:1]
	cfg.ControllerListenerNames = []string{"CONTROLLER"}
	cfg.ControllerQuorumVoters = voters
	cfg.LogDirs = []string{tb.TempDir()}
	cfg.ControlledShutdownEnable = false
	cfg.MetricsListen = ""
	if err := cfg.Validate(); err != nil {
		tb.Fatal(err)
	}
	return cfg
}

// replicatedLeader creates topic (one partition, RF=3) and waits until its
// leader has every replica in the ISR and has seen every follower fetch.
func replicatedLeader(tb testing.TB, brokers []*Broker, topic string) *Broker {
	tb.Helper()
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.SetVersion(7)
	ct.TimeoutMillis = 30000
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = topic, 1, int16(len(brokers))
	ct.Topics = append(ct.Topics, t)
	if code := runRequest(tb, brokers[0], ct).(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; code != 0 {
		tb.Fatalf("create topic: error %d", code)
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		for _, b := range brokers {
			if p, ok := b.replicas.Partition(topic, 0); ok && replicatedLeaderReady(p.Snapshot(), len(brokers)) {
				return b
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	tb.Fatal("no leader with a full ISR after 60s")
	return nil
}

func replicatedLeaderReady(s replication.Snapshot, n int) bool {
	if s.Role != replication.RoleLeader || len(s.ISR) != n || len(s.FollowerLEOs) != n-1 {
		return false
	}
	for _, leo := range s.FollowerLEOs {
		if leo < 0 {
			return false
		}
	}
	return true
}

// processCPU is the process's user and system CPU time so far.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkReplicatedProduce(b *testing.B) {
	brokers := startTestCluster(b, 3)
	leader := replicatedLeader(b, brokers, "bench")
	client := protocol.NewClient(leader.cfg.ClientListener().Address(), "bench")
	defer client.Close()
	batch := benchBatch(1, 1024)
	ctx := context.Background()
	send := func() {
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(12)
		req.Acks, req.TimeoutMillis = -1, 30000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "bench"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = batch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := client.Request(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
			b.Fatalf("produce: error %d", code)
		}
	}
	for range 200 { // connections, version negotiation, first pages
		send()
	}
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	cpu := processCPU(b)
	b.ResetTimer()
	for b.Loop() {
		send()
	}
	b.StopTimer()
	b.ReportMetric(float64((processCPU(b)-cpu).Microseconds())/float64(b.N), "cpu-us/op")
}
