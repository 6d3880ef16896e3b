package compat

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// kcat (librdkafka) lists metadata, produces and consumes against kbroker.
func TestKcatListProduceConsume(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat is not installed (.ci/run installs it)")
	}
	tg := singleNode(t)
	adm := newAdmin(t, tg.seeds)
	topic := newTopic(t, adm, 2, 1, nil)
	broker := tg.seeds[0]

	out := runKcat(t, kcat, nil, "-b", broker, "-L", "-t", topic)
	if !strings.Contains(out, fmt.Sprintf("topic \"%s\" with 2 partitions", topic)) {
		t.Fatalf("kcat -L does not show the topic:\n%s", out)
	}

	var input bytes.Buffer
	const n = 200
	for i := range n {
		fmt.Fprintf(&input, "key-%d:value-%d\n", i, i)
	}
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		runKcat(t, kcat, bytes.NewReader(input.Bytes()), "-b", broker, "-P", "-t", topic, "-K", ":",
			"-X", "compression.codec="+codec, "-X", "acks=all")
	}

	out = runKcat(t, kcat, nil, "-b", broker, "-C", "-t", topic, "-o", "beginning", "-e", "-f", "%k=%s\n")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5*n {
		t.Fatalf("kcat consumed %d records, want %d:\n%s", len(lines), 5*n, tail(out, 2000))
	}
	seen := map[string]int{}
	for _, l := range lines {
		seen[l]++
	}
	for i := range n {
		if got := seen[fmt.Sprintf("key-%d=value-%d", i, i)]; got != 5 {
			t.Fatalf("record key-%d seen %d times, want 5", i, got)
		}
	}
}

// runKcat runs kcat, which must succeed within 60 s, and returns its
// output.
func runKcat(t *testing.T, kcat string, stdin *bytes.Reader, args ...string) string {
	t.Helper()
	stdout, stderr, err := execKcat(t, kcat, stdin, 60*time.Second, args...)
	if err != nil {
		t.Fatalf("kcat %v: %v\nstderr:\n%s", args, err, stderr)
	}
	return stdout
}

// execKcat runs kcat with stdin (nil: none) and returns what it printed
// and how it ended; a kcat still running after d is killed and fails the
// test.
func execKcat(t *testing.T, kcat string, stdin *bytes.Reader, d time.Duration, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.Command(kcat, args...)
	if stdin != nil {
		cmd.Stdin = stdin
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(d):
		cmd.Process.Kill()
		<-done
		t.Fatalf("kcat %v hung (killed after %v)\nstderr:\n%s", args, d, errOut.String())
	}
	return out.String(), errOut.String(), err
}
