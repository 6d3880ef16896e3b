package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kbroker/kbroker/internal/testsupport"
)

// Every command has an example and every flag's help shows one.
func TestHelpHasExamples(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Runnable() && c.Example == "" && c.Parent() != nil && c.Parent().Example == "" {
			t.Errorf("%s has no example", c.CommandPath())
		}
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Name != "help" && !strings.Contains(f.Usage, "(e.g. ") {
				t.Errorf("%s --%s: usage %q has no example", c.CommandPath(), f.Name, f.Usage)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	root := &cobra.Command{Use: "kbroker"}
	root.AddCommand(Commands(nil)...)
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			c.Flags().AddFlagSet(c.PersistentFlags())
		}
		walk(c)
	}
}

// Bad input is one line on stderr and exit status 2, before any request.
func TestBadInputIsOneLineExit2(t *testing.T) {
	env := []string{"KBROKER_BROKERS=127.0.0.1:1"}
	cases := [][]string{
		{"consume", "t", "-o", "yesterday"},
		{"consume", "t", "--to", "@soon"},
		{"group", "seek", "g", "--to", "12x"},
		{"group", "seek", "g"},
		{"reassign", "t:0=1,x"},
		{"reassign"},
		{"topic", "create"},
		{"topic", "describe", "a", "b"},
		{"topic", "list", "--format", "yaml"},
		{"topic", "list", "-X", "sasl.mechanism"},
		{"topic", "list", "-X", "no.such.key=1"},
		{"topic", "list", "--bogus"},
		{"topic", "alter-config", "t"},
		{"topic", "alter-config", "t", "--set", "novalue"},
		{"produce", "t", "--acks", "2"},
		{"consume", "t", "-g", "g", "--to", "end"},
		{"completion", "tcsh"},
		{"acl", "create", "--topic", "t", "--operation", "read"},
		{"acl", "create", "--allow-principal", "alice", "--operation", "read"},
		{"acl", "create", "--allow-principal", "alice", "--operation", "fly", "--topic", "t"},
		{"acl", "create", "--allow-principal", "alice", "--operation", "any", "--topic", "t"},
		{"acl", "create", "--allow-principal", "alice", "--operation", "read", "--topic", "t", "--resource-pattern-type", "match"},
		{"acl", "list", "--permission", "maybe"},
		{"acl", "delete"},
		{"acl", "delete", "--operation", "read"},
		{"user", "create", "alice"},
		{"user", "create", "alice", "--password", "x", "--password-stdin"},
		{"user", "create", "alice", "--password", "x", "--mechanism", "MD5"},
		{"user", "create", "alice", "--password", "x", "--iterations", "10"},
		{"user", "delete"},
		{"user", "delete", "alice", "--mechanism", "PLAIN"},
	}
	for _, args := range cases {
		res := kb(t, env, "", args...)
		lines := strings.Split(strings.TrimRight(res.stderr, "\n"), "\n")
		if res.code != ExitUsage || len(lines) != 1 || !strings.HasPrefix(lines[0], "kbroker: ") || res.stdout != "" {
			t.Errorf("kbroker %v: exit %d, stdout %q, stderr %q; want exit 2 and one line", args, res.code, res.stdout, res.stderr)
		}
	}
}

// An unreachable cluster fails fast (every seed refused twice), in one
// line naming the brokers, with exit status 1.
func TestUnreachableClusterFailsFast(t *testing.T) {
	addr := testsupport.FreeAddrs(t, 1)[0] // nothing listens there
	start := time.Now()
	res := kb(t, []string{"KBROKER_BROKERS=" + addr}, "", "topic", "list")
	if res.code != ExitFailure || !strings.Contains(res.stderr, "cannot reach any broker of "+addr) ||
		strings.Count(res.stderr, "\n") != 1 {
		t.Fatalf("exit %d, stderr %q", res.code, res.stderr)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("took %v to give up on an unreachable broker", d)
	}
}

// Connection settings: profile < KBROKER_BROKERS < -X < --brokers.
func TestConnectionPrecedence(t *testing.T) {
	dir := t.TempDir()
	profile := filepath.Join(dir, "p.properties")
	os.WriteFile(profile, []byte("bootstrap.servers=profile:9092\nclient.id=from-profile\nrequest.timeout.ms=1234\n"), 0o600)
	cfg := func(g *globals) []string {
		c, err := g.config()
		if err != nil {
			t.Fatal(err)
		}
		return append(slices.Clone(c.Brokers), c.ClientID, c.RequestTimeout.String())
	}
	g := &globals{environ: []string{"KBROKER_PROFILE=" + profile}}
	if got := cfg(g); !slices.Equal(got, []string{"profile:9092", "from-profile", "1.234s"}) {
		t.Errorf("profile: %v", got)
	}
	g.environ = append(g.environ, "KBROKER_BROKERS=env:9092")
	if got := cfg(g); got[0] != "env:9092" {
		t.Errorf("env: %v", got)
	}
	g.x = []string{"bootstrap.servers=x:9092"}
	if got := cfg(g); got[0] != "x:9092" {
		t.Errorf("-X: %v", got)
	}
	g.brokers = "flag:9092"
	if got := cfg(g); got[0] != "flag:9092" || got[1] != "from-profile" {
		t.Errorf("--brokers: %v", got)
	}
	missing := &globals{profile: filepath.Join(dir, "none")}
	if _, err := missing.config(); err == nil {
		t.Error("a missing --profile was ignored")
	}
	home := &globals{environ: []string{"HOME=" + dir}} // no default profile there: defaults
	if got := cfg(home); got[0] != "127.0.0.1:9092" {
		t.Errorf("defaults: %v", got)
	}
}

func TestCompletionScripts(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish", "powershell"} {
		res := kb(t, nil, "", "completion", sh)
		if res.code != 0 || !strings.Contains(res.stdout, "kbroker") {
			t.Errorf("completion %s: exit %d, %d bytes", sh, res.code, len(res.stdout))
		}
	}
}
