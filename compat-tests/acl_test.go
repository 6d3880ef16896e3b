package compat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/internal/testsupport"
)

// produceAs produces one record to topic as the client and returns the
// error.
func produceAs(t *testing.T, cl *kgo.Client, topic string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr()
}

// endOffset is the topic's partition 0 end offset, as admin sees it.
func endOffset(t *testing.T, adm *kadm.Client, topic string) int64 {
	t.Helper()
	ends, err := adm.ListEndOffsets(context.Background(), topic)
	must(t, err, "ListEndOffsets %s", topic)
	o, ok := ends.Lookup(topic, 0)
	if !ok || o.Err != nil {
		t.Fatalf("end offset of %s: %+v", topic, o)
	}
	return o.Offset
}

// The StandardAuthorizer's semantics, from clients: LITERAL and PREFIXED
// ACLs, DENY over ALLOW, super.users, allow.everyone.if.no.acl.found only
// where no ACL names the resource, Metadata filtering, groups, the ACL
// APIs, the authorizer log and the denial metric.
func TestACLsAsKafkasAuthorizer(t *testing.T) {
	metrics := testsupport.FreePorts(t, 1)[0]
	sc := startSecureCluster(t, secureOpts{properties: []string{
		"allow.everyone.if.no.acl.found=true",
		fmt.Sprintf("metrics.listen=127.0.0.1:%d", metrics),
	}})
	adm := sc.admin()
	a, b, open, locked := uniqueTopic("a"), uniqueTopic("b"), uniqueTopic("open"), uniqueTopic("locked")
	prefix := uniqueTopic("app") + "-"
	app1, app2 := prefix+"1", prefix+"2"
	for _, topic := range []string{a, b, open, locked, app1, app2} {
		newTopicNamed(t, adm, topic)
	}
	createACLs(t, adm, kadm.NewACLs().Allow("User:alice").Topics(a).Operations(kadm.OpWrite))
	createACLs(t, adm, kadm.NewACLs().Allow("User:bob").Topics(b).Operations(kadm.OpRead))
	// alice may see b (so her producer gets to the Produce), not write it.
	createACLs(t, adm, kadm.NewACLs().Allow("User:alice").Topics(b).Operations(kadm.OpDescribe))
	createACLs(t, adm, kadm.NewACLs().Allow("User:alice").Topics(prefix).ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpWrite))
	createACLs(t, adm, kadm.NewACLs().Deny("User:alice").Topics(app2).Operations(kadm.OpWrite))
	createACLs(t, adm, kadm.NewACLs().Deny("User:*").Topics(locked).Operations(kadm.OpAll))

	alice := sc.client(0, append(sc.plain("alice", alicePassword), kgo.RecordRetries(1), kgo.UnknownTopicRetries(1))...)
	cases := []struct {
		topic string
		want  error
		why   string
	}{
		{a, nil, "LITERAL ALLOW WRITE"},
		{b, kerr.TopicAuthorizationFailed, "ACLs name b (bob's READ, alice's DESCRIBE): allow.everyone.if.no.acl.found does not apply"},
		{open, nil, "no ACL names the topic: allow.everyone.if.no.acl.found"},
		{app1, nil, "PREFIXED ALLOW WRITE"},
		{app2, kerr.TopicAuthorizationFailed, "DENY WRITE overrides the PREFIXED ALLOW"},
		{locked, kerr.TopicAuthorizationFailed, "DENY ALL User:*"},
	}
	for _, tc := range cases {
		before := endOffset(t, adm, tc.topic)
		err := produceAs(t, alice, tc.topic)
		if !errors.Is(err, tc.want) && !(tc.want == nil && err == nil) {
			t.Errorf("alice produces to %s (%s): %v, want %v", tc.topic, tc.why, err, tc.want)
		}
		if after := endOffset(t, adm, tc.topic); tc.want != nil && after != before {
			t.Errorf("a refused produce to %s appended: end offset %d -> %d", tc.topic, before, after)
		}
	}
	admin := sc.client(0, sc.scram("admin", adminPassword, 512)...)
	for _, topic := range []string{b, locked} {
		must(t, produceAs(t, admin, topic), "super user admin produces to %s", topic)
	}

	// Metadata of all topics leaves out what alice may not DESCRIBE.
	topics, err := kadm.NewClient(alice).ListTopics(context.Background())
	must(t, err, "alice lists topics")
	if topics.Has(locked) {
		t.Errorf("alice sees %s in Metadata", locked)
	}
	for _, topic := range []string{a, b, open, app1} {
		if !topics.Has(topic) {
			t.Errorf("alice does not see %s in Metadata", topic)
		}
	}

	// Groups: READ on the group (bob's ACL makes the no-ACL rule not apply).
	group := uniqueTopic("g")
	createACLs(t, adm, kadm.NewACLs().Allow("User:bob").Groups(group).Operations(kadm.OpRead))
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: a, Partition: 0, At: 0})
	_, err = kadm.NewClient(alice).CommitOffsets(context.Background(), group, offs)
	if !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Errorf("alice commits to %s: %v, want GROUP_AUTHORIZATION_FAILED", group, err)
	}

	// The ACL APIs: describe with a filter, then delete, and alice's
	// produce to a fails.
	described, err := adm.DescribeACLs(context.Background(), kadm.NewACLs().Allow("User:alice").AllowHosts().Topics().
		ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny))
	must(t, err, "DescribeACLs")
	var found int
	for _, d := range described {
		found += len(d.Described)
	}
	if found != 3 {
		t.Errorf("DescribeACLs of alice's topic ALLOWs: %d, want 3 (%v)", found, described)
	}
	_, err = adm.DeleteACLs(context.Background(), kadm.NewACLs().Allow("User:alice").AllowHosts().Topics(a).Operations(kadm.OpWrite))
	must(t, err, "DeleteACLs")
	// a has no ACL left: allow.everyone.if.no.acl.found applies again.
	must(t, produceAs(t, alice, a), "alice produces to %s once its last ACL is gone", a)
	// The cluster had no ACL (so alice could describe the ACLs); with one
	// for bob, she may not.
	createACLs(t, adm, kadm.NewACLs().Allow("User:bob").Clusters().Operations(kadm.OpDescribe))
	res, err := kadm.NewClient(alice).DescribeACLs(context.Background(), kadm.NewACLs().Allow().AllowHosts().Topics().
		ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny))
	if err == nil && len(res) > 0 {
		err = res[0].Err
	}
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("alice describes ACLs: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}

	line := fmt.Sprintf("Principal = User:alice is Denied operation = WRITE from host = 127.0.0.1 on resource = Topic:LITERAL:%s for request = Produce", b)
	waitFor(t, 10*time.Second, "the authorizer log line", func() error {
		if !strings.Contains(sc.nodes[0].logs(), line) {
			return fmt.Errorf("no %q", line)
		}
		return nil
	})
	checkDenialMetric(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", metrics))
}

func checkDenialMetric(t *testing.T, url string) {
	t.Helper()
	resp, err := http.Get(url)
	must(t, err, "GET /metrics")
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	want := `kbroker_authorization_denied_total{api="Produce",resource_type="TOPIC"}`
	if !slices.ContainsFunc(strings.Split(string(body), "\n"), func(l string) bool {
		return strings.HasPrefix(l, want) && !strings.HasSuffix(l, " 0")
	}) {
		t.Errorf("metrics lack %s > 0", want)
	}
}

// newTopicNamed creates topic with one partition as the admin.
func newTopicNamed(t *testing.T, adm *kadm.Client, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	res, err := adm.CreateTopic(ctx, 1, 1, nil, topic)
	must(t, errors.Join(err, res.Err), "create %s", topic)
}
