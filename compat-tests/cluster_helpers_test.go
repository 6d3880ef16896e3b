package compat

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// replicationFlags make a 3-broker test cluster react within seconds: a
// broker is fenced 3 s after its last heartbeat; a follower leaves the ISR
// after 4 s without catching up.
func replicationFlags(extra ...string) []string {
	return append([]string{
		"--broker.session.timeout.ms=3000",
		"--broker.heartbeat.interval.ms=300",
		"--replica.lag.time.max.ms=4000",
		"--replica.fetch.wait.max.ms=200",
		"--replica.fetch.backoff.ms=200",
		"--controller.quorum.election.timeout.ms=1000",
		"--auto.leader.rebalance.enable=false",
	}, extra...)
}

// partitionState is what Metadata says of one partition.
type partitionState struct {
	leader   int32
	epoch    int32
	replicas []int32
	isr      []int32
	err      error
}

// describe returns partition p of topic as seen by any serving broker (a
// paused one would only time out).
func (c *cluster) describe(topic string, p int32) (partitionState, error) {
	var lastErr error
	for _, n := range c.nodes {
		if !n.Serving() {
			continue
		}
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(n.clientAddr)}, c.clientOpts...)...)
		if err != nil {
			return partitionState{}, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		md, err := kadm.NewClient(cl).Metadata(ctx, topic)
		cancel()
		cl.Close()
		if err != nil {
			lastErr = err
			continue
		}
		td, ok := md.Topics[topic]
		if !ok {
			lastErr = fmt.Errorf("topic %s not in metadata", topic)
			continue
		}
		pd, ok := td.Partitions[p]
		if !ok {
			lastErr = fmt.Errorf("partition %d not in metadata (%v)", p, td.Err)
			continue
		}
		return partitionState{leader: pd.Leader, epoch: pd.LeaderEpoch, replicas: pd.Replicas, isr: sorted(pd.ISR), err: pd.Err}, nil
	}
	return partitionState{}, fmt.Errorf("no live broker answered: %v", lastErr)
}

func sorted(ids []int32) []int32 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}

// waitPartition waits until cond holds for the partition's metadata.
func (c *cluster) waitPartition(topic string, p int32, d time.Duration, what string, cond func(partitionState) bool) partitionState {
	c.t.Helper()
	var st partitionState
	waitFor(c.t, d, what, func() error {
		var err error
		st, err = c.describe(topic, p)
		if err != nil {
			return err
		}
		if !cond(st) {
			return fmt.Errorf("partition state leader=%d epoch=%d isr=%v", st.leader, st.epoch, st.isr)
		}
		return nil
	})
	return st
}

func (c *cluster) node(id int32) *node { return c.nodes[id-1] }

// runningSeeds lists the client addresses of the running nodes.
func (c *cluster) runningSeeds() []string {
	var out []string
	for _, n := range c.nodes {
		if n.Running() {
			out = append(out, n.clientAddr)
		}
	}
	return out
}

// logBytes returns the records of a partition's log on a node's disk, whole
// batches only, in offset order: what replicas must agree on.
func (n *node) logBytes(t *testing.T, topic string, partition int32) []byte {
	t.Helper()
	dir := filepath.Join(n.dataDir, fmt.Sprintf("%s-%d", topic, partition))
	files, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	var out []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, wholeBatches(b)...)
	}
	return out
}

// wholeBatches cuts a segment's bytes after its last whole batch (the
// active segment is preallocated, so its tail is zeros).
func wholeBatches(b []byte) []byte {
	n := 0
	for len(b)-n >= 61 {
		size := int(int32(binary.BigEndian.Uint32(b[n+8:]))) + 12
		if size < 61 || n+size > len(b) || b[n+16] != 2 {
			break
		}
		n += size
	}
	return b[:n]
}

// waitConverged waits until every node's copy of the partition is identical
// and ends at the same offset.
func (c *cluster) waitConverged(topic string, partition int32, d time.Duration) []byte {
	c.t.Helper()
	var ref []byte
	waitFor(c.t, d, "replicas to converge", func() error {
		ref = c.nodes[0].logBytes(c.t, topic, partition)
		for _, n := range c.nodes[1:] {
			got := n.logBytes(c.t, topic, partition)
			if !bytes.Equal(ref, got) {
				return fmt.Errorf("node %d holds %d bytes of log, node 1 holds %d (or they differ)", n.id, len(got), len(ref))
			}
		}
		return nil
	})
	return ref
}

// produceValues produces values synchronously, one at a time, returning the
// acknowledged ones and the first error.
func produceValues(ctx context.Context, cl *kgo.Client, topic string, values []string) (map[string]producedKey, error) {
	acked := map[string]producedKey{}
	for _, v := range values {
		r := &kgo.Record{Topic: topic, Value: []byte(v)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			return acked, err
		}
		acked[v] = producedKey{r.Partition, r.Offset}
	}
	return acked, nil
}

// readAll reads a partition from the start to its current end.
func readAll(t *testing.T, seeds []string, topic string) map[string]producedKey {
	t.Helper()
	ends := endOffsets(t, seeds, topic)
	var total int64
	for _, e := range ends {
		total += e
	}
	out := map[string]producedKey{}
	if total == 0 {
		return out
	}
	for _, r := range consumeN(t, seeds, topic, int(total), time.Minute) {
		if prev, dup := out[string(r.Value)]; dup {
			t.Fatalf("value %q appears twice: at %v and %d/%d", r.Value, prev, r.Partition, r.Offset)
		}
		out[string(r.Value)] = producedKey{r.Partition, r.Offset}
	}
	return out
}

func values(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%04d", prefix, i)
	}
	return out
}

func otherThan(ids []int32, not ...int32) []int32 {
	var out []int32
	for _, id := range ids {
		if !slices.Contains(not, id) {
			out = append(out, id)
		}
	}
	return out
}

// logEndOffset is the offset after the last whole batch of a node's copy of
// the partition, read from its files.
func (n *node) logEndOffset(t *testing.T, topic string, partition int32) int64 {
	b := n.logBytes(t, topic, partition)
	end := int64(0)
	for len(b) >= 61 {
		size := int(int32(binary.BigEndian.Uint32(b[8:]))) + 12
		end = int64(binary.BigEndian.Uint64(b)) + int64(int32(binary.BigEndian.Uint32(b[23:]))) + 1
		b = b[size:]
	}
	return end
}

// readAllSettled waits until the leader's high watermark has reached its log
// end (a new leader's HW catches up only once its followers fetch from it),
// then reads every record of the single-partition topic.
func (c *cluster) readAllSettled(topic string) map[string]producedKey {
	c.t.Helper()
	waitFor(c.t, 60*time.Second, "the leader's high watermark to reach its log end", func() error {
		st, err := c.describe(topic, 0)
		if err != nil {
			return err
		}
		if st.leader < 0 {
			return fmt.Errorf("no leader")
		}
		leo := c.node(st.leader).logEndOffset(c.t, topic, 0)
		hw := endOffsets(c.t, c.runningSeeds(), topic)[0]
		if hw != leo {
			return fmt.Errorf("leader %d: hw %d, log end %d", st.leader, hw, leo)
		}
		return nil
	})
	return readAll(c.t, c.runningSeeds(), topic)
}

// waitTopicEverywhere waits until every running broker's metadata shows the
// topic with a leader and a full ISR for each partition: the image has
// reached them all.
func (c *cluster) waitTopicEverywhere(topic string, partitions int32, rf int) {
	c.t.Helper()
	waitFor(c.t, 60*time.Second, "topic "+topic+" on every broker", func() error {
		for _, n := range c.nodes {
			if !n.Running() {
				continue
			}
			cl, err := kgo.NewClient(kgo.SeedBrokers(n.clientAddr))
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			req := kmsg.NewPtrMetadataRequest()
			req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(topic)}}
			resp, err := cl.Broker(int(n.id)).Request(ctx, req)
			if err != nil {
				// The broker is only known once the client has metadata.
				_, err = req.RequestWith(ctx, cl)
				if err == nil {
					resp, err = cl.Broker(int(n.id)).Request(ctx, req)
				}
			}
			cancel()
			cl.Close()
			if err != nil {
				return fmt.Errorf("node %d: %w", n.id, err)
			}
			md := resp.(*kmsg.MetadataResponse)
			if len(md.Topics) != 1 || len(md.Topics[0].Partitions) != int(partitions) {
				return fmt.Errorf("node %d does not know the topic yet", n.id)
			}
			for _, p := range md.Topics[0].Partitions {
				if p.Leader < 0 || len(p.ISR) != rf {
					return fmt.Errorf("node %d: partition %d leader %d isr %v", n.id, p.Partition, p.Leader, p.ISR)
				}
			}
		}
		return nil
	})
}

// steadyProducer writes numbered values one at a time (acks=all with the
// client's defaults) until stopped, remembering which were acknowledged.
type steadyProducer struct {
	mu    sync.Mutex
	acked []string
	stop  chan struct{}
	done  chan error
}

// startSteadyProducer starts producing prefix-0, prefix-1, ... with cl and
// waits until at least min values are acknowledged.
func startSteadyProducer(t *testing.T, ctx context.Context, cl *kgo.Client, prefix string, min int) *steadyProducer {
	t.Helper()
	p := &steadyProducer{stop: make(chan struct{}), done: make(chan error, 1)}
	go func() {
		for i := 0; ; i++ {
			select {
			case <-p.stop:
				p.done <- nil
				return
			default:
			}
			v := fmt.Sprintf("%s-%d", prefix, i)
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
				p.done <- err
				return
			}
			p.mu.Lock()
			p.acked = append(p.acked, v)
			p.mu.Unlock()
		}
	}()
	waitFor(t, 30*time.Second, "records flowing", func() error {
		if n := len(p.acknowledged()); n < min {
			return fmt.Errorf("%d acked", n)
		}
		return nil
	})
	return p
}

func (p *steadyProducer) acknowledged() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.acked)
}

// finish stops the producer and returns what was acknowledged and the
// first produce error.
func (p *steadyProducer) finish() ([]string, error) {
	close(p.stop)
	err := <-p.done
	return p.acknowledged(), err
}
