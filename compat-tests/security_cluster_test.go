package compat

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A three-broker secured cluster: partitions replicate over the
// authenticated inter-broker listener (SCRAM-SHA-512 over TLS) and the
// metadata quorum over the mutual-TLS controller listener; SCRAM
// credentials made with the admin API authenticate on every broker and
// survive a restart of the whole cluster; ACLs survive the loss of the
// active controller (the new one commits more on top of them, and the old
// one catches up with all of them when it returns) and the restart.
func TestSecureClusterReplicatesAndKeepsCredentialsAndACLs(t *testing.T) {
	t.Parallel()
	// A short broker session: when the killed controller also leads the
	// partition, its leadership moves once the new controller fences it,
	// a session after taking over (9 s by default, a produce's whole 10 s).
	sc := startSecureCluster(t, secureOpts{brokers: 3, properties: []string{"min.insync.replicas=2",
		"broker.session.timeout.ms=3000", "broker.heartbeat.interval.ms=500"}})
	adm := sc.admin()
	topic := newTopic(t, adm, 1, 3, nil)
	admin := sc.client(0, append(sc.scram("admin", adminPassword, 512), kgo.RequiredAcks(kgo.AllISRAcks()))...)
	must(t, produceAs(t, admin, topic), "acks=all produce with RF=3")
	sc.waitPartition(topic, 0, 30*time.Second, "all three in the ISR", func(p partitionState) bool { return len(p.isr) == 3 })

	upsertSCRAM(t, adm, "alice", alicePassword, kadm.ScramSha256)
	createACLs(t, adm, kadm.NewACLs().Allow("User:alice").Topics(topic).Operations(kadm.OpWrite, kadm.OpDescribe))
	aliceEverywhere := func(what string) {
		t.Helper()
		for i, n := range sc.nodes {
			if !n.Running() {
				continue
			}
			waitFor(t, 20*time.Second, fmt.Sprintf("alice (SCRAM-SHA-256) on broker %d %s", i+1, what), func() error {
				return ping(t, n.clientAddr, sc.scram("alice", alicePassword, 256)...)
			})
		}
	}
	aliceEverywhere("after AlterUserScramCredentials")
	sc.waitTopicVisibleEverywhere(topic, sc.scram("alice", alicePassword, 256))

	// The active controller goes; the ACL stays, on every survivor.
	active := sc.activeController(t)
	active.kill9()
	// The partition may have lost its leader with the controller: the
	// client finds the new one after the fencing and its metadata backoff.
	// Meanwhile an authorization failure would be the ACL lost.
	for i, n := range sc.nodes {
		if n.Running() {
			cl := sc.client(i, append(sc.scram("alice", alicePassword, 256), kgo.RecordRetries(20))...)
			waitFor(t, 30*time.Second, fmt.Sprintf("alice produces through broker %d after the controller %d died", i+1, active.id), func() error {
				err := produceAs(t, cl, topic)
				if errors.Is(err, kerr.TopicAuthorizationFailed) || errors.Is(err, kerr.SaslAuthenticationFailed) {
					t.Fatalf("alice through broker %d after the controller %d died: %v", i+1, active.id, err)
				}
				return err
			})
		}
	}
	waitFor(t, 20*time.Second, "a new active controller", func() error {
		if id := sc.activeController(t).id; id == active.id {
			return fmt.Errorf("still %d", id)
		}
		return nil
	})
	// The new controller commits an ACL on top of those it inherited;
	// the old controller, back, catches up with both from the log.
	var survivor int
	for i, n := range sc.nodes {
		if n.Running() {
			survivor = i
		}
	}
	second := newTopic(t, kadm.NewClient(sc.client(survivor, sc.scram("admin", adminPassword, 512)...)), 1, 2, nil) // two brokers live
	createACLs(t, kadm.NewClient(sc.client(survivor, sc.scram("admin", adminPassword, 512)...)),
		kadm.NewACLs().Allow("User:alice").Topics(second).Operations(kadm.OpWrite, kadm.OpDescribe))
	sc.restart(active.node)
	sc.waitTopicVisibleEverywhere(second, sc.scram("alice", alicePassword, 256))
	for i, n := range sc.nodes {
		cl := sc.client(i, append(sc.scram("alice", alicePassword, 256), kgo.RecordRetries(20))...)
		must(t, errors.Join(produceAs(t, cl, topic), produceAs(t, cl, second)),
			"alice produces to both topics through broker %d after the failover", n.id)
	}

	// The whole cluster restarts: credentials and ACLs are in the
	// metadata log.
	var wg sync.WaitGroup
	for _, n := range sc.nodes {
		wg.Add(1)
		go func() { defer wg.Done(); n.stop() }()
	}
	wg.Wait()
	for _, n := range sc.nodes {
		n.start()
	}
	sc.waitServing(60 * time.Second)
	aliceEverywhere("after a restart")
	cl := sc.client(2, append(sc.scram("alice", alicePassword, 256), kgo.RecordRetries(20))...)
	must(t, errors.Join(produceAs(t, cl, topic), produceAs(t, cl, second)), "alice produces after the restart")
	other := newTopic(t, adm, 1, 3, nil)
	if err := produceAs(t, cl, other); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice produces to %s without an ACL: %v, want TOPIC_AUTHORIZATION_FAILED", other, err)
	}
}

// activeController is the node the cluster says is the active controller.
func (sc *secureCluster) activeController(t *testing.T) *secureNode {
	t.Helper()
	var out *secureNode
	waitFor(t, 20*time.Second, "the active controller", func() error {
		for i, n := range sc.nodes {
			if !n.Running() {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			md, err := kadm.NewClient(sc.client(i, sc.scram("admin", adminPassword, 512)...)).BrokerMetadata(ctx)
			cancel()
			if err != nil {
				continue
			}
			if idx := slices.IndexFunc(sc.nodes, func(n *secureNode) bool { return n.id == md.Controller }); idx >= 0 && sc.nodes[idx].Running() {
				out = sc.nodes[idx]
				return nil
			}
		}
		return fmt.Errorf("no running broker names a running controller")
	})
	return out
}

// waitTopicVisibleEverywhere waits until every running broker answers a
// Metadata request for topic, from a client with opts, without an error:
// the ACLs that let that client see it have reached each broker's image.
func (sc *secureCluster) waitTopicVisibleEverywhere(topic string, opts []kgo.Opt) {
	sc.t.Helper()
	cl := sc.client(0, opts...)
	for _, n := range sc.nodes {
		if !n.Running() {
			continue
		}
		waitFor(sc.t, 20*time.Second, fmt.Sprintf("%s visible on broker %d", topic, n.id), func() error {
			req := kmsg.NewPtrMetadataRequest()
			req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(topic)}}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			resp, err := req.RequestWith(ctx, cl.Broker(int(n.id)))
			if err != nil {
				return err
			}
			if len(resp.Topics) != 1 {
				return fmt.Errorf("%d topics answered", len(resp.Topics))
			}
			return kerr.ErrorForCode(resp.Topics[0].ErrorCode)
		})
	}
}
