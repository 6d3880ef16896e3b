// Package child supervises one child process for the demo and the test
// harnesses, which all run kbroker brokers as processes: start it, signal
// it, pause and resume it (SIGSTOP/SIGCONT), wait for it to exit, and tell
// whether it is running and answering.
package child

import (
	"errors"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrRunning is Start's answer when the process is running already.
var ErrRunning = errors.New("child: process is running")

// Process is one child process, started again after each exit. The zero
// value is ready to use; it is safe for concurrent use.
type Process struct {
	mu     sync.Mutex // guards the fields below
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process has been reaped
	paused bool
	since  time.Time // when it last started or resumed
}

// Start starts cmd, prepared by the caller (arguments, environment,
// output, SysProcAttr). onExit, if not nil, runs once the process has been
// reaped (to close its output file, say).
func (p *Process) Start(cmd *exec.Cmd, onExit func()) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.runningLocked() {
		return ErrRunning
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		if onExit != nil {
			onExit()
		}
		close(exited)
	}()
	p.cmd, p.exited, p.paused, p.since = cmd, exited, false, time.Now()
	return nil
}

// Signal sends sig to the process, if it was started; SIGSTOP and SIGCONT
// also mark it paused and resumed.
func (p *Process) Signal(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && p.cmd.Process != nil {
		p.cmd.Process.Signal(sig) // fails only if the process is gone already
	}
	switch sig {
	case syscall.SIGSTOP:
		p.paused = true
	case syscall.SIGCONT:
		p.paused, p.since = false, time.Now()
	}
}

// Pause stops the process (SIGSTOP): it keeps its sockets and memory but
// does nothing, like a broker in a long GC pause or a stalled VM.
func (p *Process) Pause() { p.Signal(syscall.SIGSTOP) }

// Resume continues a paused process (SIGCONT).
func (p *Process) Resume() { p.Signal(syscall.SIGCONT) }

// WaitExit waits up to d for the process to exit; true if it has (or was
// never started).
func (p *Process) WaitExit(d time.Duration) bool {
	p.mu.Lock()
	exited := p.exited
	p.mu.Unlock()
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

// Running: started and not exited (it may be paused).
func (p *Process) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.runningLocked()
}

func (p *Process) runningLocked() bool {
	if p.exited == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Serving: running and not paused, so it answers requests.
func (p *Process) Serving() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.paused && p.runningLocked()
}

// ServingFor is how long the process has been serving since it last
// started or resumed; 0 if it is not serving.
func (p *Process) ServingFor() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused || !p.runningLocked() {
		return 0
	}
	return time.Since(p.since)
}

// Pid is the process id of the last start, 0 if never started.
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Env is environ without KBROKER_* variables: the parent's own settings
// must not configure the brokers it starts.
func Env(environ []string) []string {
	var out []string
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "KBROKER_") {
			out = append(out, kv)
		}
	}
	return out
}
