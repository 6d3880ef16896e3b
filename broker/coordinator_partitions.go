package broker

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/replication/controller"
)

// coordinatorPartitions feeds a coordinator (groups, transactions) the
// partitions of its internal topic that this broker leads, in the order
// the images say, on one owned goroutine: loading a partition replays its
// records, which may take a while, and must not hold up the metadata
// goroutine. A new leader epoch of a partition led already loads it again
// (the coordinator epoch of transaction markers is that epoch).
type coordinatorPartitions struct {
	b     *Broker
	topic string
	log   *slog.Logger
	// load makes the coordinator serve partition idx at leader epoch
	// epoch; resign stops it.
	load   func(idx, epoch int32, part *replication.Partition) error
	resign func(idx int32)

	work chan coordinatorTransition
	stop chan struct{}
	done chan struct{}

	// led is the leader epoch of each partition this broker leads, as last
	// sent; owned by apply's goroutine (the image goroutine).
	led map[int32]int32
}

type coordinatorTransition struct {
	partition, epoch int32
	leader           bool
	part             *replication.Partition
}

func newCoordinatorPartitions(b *Broker, topic string, log *slog.Logger,
	load func(idx, epoch int32, part *replication.Partition) error, resign func(idx int32)) *coordinatorPartitions {
	c := &coordinatorPartitions{b: b, topic: topic, log: log, load: load, resign: resign,
		work: make(chan coordinatorTransition, 1024), stop: make(chan struct{}), done: make(chan struct{}),
		led: map[int32]int32{}}
	go c.run()
	return c
}

// run applies leadership transitions one at a time.
func (c *coordinatorPartitions) run() {
	defer close(c.done)
	for {
		select {
		case t := <-c.work:
			if !t.leader {
				c.resign(t.partition)
				continue
			}
			start := time.Now()
			if err := c.load(t.partition, t.epoch, t.part); err != nil {
				c.log.Error("loading coordinator partition failed", "topic", c.topic, "partition", t.partition, "err", err)
				continue
			}
			c.log.Info("coordinator partition loaded", "topic", c.topic, "partition", t.partition,
				"leader_epoch", t.epoch, "took", time.Since(start))
		case <-c.stop:
			return
		}
	}
}

// close stops the goroutine (the coordinator is closed by its owner).
func (c *coordinatorPartitions) close() {
	close(c.stop)
	<-c.done
}

// apply sends the leadership changes of the topic's partitions. Runs on
// the image goroutine after the partitions' roles were applied.
func (c *coordinatorPartitions) apply(img *controller.Image) {
	seen := map[int32]bool{}
	if t, ok := img.Topics[c.topic]; ok {
		for _, p := range t.Partitions {
			if p.Leader != c.b.cfg.NodeID {
				continue
			}
			seen[p.Index] = true
			if epoch, led := c.led[p.Index]; led && epoch == p.LeaderEpoch {
				continue
			}
			part, held := c.b.replicas.Partition(c.topic, p.Index)
			if !held {
				continue
			}
			c.led[p.Index] = p.LeaderEpoch
			c.send(coordinatorTransition{partition: p.Index, epoch: p.LeaderEpoch, leader: true, part: part})
		}
	}
	for idx := range c.led {
		if !seen[idx] {
			delete(c.led, idx)
			c.send(coordinatorTransition{partition: idx})
		}
	}
}

func (c *coordinatorPartitions) send(t coordinatorTransition) {
	select {
	case c.work <- t:
	case <-c.stop:
	}
}

// internalTopic is how an internal topic is created on first use.
type internalTopic struct {
	name       string
	partitions int32
	// rf is the configured replication factor; minISR, if > 0, its
	// min.insync.replicas, lowered with it.
	rf      int16
	minISR  int32
	configs map[string]string
}

// createInternalTopic creates an internal topic as Kafka does on first
// use (__consumer_offsets, __transaction_state). The replication factor is
// lowered (with a warning, and min.insync.replicas with it) only when the
// whole cluster has fewer registered brokers, so that a single node works
// without set-up; a cluster with enough brokers but some down waits for
// them, as Kafka does. mu allows one creation at a time.
func (b *Broker) createInternalTopic(ctx context.Context, mu *sync.Mutex, spec internalTopic) error {
	if !mu.TryLock() {
		return nil // another request is creating it
	}
	defer mu.Unlock()
	img := b.view().img
	rf := spec.rf
	if registered := int16(len(img.Brokers)); registered < rf {
		b.logger.Warn("the replication factor of an internal topic is larger than the cluster; creating it with fewer replicas",
			"topic", spec.name, "configured", rf, "brokers", registered)
		rf = max(registered, 1)
	}
	live := 0
	for _, br := range img.Brokers {
		if !br.Fenced {
			live++
		}
	}
	if live < int(rf) {
		return fmt.Errorf("%d live brokers, %s needs a replication factor of %d", live, spec.name, rf)
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	req.TimeoutMillis = 30000
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = spec.name, spec.partitions, rf
	configs := spec.configs
	if spec.minISR > 0 {
		configs["min.insync.replicas"] = strconv.Itoa(int(min(spec.minISR, int32(rf))))
	}
	for k, v := range configs {
		t.Configs = append(t.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: k, Value: kmsg.StringPtr(v)})
	}
	req.Topics = append(req.Topics, t)
	resp, err := b.ctrl.Forward(ctx, req)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode); err != nil && err != kerr.TopicAlreadyExists {
		return err
	}
	b.logger.Info("created an internal topic", "topic", spec.name, "partitions", spec.partitions, "replication_factor", rf)
	return nil
}

// internalTopicLeader answers which broker leads partition p of an
// internal topic, with its endpoint on listener: the coordinator of the
// keys that hash there. COORDINATOR_NOT_AVAILABLE while there is none.
func (b *Broker) internalTopicLeader(t *controller.Topic, p int32, listener string) (int32, controller.Endpoint, error) {
	img := b.view().img
	if p < 0 || int(p) >= len(t.Partitions) {
		return -1, controller.Endpoint{}, kerr.CoordinatorNotAvailable
	}
	leader := t.Partitions[p].Leader
	br, ok := img.Brokers[leader]
	if leader < 0 || !ok || br.Fenced {
		return -1, controller.Endpoint{}, kerr.CoordinatorNotAvailable
	}
	ep, ok := endpointFor(br, listener, b.cfg.InterBrokerListenerName)
	if !ok {
		return -1, controller.Endpoint{}, kerr.CoordinatorNotAvailable
	}
	return leader, ep, nil
}
