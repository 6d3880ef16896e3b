package console

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kbroker/kbroker/admin"
	"github.com/kbroker/kbroker/internal/testsupport"
)

// With Login, the console authenticates each viewer through the broker
// (SASL) and reads as that viewer, so the cluster's ACLs decide what each
// sees: here kfake with its authorizer on, the super user admin and alice,
// who may describe and read topic orders only.
func TestLoginReadsAsTheViewer(t *testing.T) {
	allow := func(res kmsg.ACLResourceType, name string, op kmsg.ACLOperation) kfake.ACL {
		return kfake.ACL{Resource: res, Name: name, Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: op, Allow: true}
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.Superuser("SCRAM-SHA-256", "admin", "admin-pass"), kfake.SeedTopics(1, "orders", "secret"),
		kfake.User("SCRAM-SHA-256", "alice", "alice-pass",
			allow(kmsg.ACLResourceTypeTopic, "orders", kmsg.ACLOperationDescribe),
			allow(kmsg.ACLResourceTypeTopic, "orders", kmsg.ACLOperationRead),
			allow(kmsg.ACLResourceTypeTopic, "orders", kmsg.ACLOperationDescribeConfigs),
			allow(kmsg.ACLResourceTypeCluster, "kafka-cluster", kmsg.ACLOperationDescribe)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.SASL(scram.Auth{User: "admin", Pass: "admin-pass"}.AsSha256Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx := testsupport.Context(t, 10*time.Second)
	for _, topic := range []string{"orders", "secret"} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("in-" + topic)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := kadm.NewClient(cl).CommitOffsets(ctx, "billing", kadm.OffsetsFromRecords(kgo.Record{Topic: "secret", Partition: 0, Offset: 0})); err != nil {
		t.Fatal(err)
	}

	cfg := admin.DefaultConfig()
	cfg.Brokers, cfg.SecurityProtocol = c.ListenAddrs(), "SASL_PLAINTEXT"
	mux := http.NewServeMux()
	closeFn := Mount(mux, Options{Client: &cfg, Login: []string{"SCRAM-SHA-512", "SCRAM-SHA-256"}, Gatherer: prometheus.NewRegistry(), NodeID: 1, Interval: 20 * time.Millisecond})
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { srv.Close(); closeFn() })

	for _, who := range [][2]string{{"", ""}, {"alice", "wrong"}, {"nobody", "x"}} {
		status, h, _ := testsupport.Get(t, srv.URL+"/ui/topics", who[0], who[1])
		if status != http.StatusUnauthorized || !strings.HasPrefix(h.Get("WWW-Authenticate"), `Basic realm="kbroker console"`) {
			t.Errorf("user %q: status %d, challenge %q; want 401 with a Basic challenge", who[0], status, h.Get("WWW-Authenticate"))
		}
	}
	for _, c := range []struct {
		user, pass, path string
		status           int
		want, not        []string
	}{
		{"admin", "admin-pass", "/ui/topics", 200, []string{`data-topic="orders"`, `data-topic="secret"`}, nil},
		{"admin", "admin-pass", "/ui/messages?topic=secret", 200, []string{"in-secret"}, nil},
		{"admin", "admin-pass", "/ui/groups/billing", 200, []string{`data-partition="secret/0"`}, nil},
		{"alice", "alice-pass", "/ui/topics", 200, []string{`data-topic="orders"`}, []string{"secret"}},
		{"alice", "alice-pass", "/ui/messages?topic=orders", 200, []string{"in-orders"}, nil},
		{"alice", "alice-pass", "/ui/messages?topic=secret", 403, []string{"TOPIC_AUTHORIZATION_FAILED"}, []string{"in-secret"}},
		{"alice", "alice-pass", "/ui/topics/secret", 403, []string{"TOPIC_AUTHORIZATION_FAILED"}, []string{`data-partition="0"`}},
		{"alice", "alice-pass", "/ui/groups/billing", 403, []string{"GROUP_AUTHORIZATION_FAILED"}, []string{"secret/0"}},
	} {
		status, _, body := testsupport.Get(t, srv.URL+c.path, c.user, c.pass)
		if status != c.status {
			t.Errorf("%s GET %s: status %d, want %d\n%s", c.user, c.path, status, c.status, body)
		}
		for _, w := range c.want {
			if !strings.Contains(body, w) {
				t.Errorf("%s GET %s: no %q in the page", c.user, c.path, w)
			}
		}
		for _, n := range c.not {
			if strings.Contains(body, n) {
				t.Errorf("%s GET %s: %q shown", c.user, c.path, n)
			}
		}
	}

	// Samples are the viewer's own: admin's chart of billing fills, and
	// alice's lag endpoint has nothing for a group she cannot see.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, _, body := testsupport.Get(t, srv.URL+"/ui/api/groups/billing/lag", "admin", "admin-pass")
		if strings.Contains(body, `"secret/0":[`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("admin's lag chart of billing never filled: %s", body)
		}
		time.Sleep(20 * time.Millisecond) // the sampler's period
	}
	if _, _, body := testsupport.Get(t, srv.URL+"/ui/api/groups/billing/lag", "alice", "alice-pass"); strings.Contains(body, "secret") {
		t.Errorf("alice sees billing's lag sampled for admin: %s", body)
	}
}
