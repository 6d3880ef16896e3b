package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kbroker/kbroker/admin"
)

// result is one in-process run of an admin command.
type result struct {
	code           int
	stdout, stderr string
}

// kb runs kbroker's admin commands in process, as the binary's root does.
func kb(t *testing.T, env []string, stdin string, args ...string) result {
	t.Helper()
	root := &cobra.Command{Use: "kbroker", SilenceErrors: true, SilenceUsage: true}
	root.AddCommand(Commands(append([]string{"HOME=" + t.TempDir()}, env...))...)
	var out, errOut bytes.Buffer
	root.SetArgs(args)
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&out)
	root.SetErr(&errOut)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := root.ExecuteContext(ctx)
	res := result{stdout: out.String(), stderr: errOut.String()}
	var exit *ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		res.code = exit.Code
	default:
		t.Fatalf("kbroker %v: error outside ExitError: %v", args, err)
	}
	return res
}

// ok runs a command that must succeed and decodes its JSON output into v.
func ok(t *testing.T, v any, env []string, stdin string, args ...string) result {
	t.Helper()
	res := kb(t, env, stdin, append(args, "--format", "json")...)
	if res.code != 0 {
		t.Fatalf("kbroker %v: exit %d\nstderr: %s", args, res.code, res.stderr)
	}
	if v != nil {
		if err := json.Unmarshal([]byte(res.stdout), v); err != nil {
			t.Fatalf("kbroker %v: output is not JSON (%v):\n%s", args, err, res.stdout)
		}
	}
	return res
}

// The CLI against franz-go's kfake, another Kafka implementation: so it is
// not tied to kbroker's answers. Over SASL/SCRAM, which kfake serves.
func TestCLIAgainstKfake(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-256", "admin", "s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	env := []string{"KBROKER_BROKERS=" + strings.Join(c.ListenAddrs(), ",")}
	sasl := []string{"-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanism=SCRAM-SHA-256",
		"-X", "sasl.username=admin", "-X", "sasl.password=s3cret"}
	run := func(v any, stdin string, args ...string) result {
		t.Helper()
		return ok(t, v, env, stdin, append(args, sasl...)...)
	}

	var info struct {
		Brokers []struct{ ID int32 } `json:"brokers"`
	}
	run(&info, "", "cluster", "info")
	if len(info.Brokers) != 3 {
		t.Fatalf("cluster info lists %d brokers, want 3", len(info.Brokers))
	}
	run(nil, "", "topic", "create", "events", "-p", "4", "-r", "3", "-c", "retention.ms=3600000")
	var topic struct {
		Partitions []struct {
			ISR           []int32 `json:"isr"`
			HighWatermark int64   `json:"high_watermark"`
		} `json:"partitions"`
		Configs []struct{ Name, Value, Source string } `json:"configs"`
	}
	run(nil, "a:one\nb:two\nc:three\n", "produce", "events", "-K", ":")
	run(&topic, "", "topic", "describe", "events")
	var total int64
	for _, p := range topic.Partitions {
		total += p.HighWatermark
		if len(p.ISR) != 3 {
			t.Errorf("partition ISR %v, want 3 replicas", p.ISR)
		}
	}
	if len(topic.Partitions) != 4 || total != 3 {
		t.Fatalf("describe: %d partitions holding %d records, want 4 and 3", len(topic.Partitions), total)
	}
	res := run(nil, "", "consume", "events", "--to", "end")
	var values []string
	for _, line := range strings.Split(strings.TrimSpace(res.stdout), "\n") {
		var r struct{ Key, Value string }
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("consume line %q: %v", line, err)
		}
		values = append(values, r.Key+"="+r.Value)
	}
	if got := strings.Join(slices.Sorted(slices.Values(values)), " "); got != "a=one b=two c=three" {
		t.Fatalf("consumed %q", got)
	}
	commitGroup(t, c.ListenAddrs(), "auditors", "events")
	var group struct {
		State    string `json:"state"`
		TotalLag int64  `json:"total_lag"`
	}
	run(&group, "", "group", "describe", "auditors")
	if group.TotalLag != 0 {
		t.Fatalf("group after consuming everything: lag %d, want 0", group.TotalLag)
	}
	run(nil, "", "group", "seek", "auditors", "--to", "earliest")
	run(&group, "", "group", "describe", "auditors")
	if group.TotalLag != 3 {
		t.Fatalf("group after seek to earliest: lag %d, want 3", group.TotalLag)
	}
	// Shell completion asks the cluster for topic and group names.
	for _, c := range [][]string{{"topic", "describe"}, {"group", "describe"}} {
		args := append(append(append([]string{"__complete"}, c...), sasl...), "") // the word being completed is last
		res := kb(t, env, "", args...)
		if want := map[string]string{"topic": "events\n", "group": "auditors\n"}[c[0]]; res.code != 0 || !strings.HasPrefix(res.stdout, want) {
			t.Errorf("completion of %s %s: exit %d, %q", c[0], c[1], res.code, res.stdout)
		}
	}
	var health struct{ Healthy bool }
	run(&health, "", "cluster", "health")
	if !health.Healthy {
		t.Fatal("kfake cluster reported unhealthy")
	}
	run(nil, "", "topic", "delete", "events")
	if res := kb(t, env, "", append([]string{"topic", "describe", "events"}, sasl...)...); res.code != ExitFailure ||
		!strings.Contains(res.stderr, `topic "events" does not exist`) {
		t.Fatalf("describe of a deleted topic: exit %d, stderr %q", res.code, res.stderr)
	}
}

// commitGroup consumes topic to its end as group and commits.
func commitGroup(t *testing.T, seeds []string, group, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
		kgo.SASL(scram.Auth{User: "admin", Pass: "s3cret"}.AsSha256Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for n := 0; n < 3; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("group consumer read %d of 3 records", n)
		}
		n += len(fs.Records())
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	cl.LeaveGroup()
}

// kbroker acl and kbroker user against kfake with its authorizer on: a
// user created with the CLI authenticates, the ACLs the CLI creates let it
// write one topic and not another, list and a dry-run delete change
// nothing, delete takes its rights away and user delete its password.
func TestCLISecurityAgainstKfake(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.Superuser("SCRAM-SHA-256", "admin", "s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	env := []string{"KBROKER_BROKERS=" + strings.Join(c.ListenAddrs(), ",")}
	as := func(user, pass string) []string {
		return []string{"-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanism=SCRAM-SHA-256",
			"-X", "sasl.username=" + user, "-X", "sasl.password=" + pass}
	}
	asAdmin := func(v any, stdin string, args ...string) result {
		t.Helper()
		return ok(t, v, env, stdin, append(args, as("admin", "s3cret")...)...)
	}
	asAdmin(nil, "", "topic", "create", "orders", "-p", "1", "-r", "1")
	asAdmin(nil, "", "topic", "create", "refunds", "-p", "1", "-r", "1")

	var created admin.UserResult
	asAdmin(&created, "alice-pass\n", "user", "create", "alice", "--password-stdin")
	if created.User != "alice" || created.Mechanism != "SCRAM-SHA-256" || created.Error != "" {
		t.Fatalf("user create: %+v", created)
	}
	var users []admin.User
	asAdmin(&users, "", "user", "list", "alice")
	if len(users) != 1 || len(users[0].Mechanisms) != 1 || users[0].Mechanisms[0].Iterations != 4096 {
		t.Fatalf("user list alice: %+v", users)
	}

	var acls []admin.ACL
	asAdmin(&acls, "", "acl", "create", "--allow-principal", "alice", "--operation", "write,describe", "--topic", "orders")
	if len(acls) != 2 || acls[0].Principal != "User:alice" || acls[0].Host != "*" || acls[0].PatternType != "LITERAL" {
		t.Fatalf("acl create: %+v", acls)
	}
	asAdmin(&acls, "", "acl", "list", "--principal", "alice")
	if len(acls) != 2 || acls[0].ResourceName != "orders" || acls[0].ResourceType != "TOPIC" || acls[0].Permission != "ALLOW" {
		t.Fatalf("acl list --principal alice: %+v", acls)
	}

	alice := append(as("alice", "alice-pass"), "--format", "json")
	if res := kb(t, env, "x\n", append([]string{"produce", "orders"}, alice...)...); res.code != 0 {
		t.Fatalf("alice produces to orders: exit %d, %s", res.code, res.stderr)
	}
	if res := kb(t, env, "x\n", append([]string{"produce", "refunds"}, alice...)...); res.code != ExitFailure ||
		!strings.Contains(res.stderr, "TOPIC_AUTHORIZATION_FAILED") {
		t.Fatalf("alice produces to refunds without an ACL: exit %d, %q", res.code, res.stderr)
	}

	var deleted struct {
		DryRun bool        `json:"dry_run"`
		ACLs   []admin.ACL `json:"acls"`
	}
	asAdmin(&deleted, "", "acl", "delete", "--principal", "alice", "--dry-run")
	if !deleted.DryRun || len(deleted.ACLs) != 2 {
		t.Fatalf("acl delete --dry-run: %+v", deleted)
	}
	asAdmin(&acls, "", "acl", "list", "--topic", "orders")
	if len(acls) != 2 {
		t.Fatalf("the dry run deleted ACLs: %+v left", acls)
	}
	asAdmin(&deleted, "", "acl", "delete", "--principal", "alice", "--topic", "orders")
	if deleted.DryRun || len(deleted.ACLs) != 2 {
		t.Fatalf("acl delete: %+v", deleted)
	}
	if res := kb(t, env, "x\n", append([]string{"produce", "orders"}, alice...)...); res.code != ExitFailure ||
		!strings.Contains(res.stderr, "TOPIC_AUTHORIZATION_FAILED") {
		t.Fatalf("alice produces to orders once her ACLs are gone: exit %d, %q", res.code, res.stderr)
	}

	asAdmin(nil, "", "user", "delete", "alice")
	// kfake closes the connection of a failed authentication (Kafka
	// answers SASL_AUTHENTICATION_FAILED first: the compat test checks it).
	if res := kb(t, env, "", append([]string{"topic", "list"}, alice...)...); res.code != ExitFailure ||
		strings.Count(res.stderr, "\n") != 1 {
		t.Fatalf("alice after user delete: exit %d, %q", res.code, res.stderr)
	}
	if res := kb(t, env, "", append([]string{"user", "list", "alice"}, as("admin", "s3cret")...)...); res.code != ExitFailure ||
		!strings.Contains(res.stderr, `user "alice" does not exist`) {
		t.Fatalf("user list of a deleted user: exit %d, %q", res.code, res.stderr)
	}
}
