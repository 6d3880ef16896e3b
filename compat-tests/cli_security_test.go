package compat

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// cliACL is a binding as `kbroker acl ... --format json` prints it.
type cliACL struct {
	Principal    string `json:"principal"`
	Host         string `json:"host"`
	ResourceType string `json:"resource_type"`
	ResourceName string `json:"resource_name"`
	PatternType  string `json:"pattern_type"`
	Operation    string `json:"operation"`
	Permission   string `json:"permission"`
	Error        string `json:"error"`
}

// kbroker user and kbroker acl against three secured brokers, through a
// profile file (KBROKER_PROFILE: SASL_SSL, SCRAM-SHA-512 as the super user
// admin, the development CA): their JSON output, and their effects seen by
// franz-go clients on every broker (a user that authenticates, the topics
// it may and may not write) and by kbroker's own errors.
func TestCLIUserAndACLOnThreeSecureBrokers(t *testing.T) {
	t.Parallel()
	sc := startSecureCluster(t, secureOpts{brokers: 3})
	var seeds []string
	for _, n := range sc.nodes {
		seeds = append(seeds, n.clientAddr)
	}
	profile := filepath.Join(t.TempDir(), "admin.properties")
	writeProfile(t, profile, "bootstrap.servers="+strings.Join(seeds, ","), "security.protocol=SASL_SSL",
		"sasl.mechanism=SCRAM-SHA-512", "sasl.username=admin", "sasl.password="+adminPassword,
		"ssl.ca.location="+filepath.Join(sc.certs, "ca.pem"))
	env := []string{"KBROKER_PROFILE=" + profile}
	run := func(v any, stdin string, args ...string) {
		t.Helper()
		res := kbcliEnv(t, env, stdin, append(args, "--format", "json")...)
		if res.code != 0 {
			t.Fatalf("kbroker %v: exit %d\nstderr: %s", args, res.code, res.stderr)
		}
		if strings.Contains(res.stdout+res.stderr, "alice-new-secret") {
			t.Fatalf("kbroker %v printed a password", args)
		}
		if v != nil {
			if err := json.Unmarshal([]byte(res.stdout), v); err != nil {
				t.Fatalf("kbroker %v: output is not JSON (%v):\n%s", args, err, res.stdout)
			}
		}
	}
	fails := func(want string, args ...string) {
		t.Helper()
		res := kbcliEnv(t, env, "", args...)
		if res.code != 1 || !strings.Contains(res.stderr, want) || strings.Count(res.stderr, "\n") != 1 {
			t.Fatalf("kbroker %v: exit %d, stderr %q; want exit 1 and one line with %q", args, res.code, res.stderr, want)
		}
	}
	const alicePass = "alice-new-secret"
	aliceOn := func(i int) []kgo.Opt {
		return append(sc.scram("alice", alicePass, 256), kgo.RecordRetries(1), kgo.UnknownTopicRetries(1))
	}

	var user struct{ User, Mechanism, Error string }
	run(&user, alicePass+"\n", "user", "create", "alice", "--password-stdin", "--mechanism", "SCRAM-SHA-256")
	if user.User != "alice" || user.Mechanism != "SCRAM-SHA-256" || user.Error != "" {
		t.Fatalf("user create: %+v", user)
	}
	for _, n := range sc.nodes {
		waitFor(t, 20*time.Second, fmt.Sprintf("alice authenticates on broker %d", n.id), func() error {
			return ping(t, n.clientAddr, aliceOn(0)...)
		})
	}
	var users []struct {
		User       string `json:"user"`
		Mechanisms []struct {
			Mechanism  string `json:"mechanism"`
			Iterations int32  `json:"iterations"`
		} `json:"mechanisms"`
	}
	run(&users, "", "user", "list")
	got := map[string]string{}
	for _, u := range users {
		for _, m := range u.Mechanisms {
			got[u.User] += fmt.Sprintf("%s/%d ", m.Mechanism, m.Iterations)
		}
	}
	if got["alice"] != "SCRAM-SHA-256/4096 " || !strings.Contains(got["admin"], "SCRAM-SHA-512") {
		t.Fatalf("user list: %v", got)
	}

	allowed, denied, prefix := uniqueTopic("cli-acl-a"), uniqueTopic("cli-acl-b"), uniqueTopic("cli-acl-p")+"-"
	run(nil, "", "topic", "create", allowed, denied, prefix+"1", "-p", "1", "-r", "3")
	var acls []cliACL
	run(&acls, "", "acl", "create", "--allow-principal", "alice", "--operation", "write,describe", "--topic", allowed)
	if len(acls) != 2 || acls[0].Principal != "User:alice" || acls[0].Host != "*" || acls[0].Error != "" {
		t.Fatalf("acl create: %+v", acls)
	}
	run(&acls, "", "acl", "create", "--allow-principal", "User:alice", "--operation", "write,describe", "--topic", prefix,
		"--resource-pattern-type", "prefixed")
	// Any broker may answer DescribeAcls: wait for the ACLs to reach it
	// (Kafka's brokers, too, apply the metadata log after the controller).
	waitFor(t, 10*time.Second, "alice's 4 ACLs listed", func() error {
		run(&acls, "", "acl", "list", "--principal", "alice")
		if len(acls) != 4 || acls[0].ResourceType != "TOPIC" || acls[0].Permission != "ALLOW" {
			return fmt.Errorf("acl list --principal alice: %+v", acls)
		}
		return nil
	})
	waitFor(t, 10*time.Second, "the prefixed ACLs matching "+prefix+"1", func() error {
		run(&acls, "", "acl", "list", "--topic", prefix+"1", "--resource-pattern-type", "match")
		if len(acls) != 2 || acls[0].PatternType != "PREFIXED" || acls[0].ResourceName != prefix {
			return fmt.Errorf("acl list --resource-pattern-type match of %s1: %+v", prefix, acls)
		}
		return nil
	})

	// The ACLs at work, on every broker: alice writes the allowed topics,
	// not the other one.
	for i, n := range sc.nodes {
		cl := sc.client(i, aliceOn(i)...)
		waitFor(t, 20*time.Second, fmt.Sprintf("alice writes %s through broker %d", allowed, n.id), func() error {
			return errors.Join(produceAs(t, cl, allowed), produceAs(t, cl, prefix+"1"))
		})
		if err := produceAs(t, cl, denied); !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Fatalf("alice produces to %s through broker %d: %v, want TOPIC_AUTHORIZATION_FAILED", denied, n.id, err)
		}
	}
	// alice through the CLI: -X after the profile overrides its user.
	asAlice := []string{"-X", "sasl.mechanism=SCRAM-SHA-256", "-X", "sasl.username=alice", "-X", "sasl.password=" + alicePass}
	fails("CLUSTER_AUTHORIZATION_FAILED", append([]string{"acl", "create", "--allow-principal", "alice", "--operation", "read",
		"--topic", denied}, asAlice...)...)
	fails("TOPIC_AUTHORIZATION_FAILED", append([]string{"produce", denied}, asAlice...)...)

	var deleted struct {
		DryRun bool     `json:"dry_run"`
		ACLs   []cliACL `json:"acls"`
	}
	run(&deleted, "", "acl", "delete", "--principal", "alice", "--topic", allowed, "--dry-run")
	if !deleted.DryRun || len(deleted.ACLs) != 2 {
		t.Fatalf("acl delete --dry-run: %+v", deleted)
	}
	// The real delete finds both: the dry run deleted nothing.
	run(&deleted, "", "acl", "delete", "--principal", "alice", "--topic", allowed)
	if deleted.DryRun || len(deleted.ACLs) != 2 || deleted.ACLs[0].ResourceName != allowed {
		t.Fatalf("acl delete: %+v", deleted)
	}
	for i, n := range sc.nodes {
		cl := sc.client(i, aliceOn(i)...)
		waitFor(t, 20*time.Second, fmt.Sprintf("alice refused %s on broker %d", allowed, n.id), func() error {
			if err := produceAs(t, cl, allowed); !errors.Is(err, kerr.TopicAuthorizationFailed) {
				return fmt.Errorf("produce: %v", err)
			}
			return nil
		})
	}

	run(nil, "", "user", "delete", "alice")
	for _, n := range sc.nodes {
		waitFor(t, 20*time.Second, fmt.Sprintf("alice refused on broker %d", n.id), func() error {
			if err := ping(t, n.clientAddr, aliceOn(0)...); !errors.Is(err, kerr.SaslAuthenticationFailed) {
				return fmt.Errorf("ping: %v", err)
			}
			return nil
		})
	}
	fails("SASL_AUTHENTICATION_FAILED", append([]string{"topic", "list"}, asAlice...)...)
	fails(`user "alice" does not exist`, "user", "list", "alice")
	fails(`user "alice" does not exist`, "user", "delete", "alice")
}

func writeProfile(t *testing.T, path string, lines ...string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}
