package child

import (
	"errors"
	"os/exec"
	"slices"
	"testing"
	"time"
)

func TestProcessLifecycle(t *testing.T) {
	var p Process
	if p.Running() || p.Serving() || p.Pid() != 0 || !p.WaitExit(0) {
		t.Fatal("a process never started reads as running")
	}
	exitedHook := make(chan struct{})
	if err := p.Start(exec.Command("sleep", "30"), func() { close(exitedHook) }); err != nil {
		t.Fatal(err)
	}
	if !p.Running() || !p.Serving() || p.Pid() == 0 {
		t.Fatal("started process not running and serving")
	}
	if err := p.Start(exec.Command("sleep", "30"), nil); !errors.Is(err, ErrRunning) {
		t.Fatalf("second start: %v", err)
	}
	p.Pause()
	if !p.Running() || p.Serving() || p.ServingFor() != 0 {
		t.Fatal("paused process reads as serving")
	}
	p.Resume()
	if !p.Serving() {
		t.Fatal("resumed process not serving")
	}
	if p.WaitExit(50 * time.Millisecond) {
		t.Fatal("a running process reads as exited")
	}
	p.Signal(9)
	if !p.WaitExit(10 * time.Second) {
		t.Fatal("killed process did not exit")
	}
	select {
	case <-exitedHook:
	default:
		t.Fatal("onExit did not run before WaitExit returned")
	}
	if p.Running() || p.Serving() {
		t.Fatal("exited process reads as running")
	}
	if err := p.Start(exec.Command("true"), nil); err != nil {
		t.Fatalf("start after exit: %v", err)
	}
	if !p.WaitExit(10 * time.Second) {
		t.Fatal("restarted process did not exit")
	}
}

func TestEnvDropsKbrokerSettings(t *testing.T) {
	got := Env([]string{"PATH=/bin", "KBROKER_NODE_ID=3", "HOME=/root", "KBROKER_LOG_DIRS=/x"})
	if want := []string{"PATH=/bin", "HOME=/root"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
