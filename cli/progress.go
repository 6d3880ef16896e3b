package cli

import (
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"
)

// progress prints a running count every two seconds on a terminal's
// stderr (never into a pipe or a file, where it would be noise).
type progress struct {
	n    atomic.Int64
	done chan struct{}
	quit chan struct{}
}

func newProgress(w io.Writer, verb string) *progress {
	p := &progress{done: make(chan struct{}), quit: make(chan struct{})}
	if !isTerminal(w) {
		close(p.done)
		return p
	}
	start := time.Now()
	go func() {
		defer close(p.done)
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-p.quit:
				fmt.Fprint(w, "\r\033[K")
				return
			case <-t.C:
				n := p.n.Load()
				rate := float64(n) / time.Since(start).Seconds()
				fmt.Fprintf(w, "\r\033[K%s %d records (%.0f/s)...", verb, n, rate)
			}
		}
	}()
	return p
}

func (p *progress) add(n int64) { p.n.Add(n) }

// stop ends the reporting goroutine and clears its line.
func (p *progress) stop() {
	select {
	case <-p.done:
	default:
		close(p.quit)
		<-p.done
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
