package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kbroker/kbroker/config"
)

// result is one in-process run of the command.
type result struct {
	code           int
	stdout, stderr string
	cfg            *config.Config // what the broker was started with; nil if it was not
}

// runCmd runs kbroker with args and env, with run as the broker (nil: one
// that returns at once).
func runCmd(t *testing.T, env []string, run runFunc, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	var res result
	if env == nil {
		env = []string{}
	}
	a := &app{stdout: &out, stderr: &errOut, environ: env, run: func(ctx context.Context, cfg *config.Config, log *slog.Logger) error {
		res.cfg = cfg
		if run != nil {
			return run(ctx, cfg, log)
		}
		return nil
	}}
	res.code = a.execute(context.Background(), args)
	res.stdout, res.stderr = out.String(), errOut.String()
	return res
}

func TestNoArgumentsServesDefaults(t *testing.T) {
	res := runCmd(t, nil, nil)
	if res.code != exitOK || res.cfg == nil {
		t.Fatalf("exit %d, broker started: %v\n%s", res.code, res.cfg != nil, res.stderr)
	}
	if got := res.cfg.ClientListener().Address(); got != "127.0.0.1:9092" {
		t.Errorf("client listener %s, want 127.0.0.1:9092", got)
	}
	if got := res.cfg.LogDirs; len(got) != 1 || got[0] != "./data" {
		t.Errorf("log.dirs %v, want ./data", got)
	}
	if !strings.Contains(res.stderr, "level=INFO msg=\"starting kbroker\"") {
		t.Errorf("no text start log:\n%s", res.stderr)
	}
}

func TestFlagsWithoutSubcommandMeanServe(t *testing.T) {
	for _, args := range [][]string{
		{"--node.id=3", "--log.dirs=/x"},
		{"serve", "--node.id=3", "--log.dirs=/x"},
	} {
		res := runCmd(t, nil, nil, args...)
		if res.code != exitOK || res.cfg == nil || res.cfg.NodeID != 3 || res.cfg.LogDirs[0] != "/x" {
			t.Errorf("%v: exit %d cfg %+v\n%s", args, res.code, res.cfg, res.stderr)
		}
	}
}

func TestServeConfigSources(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(path, []byte("num.partitions=3\nmin.insync.replicas=2\nnum.io.threads=8\nmy.own.key=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	res := runCmd(t, []string{"KBROKER_MIN_INSYNC_REPLICAS=3", "KBROKER_NUM_REPLICA_FETCHERS=2"}, nil,
		"serve", "--config", path, "--num.replica.fetchers=4")
	if res.code != exitOK {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	if c := res.cfg; c.NumPartitions != 3 || c.MinInsyncReplicas != 3 || c.NumReplicaFetchers != 4 {
		t.Errorf("partitions %d (file) minISR %d (env) fetchers %d (flag)", c.NumPartitions, c.MinInsyncReplicas, c.NumReplicaFetchers)
	}
	for _, want := range []string{
		`level=WARN msg="config key ignored: kbroker does not use it" key=num.io.threads`,
		`level=WARN msg="unknown config key" key=my.own.key`,
	} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, res.stderr)
		}
	}
}

func TestConfigErrorExitsTwo(t *testing.T) {
	res := runCmd(t, []string{"KBROKER_NUM_PARTITIONS=0"}, nil, "serve", "--min.insync.replicas=0")
	if res.code != exitUsage || res.cfg != nil {
		t.Fatalf("exit %d, broker started: %v", res.code, res.cfg != nil)
	}
	for _, want := range []string{
		"config: min.insync.replicas=0 is out of range: must be >= 1\n",
		"config: num.partitions=0 is out of range: must be >= 1\n",
	} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("stderr %q lacks %q", res.stderr, want)
		}
	}
}

func TestUsageErrorsExitTwo(t *testing.T) {
	for _, args := range [][]string{
		{"--min.insync.replica=2"}, // a typo'd flag fails
		{"serve", "extra-argument"},
		{"frobnicate"},
		{"--config=/nonexistent/server.properties"},
	} {
		res := runCmd(t, nil, nil, args...)
		if res.code != exitUsage || res.cfg != nil || res.stderr == "" {
			t.Errorf("%v: exit %d, broker started %v, stderr %q", args, res.code, res.cfg != nil, res.stderr)
		}
	}
}

func TestBrokerFailureExitsOne(t *testing.T) {
	res := runCmd(t, nil, func(context.Context, *config.Config, *slog.Logger) error { return errors.New("disk on fire") })
	if res.code != exitFailure {
		t.Fatalf("exit %d, want %d", res.code, exitFailure)
	}
	if !strings.Contains(res.stderr, `level=ERROR msg="broker failed" err="disk on fire"`) {
		t.Errorf("failure not logged:\n%s", res.stderr)
	}
}

func TestJSONLogsAndLevel(t *testing.T) {
	log := func(_ context.Context, _ *config.Config, log *slog.Logger) error {
		log.Debug("debug line")
		log.Warn("warn line")
		return nil
	}
	res := runCmd(t, nil, log, "--log-format=json", "--log.level=debug")
	if res.code != exitOK {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	var msgs []string
	for _, line := range strings.Split(strings.TrimSpace(res.stderr), "\n") {
		var rec struct{ Msg string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		msgs = append(msgs, rec.Msg)
	}
	if got := strings.Join(msgs, "|"); got != "starting kbroker|debug line|warn line|broker stopped" {
		t.Errorf("messages %q", got)
	}

	res = runCmd(t, []string{"KBROKER_LOG_LEVEL=warn"}, log)
	if strings.Contains(res.stderr, "starting kbroker") || strings.Contains(res.stderr, "debug line") ||
		!strings.Contains(res.stderr, "warn line") {
		t.Errorf("level warn:\n%s", res.stderr)
	}
}

func TestNewLogger(t *testing.T) {
	if _, err := newLogger(io.Discard, "xml", "info"); err == nil {
		t.Error("format xml accepted")
	}
	if _, err := newLogger(io.Discard, "text", "loud"); err == nil {
		t.Error("level loud accepted")
	}
}

func TestVersionAndHelp(t *testing.T) {
	res := runCmd(t, nil, nil, "version")
	if res.code != exitOK || !strings.HasPrefix(res.stdout, "kbroker dev (") || res.cfg != nil {
		t.Errorf("version: exit %d stdout %q", res.code, res.stdout)
	}
	res = runCmd(t, nil, nil, "--help")
	if res.code != exitOK || !strings.Contains(res.stdout, "serve") || !strings.Contains(res.stdout, "version") || res.cfg != nil {
		t.Errorf("help: exit %d stdout %q", res.code, res.stdout)
	}
	res = runCmd(t, nil, nil, "serve", "--help")
	if res.code != exitOK || !strings.Contains(res.stdout, "--min.insync.replicas int") || !strings.Contains(res.stdout, "--log.retention.hours hours") {
		t.Errorf("serve help: exit %d stdout %q", res.code, res.stdout)
	}
}

// SIGINT cancels the broker's context; the broker then returns and kbroker
// exits 0.
func TestSignalCancelsBroker(t *testing.T) {
	res := runCmd(t, nil, func(ctx context.Context, _ *config.Config, _ *slog.Logger) error {
		if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(10 * time.Second):
			return errors.New("context not cancelled by SIGINT")
		}
	})
	if res.code != exitOK || !strings.Contains(res.stderr, "signal again to exit at once") {
		t.Errorf("exit %d\n%s", res.code, res.stderr)
	}
}

// The helper process for TestSecondSignalExitsAtOnce: a broker that never
// stops on its own.
func TestHelperProcess(t *testing.T) {
	if os.Getenv("KBROKER_TEST_HELPER") != "1" {
		t.Skip("helper process for TestSecondSignalExitsAtOnce")
	}
	a := &app{stdout: os.Stdout, stderr: os.Stderr, environ: []string{}, run: func(context.Context, *config.Config, *slog.Logger) error {
		fmt.Println("ready")
		select {} // ignores its context: only a second signal ends the process
	}}
	os.Exit(a.execute(context.Background(), []string{"serve"}))
}

func TestSecondSignalExitsAtOnce(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), "KBROKER_TEST_HELPER=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	lines := make(chan string, 100)
	var readers sync.WaitGroup
	for _, r := range []io.Reader{stdout, stderr} {
		readers.Go(func() {
			for s := bufio.NewScanner(r); s.Scan(); {
				lines <- s.Text()
			}
		})
	}
	waitFor := func(substr string) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case line := <-lines:
				if strings.Contains(line, substr) {
					return
				}
			case <-deadline:
				t.Fatalf("no line containing %q", substr)
			}
		}
	}
	waitFor("ready")
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waitFor("signal again to exit at once")
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() {
		readers.Wait()
		exited <- cmd.Wait()
	}()
	select {
	case err = <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("helper still running 10s after the second SIGINT")
	}
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) {
		t.Fatalf("helper exited with %v, want death by the second SIGINT", err)
	}
	if ws, ok := exitErr.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGINT {
		t.Errorf("helper ended with %v, want killed by SIGINT", exitErr)
	}
}

func TestWithDefaultCommand(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{nil, []string{"serve"}},
		{[]string{"--node.id=2"}, []string{"serve", "--node.id=2"}},
		{[]string{"--help"}, []string{"--help"}},
		{[]string{"-h"}, []string{"-h"}},
		{[]string{"version"}, []string{"version"}},
		{[]string{"serve", "--x"}, []string{"serve", "--x"}},
	} {
		if got := withDefaultCommand(tc.in); strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("withDefaultCommand(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// Only the invocations that run a broker re-execute to keep sysmon awake
// (internal/sysmon); the operator's commands start as they are.
func TestServesBroker(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{nil, true}, {[]string{"serve", "--node.id=1"}, true}, {[]string{"--node.id=2"}, true},
		{[]string{"version"}, false}, {[]string{"topic", "list"}, false}, {[]string{"format", "--add-scram"}, false},
	} {
		if got := servesBroker(c.args); got != c.want {
			t.Errorf("servesBroker(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}
