package compat

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/child"
)

// The read-process-write chain of issue 14's acceptance: a franz-go
// GroupTransactSession consumes an input topic read_committed and produces
// each record to an output topic in the transaction that commits the
// consumed offsets. Its process is killed (kill -9) mid-stream and
// restarted, then the transaction coordinator's broker is killed -9 and
// restarted, then the leader of an output partition: every input record
// must appear in the output exactly once.
func TestTxnChainExactlyOnce(t *testing.T) {
	needOwnCluster(t)
	t.Parallel()
	c := startCluster(t, clusterOpts{brokers: 3, flags: replicationFlags("--min.insync.replicas=2",
		"--group.initial.rebalance.delay.ms=0", "--default.replication.factor=3")})
	adm := newAdmin(t, c.seeds())
	in, out := newTopic(t, adm, 3, 3, nil), newTopic(t, adm, 3, 3, nil)
	const n = 4000
	input := values("in-", n)
	producer := newClient(t, c.seeds(), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	_, err := produceValues(ctxTimeout(t, time.Minute), producer, in, input)
	must(t, err, "producing the input")

	group, txnID := uniqueTopic("chain-group"), uniqueTopic("chain-txn")
	proc := &txnProcessor{t: t, seeds: c.seeds(), in: in, out: out, group: group, txnID: txnID}
	start := time.Now()
	progress := func(want int64, d time.Duration, what string) {
		t.Helper()
		defer func() { t.Logf("%s: at %s", what, time.Since(start).Round(100*time.Millisecond)) }()
		waitFor(t, d, what, func() error {
			// A fresh client each time: one that cached a killed
			// coordinator keeps dialing it.
			cl, err := kgo.NewClient(kgo.SeedBrokers(c.runningSeeds()...))
			if err != nil {
				return err
			}
			defer cl.Close()
			done, err := committedInput(kadm.NewClient(cl), group, in)
			if err == nil && done < want {
				err = fmt.Errorf("%d of %d input records processed", done, want)
			}
			return err
		})
	}

	proc.start()
	progress(n/5, time.Minute, "the processor's first commits")
	proc.kill9()
	proc.start() // the same transactional id: fences the killed instance
	progress(2*n/5, time.Minute, "commits after the processor's restart")

	coord := txnCoordinator(t, c, txnID)
	t.Logf("killing the transaction coordinator, broker %d", coord)
	c.node(coord).kill9()
	progress(3*n/5, 2*time.Minute, "commits after the coordinator's kill")
	c.restart(c.node(coord))

	st, err := c.describe(out, 0)
	must(t, err, "describing %s-0", out)
	t.Logf("killing broker %d, leader of %s-0", st.leader, out)
	c.node(st.leader).kill9()
	progress(n, 2*time.Minute, "every input record processed after the output leader's kill")
	c.restart(c.node(st.leader))
	proc.stop()

	got := readValues(t, c.seeds(), out, n, 30*time.Second, true)
	if len(got) != n {
		logTxnState(t, c, out)
		all := readValues(t, c.seeds(), out, 2*n, 10*time.Second, false)
		t.Logf("read_uncommitted reads %d records", len(all))
		f, _ := os.CreateTemp("", "txn-chain-*.log")
		fmt.Fprintf(f, "read_committed: %v\nread_uncommitted: %v\nprocessor:\n%s", got, all, proc.output())
		f.Close()
		t.Logf("the processor's output and the records read are in %s", f.Name())
	}
	checkExactlyOnce(t, input, got, "out-")
	if logs := proc.output(); strings.Contains(logs, "panic") {
		t.Fatalf("the processor panicked:\n%s", tail(logs, 40))
	}
}

// checkExactlyOnce checks that got holds prefix+v for every v of input,
// once each, and nothing else.
func checkExactlyOnce(t *testing.T, input, got []string, prefix string) {
	t.Helper()
	seen := map[string]int{}
	for _, v := range got {
		seen[v]++
	}
	var missing, dup []string
	for _, v := range input {
		switch seen[prefix+v] {
		case 0:
			missing = append(missing, v)
		case 1:
		default:
			dup = append(dup, v)
		}
		delete(seen, prefix+v)
	}
	if len(missing) > 0 || len(dup) > 0 || len(seen) > 0 {
		t.Fatalf("output of %d records: %d missing (%v), %d duplicated (%v), %d unexpected",
			len(got), len(missing), head(missing), len(dup), head(dup), len(seen))
	}
}

func head(s []string) []string { return s[:min(len(s), 5)] }

// committedInput is how many input records the group has committed.
func committedInput(adm *kadm.Client, group, topic string) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return 0, fmt.Errorf("fetching the group's offsets: %w", err)
	}
	var sum int64
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.Err == nil {
			sum += o.At
		}
	})
	return sum, nil
}

// txnCoordinator finds the broker coordinating a transactional id.
func txnCoordinator(t *testing.T, c *cluster, id string) int32 {
	t.Helper()
	var leader int32
	waitFor(t, 30*time.Second, "the transaction coordinator", func() error {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType, req.CoordinatorKeys = 1, []string{id}
		cl := newClient(t, c.runningSeeds())
		resp, err := req.RequestWith(context.Background(), cl)
		if err != nil {
			return err
		}
		if code := resp.Coordinators[0].ErrorCode; code != 0 {
			return fmt.Errorf("FindCoordinator error %d", code)
		}
		leader = resp.Coordinators[0].NodeID
		return nil
	})
	return leader
}

// txnProcessor runs TestTxnProcessorChild in a process of its own, so that
// it can be killed -9 like a real application.
type txnProcessor struct {
	t                     *testing.T
	seeds                 []string
	in, out, group, txnID string
	proc                  child.Process
	cleanup               sync.Once
	logs                  outputBuffer
}

func (p *txnProcessor) start() {
	p.t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestTxnProcessorChild$", "-test.v")
	cmd.Env = append(os.Environ(), "KBROKER_BIN="+kbrokerBin, "KBROKER_TXN_CHILD=1",
		"TXN_SEEDS="+strings.Join(p.seeds, ","), "TXN_IN="+p.in, "TXN_OUT="+p.out, "TXN_GROUP="+p.group, "TXN_ID="+p.txnID)
	cmd.Stdout, cmd.Stderr = &p.logs, &p.logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	must(p.t, p.proc.Start(cmd, nil), "starting the processor")
	p.cleanup.Do(func() { p.t.Cleanup(p.report) })
}

// report stops the processor and shows its output if the test failed.
func (p *txnProcessor) report() {
	p.stop()
	if p.t.Failed() {
		p.t.Logf("---- processor output (last 8192 bytes) ----\n%s", tail(p.output(), 8192))
	}
}

func (p *txnProcessor) output() string { return p.logs.String() }

func (p *txnProcessor) kill9() {
	p.proc.Signal(syscall.SIGKILL)
	if !p.proc.WaitExit(10 * time.Second) {
		p.t.Fatal("the processor did not die")
	}
}

func (p *txnProcessor) stop() {
	p.proc.Signal(syscall.SIGKILL)
	p.proc.WaitExit(10 * time.Second)
}

// TestTxnProcessorChild is the processor of TestTxnChainExactlyOnce (run
// only as its child process): read_committed, a transaction per poll of at
// most 100 records, ten a second at most, until killed.
func TestTxnProcessorChild(t *testing.T) {
	if os.Getenv("KBROKER_TXN_CHILD") == "" {
		t.Skip("the processor of TestTxnChainExactlyOnce")
	}
	sess, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(strings.Split(os.Getenv("TXN_SEEDS"), ",")...),
		kgo.TransactionalID(os.Getenv("TXN_ID")), kgo.TransactionTimeout(20*time.Second),
		kgo.ConsumerGroup(os.Getenv("TXN_GROUP")), kgo.ConsumeTopics(os.Getenv("TXN_IN")),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RequireStableFetchOffsets(),
		kgo.SessionTimeout(6*time.Second), kgo.RecordRetries(100), kgo.RequestRetries(100),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelInfo, func() string { return time.Now().Format("15:04:05.000 ") })),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	out := os.Getenv("TXN_OUT")
	ctx := context.Background()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for range tick.C {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := sess.PollRecords(pctx, 100)
		cancel()
		if errors.Is(fs.Err0(), kgo.ErrClientClosed) {
			return
		}
		if fs.NumRecords() == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			t.Fatalf("begin: %v", err)
		}
		var mu sync.Mutex
		in, outs := map[int32][2]int64{}, map[int32][2]int64{}
		span := func(m map[int32][2]int64, p int32, o int64) {
			r, ok := m[p]
			if !ok {
				r = [2]int64{o, o}
			}
			m[p] = [2]int64{min(r[0], o), max(r[1], o)}
		}
		failed := false
		fs.EachRecord(func(r *kgo.Record) {
			span(in, r.Partition, r.Offset)
			sess.Produce(ctx, &kgo.Record{Topic: out, Value: append([]byte("out-"), r.Value...)}, func(r *kgo.Record, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					span(outs, r.Partition, r.Offset)
				} else {
					failed = true
				}
			})
		})
		// After the flush every promise has run: a record that failed
		// means abort (GroupTransactSession leaves that check to the
		// application).
		end := kgo.TryCommit
		if err := sess.Client().Flush(ctx); err != nil {
			t.Fatalf("flush: %v", err)
		}
		mu.Lock()
		if failed {
			end = kgo.TryAbort
		}
		mu.Unlock()
		committed, err := sess.End(ctx, end)
		mu.Lock()
		t.Logf("transaction of %d records (in %v, out %v): committed %v, err %v", fs.NumRecords(), in, outs, committed, err)
		mu.Unlock()
	}
}

// logTxnState logs what a failed exactly-once check needs: per partition
// of topic the HW, the LSO and the producers with their open transactions.
func logTxnState(t *testing.T, c *cluster, topic string) {
	t.Helper()
	adm := newAdmin(t, c.runningSeeds())
	ctx := ctxTimeout(t, 10*time.Second)
	hw, err1 := adm.ListEndOffsets(ctx, topic)
	lso, err2 := adm.ListCommittedOffsets(ctx, topic)
	t.Logf("end offsets (read_uncommitted, err %v): %v", err1, hw)
	t.Logf("end offsets (read_committed, err %v): %v", err2, lso)
	producers, err := adm.DescribeProducers(ctx, kadm.TopicsSet{topic: {0: {}, 1: {}, 2: {}}})
	t.Logf("producers (err %v):", err)
	producers.EachProducer(func(p kadm.DescribedProducer) {
		t.Logf("  %s-%d: producer %d epoch %d, coordinator epoch %d, open transaction at %d",
			p.Topic, p.Partition, p.ProducerID, p.ProducerEpoch, p.CoordinatorEpoch, p.CurrentTxnStartOffset)
	})
}
