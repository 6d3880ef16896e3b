package demo

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Narrator writes the story of a run, one line per event, each stamped with
// the time since the narrator was created. It is safe for concurrent use.
type Narrator struct {
	mu    sync.Mutex // guards w
	w     io.Writer
	start time.Time
	now   func() time.Time
}

// NewNarrator narrates to w; timestamps count from now.
func NewNarrator(w io.Writer) *Narrator {
	return newNarratorClock(w, time.Now)
}

func newNarratorClock(w io.Writer, now func() time.Time) *Narrator {
	return &Narrator{w: w, start: now(), now: now}
}

// Elapsed is the time since the narrator started.
func (n *Narrator) Elapsed() time.Duration { return n.now().Sub(n.start) }

// Say writes one event line: "[  3.2s] text". Continuation lines of a
// multi-line text are indented under the first.
func (n *Narrator) Say(format string, args ...any) {
	text := fmt.Sprintf(format, args...)
	stamp := fmt.Sprintf("[%6.1fs] ", n.Elapsed().Seconds())
	text = strings.ReplaceAll(text, "\n", "\n"+strings.Repeat(" ", len(stamp)))
	n.write(stamp + text + "\n")
}

// Heading starts a part of the story with a blank line and a title.
func (n *Narrator) Heading(format string, args ...any) {
	n.write("\n")
	n.Say("== "+format+" ==", args...)
}

func (n *Narrator) write(s string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	io.WriteString(n.w, s) // a narration that cannot be written is not a failure of the demo
}
