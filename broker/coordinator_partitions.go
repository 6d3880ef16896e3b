package broker

import (
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

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

	work chan leaderTransition
	stop chan struct{}
	done chan struct{}

	// led is the leader epoch of each partition this broker leads, as last
	// sent; owned by apply's goroutine (the image goroutine).
	led map[int32]int32
}

func newCoordinatorPartitions(b *Broker, topic string, log *slog.Logger,
	load func(idx, epoch int32, part *replication.Partition) error, resign func(idx int32)) *coordinatorPartitions {
	c := &coordinatorPartitions{b: b, topic: topic, log: log, load: load, resign: resign,
		work: make(chan leaderTransition, 1024), stop: make(chan struct{}), done: make(chan struct{}),
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
	for _, t := range c.b.leadershipChanges(img, c.topic, c.led) {
		c.send(t)
	}
}

func (c *coordinatorPartitions) send(t leaderTransition) {
	select {
	case c.work <- t:
	case <-c.stop:
	}
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
