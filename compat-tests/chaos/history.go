package chaos

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Event types of a history.
const (
	// Invoke: a producer hands a value to its client.
	Invoke = "invoke"
	// Ok: the value was acknowledged at Offset.
	Ok = "ok"
	// Fail: the client gave up on the value (it may still have been
	// written: Kafka's errors after a send are indeterminate).
	Fail = "fail"
	// Read: a consumer saw Value at Offset during the run.
	Read = "read"
	// Final: the value is at Offset in the read of every partition after
	// the cluster healed.
	Final = "final"
	// NemesisStart and NemesisStop bracket one fault; Info describes it.
	NemesisStart = "nemesis-start"
	NemesisStop  = "nemesis-stop"
)

// Event is one line of a history.
type Event struct {
	// Time is microseconds since the run started.
	Time int64 `json:"t"`
	// Proc is who did it: "p0".. producers, "c0".. consumers, "final",
	// "nemesis".
	Proc      string `json:"proc"`
	Type      string `json:"type"`
	Value     string `json:"value,omitempty"`
	Partition int32  `json:"part"`
	Offset    int64  `json:"offset"`
	Info      string `json:"info,omitempty"`
}

// History records events from many goroutines, in the order they happen.
// The zero value is not usable: use NewHistory.
type History struct {
	start time.Time

	mu     sync.Mutex // guards events
	events []Event
}

// NewHistory starts an empty history whose clock starts now.
func NewHistory() *History {
	return &History{start: time.Now()}
}

// Add appends e, stamping its time.
func (h *History) Add(e Event) {
	h.mu.Lock()
	e.Time = time.Since(h.start).Microseconds()
	h.events = append(h.events, e)
	h.mu.Unlock()
}

// Events returns a copy of the events so far.
func (h *History) Events() []Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Event(nil), h.events...)
}

// WriteFile writes the history as JSON lines, one event a line.
func WriteHistory(path string, events []Event) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, e := range events {
		if err := enc.Encode(e); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ReadHistory reads a history written by WriteHistory.
func ReadHistory(r io.Reader) ([]Event, error) {
	var out []Event
	dec := json.NewDecoder(r)
	for {
		var e Event
		if err := dec.Decode(&e); err == io.EOF {
			return out, nil
		} else if err != nil {
			return out, fmt.Errorf("history event %d: %w", len(out)+1, err)
		}
		out = append(out, e)
	}
}
