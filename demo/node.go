package demo

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/kbroker/kbroker/internal/child"
)

// node is one kbroker child process.
type node struct {
	id         int32
	clientAddr string // empty for a controller-only node
	ctrlAddr   string
	dataDir    string
	logPath    string // the process's stdout and stderr
	binary     string
	args       []string

	child.Process
}

// start launches the process. Its output goes to logPath (appended, so a
// restart keeps the earlier lines).
func (n *node) start() error {
	out, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer out.Close() // the child has its own copy
	cmd := exec.Command(n.binary, n.args...)
	cmd.Env = child.Env(os.Environ())
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group: a Ctrl-C at the terminal reaches the demo,
	// which kills the brokers itself, and not the brokers directly.
	// Pdeathsig: if the demo dies without cleaning up, the brokers die too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := n.Start(cmd, nil); err != nil {
		return fmt.Errorf("starting node %d: %w", n.id, err)
	}
	return nil
}

// kill9 kills the process without letting it clean up and waits until it
// is gone.
func (n *node) kill9() error {
	n.Signal(syscall.SIGKILL)
	if !n.WaitExit(10 * time.Second) {
		return fmt.Errorf("node %d still running 10s after SIGKILL", n.id)
	}
	return nil
}

// state describes the process for narration.
func (n *node) state() string {
	switch {
	case !n.Running():
		return "down"
	case !n.Serving():
		return "paused"
	}
	return "up"
}

// logTail returns the last max bytes the process printed.
func (n *node) logTail(max int) string {
	b, err := os.ReadFile(n.logPath)
	if err != nil {
		return ""
	}
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

// partitionDir is where the node keeps a partition's log.
func (n *node) partitionDir(topic string, partition int32) string {
	return filepath.Join(n.dataDir, fmt.Sprintf("%s-%d", topic, partition))
}
