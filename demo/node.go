package demo

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
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

	mu     sync.Mutex // guards the fields below
	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has been reaped
	paused bool
	since  time.Time // when it last started or resumed
}

// start launches the process. Its output goes to logPath (appended, so a
// restart keeps the earlier lines).
func (n *node) start() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	out, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer out.Close() // the child has its own copy
	cmd := exec.Command(n.binary, n.args...)
	cmd.Env = childEnv(os.Environ())
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group: a Ctrl-C at the terminal reaches the demo,
	// which kills the brokers itself, and not the brokers directly.
	// Pdeathsig: if the demo dies without cleaning up, the brokers die too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting node %d: %w", n.id, err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	n.cmd, n.exited, n.paused, n.since = cmd, exited, false, time.Now()
	return nil
}

// childEnv is the demo's environment without KBROKER_* variables: they
// would configure the demo's brokers.
func childEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "KBROKER_") {
			out = append(out, kv)
		}
	}
	return out
}

// kill9 kills the process without letting it clean up and waits until it
// is gone.
func (n *node) kill9() error {
	n.signal(syscall.SIGKILL)
	if !n.waitExit(10 * time.Second) {
		return fmt.Errorf("node %d still running 10s after SIGKILL", n.id)
	}
	return nil
}

// pause stops the process (SIGSTOP): it keeps its sockets and its memory
// but does nothing, like a broker in a long GC pause or a stalled VM.
func (n *node) pause() { n.setPaused(true, syscall.SIGSTOP) }

// resume continues a paused process (SIGCONT).
func (n *node) resume() { n.setPaused(false, syscall.SIGCONT) }

func (n *node) setPaused(paused bool, sig syscall.Signal) {
	n.signal(sig)
	n.mu.Lock()
	n.paused = paused
	n.since = time.Now()
	n.mu.Unlock()
}

func (n *node) signal(sig syscall.Signal) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil && n.cmd.Process != nil {
		n.cmd.Process.Signal(sig) // fails only if the process is gone already
	}
}

func (n *node) waitExit(d time.Duration) bool {
	n.mu.Lock()
	exited := n.exited
	n.mu.Unlock()
	if exited == nil {
		return true
	}
	select {
	case <-exited:
		return true
	case <-time.After(d):
		return false
	}
}

// running: started, not exited (it may be paused).
func (n *node) running() bool {
	n.mu.Lock()
	exited := n.exited
	n.mu.Unlock()
	if exited == nil {
		return false
	}
	select {
	case <-exited:
		return false
	default:
		return true
	}
}

// serving: running and not paused, so it answers requests.
func (n *node) serving() bool {
	n.mu.Lock()
	paused := n.paused
	n.mu.Unlock()
	return !paused && n.running()
}

// servingFor is how long the node has been serving since it last started
// or resumed; 0 if it is not serving.
func (n *node) servingFor() time.Duration {
	if !n.serving() {
		return 0
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return time.Since(n.since)
}

// state describes the process for narration.
func (n *node) state() string {
	switch {
	case !n.running():
		return "down"
	case !n.serving():
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
