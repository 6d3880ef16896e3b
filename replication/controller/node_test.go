package controller

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testsupport"
)

// Integration tests: in-process nodes on loopback ports, real Raft, real
// bbolt stores, short timeouts.

func testOptions(t *testing.T, id int32, addr string, voters []Voter, dir string) Options {
	return Options{
		NodeID: id, ListenAddr: addr, Voters: voters, DataDir: dir,
		HeartbeatTimeout: 250 * time.Millisecond, ElectionTimeout: 500 * time.Millisecond,
		BrokerSessionTimeout: 1500 * time.Millisecond, BrokerHeartbeatInterval: 100 * time.Millisecond,
		Logger: testLogger(t),
	}
}

func startNode(t *testing.T, opts Options) *Node {
	t.Helper()
	n, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("start node %d: %v", opts.NodeID, err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond) // polling interval of a deadline-bounded wait
	}
}

// ctxT is a context that ends after d or with the test.
var ctxT = testsupport.Context

// startBroker runs the broker lifecycle on n up to unfenced.
func startBroker(t *testing.T, n *Node) {
	t.Helper()
	if err := n.StartBroker(BrokerRegistration{Listeners: []Endpoint{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9092 + n.opts.NodeID}}}); err != nil {
		t.Fatal(err)
	}
	n.SetReadyToUnfence()
	if err := n.WaitUnfenced(ctxT(t, 10*time.Second)); err != nil {
		t.Fatalf("node %d unfence: %v", n.opts.NodeID, err)
	}
}

func createTopic(t *testing.T, n *Node, name string, partitions int32, rf int16) *kmsg.CreateTopicsResponseTopic {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
	req.Topics = append(req.Topics, rt)
	resp, err := n.Forward(ctxT(t, 10*time.Second), req)
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	st := resp.(*kmsg.CreateTopicsResponse).Topics[0]
	if st.ErrorCode != 0 {
		t.Fatalf("create %s: %v %s", name, kerr.ErrorForCode(st.ErrorCode), deref(st.ErrorMessage))
	}
	return &st
}

func TestSingleNodeBootstrapsAndRestarts(t *testing.T) {
	dir := t.TempDir()
	addr := testsupport.FreeAddrs(t, 1)[0]
	opts := testOptions(t, 1, addr, nil, dir)
	n := startNode(t, opts)
	if err := n.WaitReady(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if !n.IsActive() || n.ActiveControllerID() != 1 {
		t.Fatalf("single node: active=%v controller=%d", n.IsActive(), n.ActiveControllerID())
	}
	var mu sync.Mutex
	var seen []*Image
	n.Subscribe(func(prev, next *Image) {
		mu.Lock()
		defer mu.Unlock()
		if prev == nil || next == nil || (len(seen) > 0 && seen[len(seen)-1] != prev) {
			t.Errorf("subscription out of order")
		}
		seen = append(seen, next)
	})
	startBroker(t, n)
	st := createTopic(t, n, "events", 3, 1)
	img := n.Image()
	clusterID := img.ClusterID
	if clusterID == "" || img.Topics["events"] == nil || img.Topics["events"].ID != st.TopicID {
		t.Fatalf("image %+v", img)
	}
	for _, p := range img.Topics["events"].Partitions {
		if p.Leader != 1 {
			t.Fatalf("partition %+v", p)
		}
	}
	eventually(t, 5*time.Second, "subscriber to see the topic", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) > 0 && seen[len(seen)-1].Topics["events"] != nil
	})
	// Snapshot, then a few more entries, so restart uses both snapshot and log.
	if err := n.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	createTopic(t, n, "after-snapshot", 1, 1)
	if err := n.ControlledShutdown(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal("second close:", err)
	}

	n2 := startNode(t, opts)
	if err := n2.WaitReady(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	img = n2.Image()
	if img.ClusterID != clusterID || img.Topics["events"] == nil || img.Topics["after-snapshot"] == nil {
		t.Fatalf("after restart: cluster %q topics %v", img.ClusterID, img.sortedTopicNames())
	}
	if img.Topics["events"].ID != st.TopicID {
		t.Fatal("topic id changed")
	}
	// The broker shut down cleanly (fenced, partitions offline with ISR
	// [1]); its new incarnation registers at once and takes them back.
	startBroker(t, n2)
	eventually(t, 5*time.Second, "leaders after restart", func() bool {
		for _, p := range n2.Image().Topics["events"].Partitions {
			if p.Leader != 1 {
				return false
			}
		}
		return true
	})
	if n2.BrokerEpoch() <= 0 {
		t.Fatal("broker epoch")
	}
}

type cluster struct {
	t      *testing.T
	voters []Voter
	dirs   map[int32]string
	nodes  map[int32]*Node
}

func startCluster(t *testing.T, n int) *cluster {
	addrs := testsupport.FreeAddrs(t, n)
	c := &cluster{t: t, dirs: map[int32]string{}, nodes: map[int32]*Node{}}
	for i := range n {
		c.voters = append(c.voters, Voter{ID: int32(i + 1), Addr: addrs[i]})
	}
	for _, v := range c.voters {
		c.dirs[v.ID] = t.TempDir()
		c.nodes[v.ID] = startNode(t, testOptions(t, v.ID, v.Addr, c.voters, c.dirs[v.ID]))
	}
	for _, nd := range c.nodes {
		if err := nd.WaitReady(ctxT(t, 10*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for _, nd := range c.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			startBroker(t, nd)
		}()
	}
	wg.Wait()
	return c
}

func (c *cluster) active() *Node {
	for _, n := range c.nodes {
		if n.IsActive() {
			return n
		}
	}
	return nil
}

func (c *cluster) waitActive() *Node {
	c.t.Helper()
	var a *Node
	eventually(c.t, 10*time.Second, "an active controller", func() bool { a = c.active(); return a != nil })
	return a
}

func (c *cluster) nonActive() *Node {
	a := c.waitActive()
	for _, id := range []int32{1, 2, 3, 4, 5} {
		if n := c.nodes[id]; n != nil && n != a {
			return n
		}
	}
	return nil
}

// converged waits until every running node's image satisfies cond.
func (c *cluster) converged(what string, cond func(*Image) bool) {
	c.t.Helper()
	eventually(c.t, 10*time.Second, what, func() bool {
		for _, n := range c.nodes {
			if !cond(n.Image()) {
				return false
			}
		}
		return true
	})
}

// agreeOnController waits until every node names active as the controller.
func (c *cluster) agreeOnController(active *Node) {
	c.t.Helper()
	eventually(c.t, 10*time.Second, "every node to see the active controller", func() bool {
		for _, n := range c.nodes {
			if n.ActiveControllerID() != active.opts.NodeID {
				return false
			}
		}
		return true
	})
}

func (c *cluster) kill(id int32) {
	c.t.Helper()
	if err := c.nodes[id].Close(); err != nil {
		c.t.Logf("close node %d: %v", id, err)
	}
	delete(c.nodes, id)
}

func TestThreeVotersFailover(t *testing.T) {
	c := startCluster(t, 3)
	first := c.waitActive()
	c.agreeOnController(first)
	via := c.nonActive()
	st := createTopic(t, via, "orders", 6, 3)
	if st.NumPartitions != 6 || st.ReplicationFactor != 3 {
		t.Fatalf("created %+v", st)
	}
	c.converged("topic on every node", func(img *Image) bool { return img.Topics["orders"] != nil })

	// Kill the active controller: another becomes active, and after the
	// session timeout the dead broker is fenced and loses its leaderships.
	dead := first.opts.NodeID
	c.kill(dead)
	second := c.waitActive()
	if second.opts.NodeID == dead {
		t.Fatal("dead node active")
	}
	c.converged("dead broker fenced and leaderless", func(img *Image) bool {
		if !img.Brokers[dead].Fenced {
			return false
		}
		for _, p := range img.Topics["orders"].Partitions {
			if p.Leader == dead || p.Leader == NoLeader || slices.Contains(p.ISR, dead) {
				return false
			}
		}
		return true
	})
	c.agreeOnController(second)
	// The new controller still serves writes, from either node.
	createTopic(t, c.nonActive(), "after-failover", 2, 2)
	c.converged("second topic", func(img *Image) bool { return img.Topics["after-failover"] != nil })

	// Restart the dead node: it catches up and unfences.
	c.nodes[dead] = startNode(t, testOptions(t, dead, c.voters[dead-1].Addr, c.voters, c.dirs[dead]))
	if err := c.nodes[dead].WaitReady(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if c.nodes[dead].Image().Topics["after-failover"] == nil {
		t.Fatal("restarted node missed a topic")
	}
	startBroker(t, c.nodes[dead])
}

func TestControlledShutdownMovesLeadership(t *testing.T) {
	c := startCluster(t, 3)
	createTopic(t, c.waitActive(), "t", 6, 3)
	// Shut down a broker that is not the active controller, so that its
	// controller keeps running while the broker drains.
	var target *Node
	for _, n := range c.nodes {
		if !n.IsActive() && n.Image().leads(n.opts.NodeID) {
			target = n
			break
		}
	}
	if target == nil {
		t.Skip("placement gave no leadership to a non-active node") // cannot happen with 6 partitions over 3 brokers
	}
	id := target.opts.NodeID
	if err := target.ControlledShutdown(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	img := c.waitActive().Image()
	if img.leads(id) || !img.Brokers[id].Fenced {
		t.Fatalf("after controlled shutdown: leads=%v fenced=%v", img.leads(id), img.Brokers[id].Fenced)
	}
	for _, p := range img.Topics["t"].Partitions {
		if p.Leader == NoLeader || slices.Contains(p.ISR, id) {
			t.Fatalf("partition %+v", p)
		}
	}
	if target.BrokerEpoch() != img.Brokers[id].Epoch {
		t.Fatal("epoch mismatch")
	}
}

func TestNonVoterJoins(t *testing.T) {
	c := startCluster(t, 3)
	createTopic(t, c.waitActive(), "before-join", 2, 3)
	addr := testsupport.FreeAddrs(t, 1)[0]
	n4 := startNode(t, testOptions(t, 4, addr, c.voters, t.TempDir()))
	c.nodes[4] = n4
	startBroker(t, n4)
	if err := n4.WaitReady(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if n4.Image().Topics["before-join"] == nil {
		t.Fatalf("non-voter image lacks the topic: %v", n4.Image().sortedTopicNames())
	}
	f := c.waitActive().raft.GetConfiguration()
	if err := f.Error(); err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, s := range f.Configuration().Servers {
		if s.ID == "4" {
			found = s.Suffrage == raft.Nonvoter && string(s.Address) == addr
		}
	}
	if !found {
		t.Fatalf("configuration %+v", f.Configuration())
	}
	// Node 4 is a live broker: a topic of RF 4 fits now, and reaches it.
	createTopic(t, n4, "rf4", 1, 4)
	c.converged("rf4 everywhere", func(img *Image) bool { return img.Topics["rf4"] != nil })
	if n4.IsActive() {
		t.Fatal("non-voter active")
	}
	c.agreeOnController(c.waitActive())
}

func TestHandleWhenNotActive(t *testing.T) {
	c := startCluster(t, 3)
	n := c.nonActive()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Topics = append(req.Topics, kmsg.NewCreateTopicsRequestTopic())
	resp, err := n.Handle(context.Background(), req)
	if err != nil || resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode != kerr.NotController.Code || !misdirected(resp) {
		t.Fatalf("%v %+v", err, resp)
	}
	if _, err := n.Handle(context.Background(), kmsg.NewPtrProduceRequest()); err == nil {
		t.Fatal("produce handled")
	}
	av, err := n.Handle(context.Background(), kmsg.NewPtrApiVersionsRequest())
	if err != nil || len(av.(*kmsg.ApiVersionsResponse).ApiKeys) != len(controllerAPIs)+2 { // + SaslHandshake, SaslAuthenticate
		t.Fatalf("api versions %v %+v", err, av)
	}
	// Over the wire, through the controller port of a non-active node.
	resp, err = n.client.RoundTrip(ctxT(t, 5*time.Second), n.advertised, req)
	if err != nil || resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode != kerr.NotController.Code {
		t.Fatalf("wire: %v %+v", err, resp)
	}
	v9 := kmsg.NewPtrApiVersionsRequest()
	v9.Version = 9
	resp, err = n.client.RoundTrip(ctxT(t, 5*time.Second), n.advertised, v9)
	if err != nil || resp.(*kmsg.ApiVersionsResponse).ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("api versions v9 over the wire: %v %+v", err, resp)
	}
}

// A broker that stops heartbeating (its process died) while the controller
// stays up is fenced after broker.session.timeout.ms and loses its ISR
// memberships and leaderships.
func TestSilentBrokerFenced(t *testing.T) {
	c := startCluster(t, 3)
	active := c.waitActive()
	createTopic(t, active, "t", 6, 3)
	victim := c.nonActive().opts.NodeID
	if !active.Image().leads(victim) {
		t.Fatalf("broker %d leads nothing: placement", victim)
	}
	start := time.Now()
	c.kill(victim)
	c.converged("silent broker fenced", func(img *Image) bool {
		// A node still catching up may not have the topic yet (brokers
		// start fenced, so Fenced alone says nothing).
		b, topic := img.Brokers[victim], img.Topics["t"]
		if b == nil || topic == nil || !b.Fenced {
			return false
		}
		for _, p := range topic.Partitions {
			if p.Leader == victim || p.Leader == NoLeader || slices.Contains(p.ISR, victim) {
				return false
			}
		}
		return true
	})
	if !active.IsActive() {
		t.Fatal("controller changed")
	}
	if d := time.Since(start); d < active.opts.BrokerSessionTimeout-active.opts.BrokerHeartbeatInterval {
		t.Fatalf("fenced after %v, before the %v session timeout", d, active.opts.BrokerSessionTimeout)
	}
}
