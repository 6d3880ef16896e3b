package controller

import (
	"context"
	"io"
	"log"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// hclogAdapter routes hashicorp/raft's hclog output into slog, dropping
// everything below its level (Warn by default: Raft is chatty at Info) and
// repeats of a message within hclogRepeatWindow (Raft logs every failed
// heartbeat to a dead peer, many times a second).
type hclogAdapter struct {
	log     *slog.Logger
	name    string
	args    []any
	level   hclog.Level
	limiter *repeatLimiter
}

var _ hclog.Logger = (*hclogAdapter)(nil)

const hclogRepeatWindow = 5 * time.Second

func newHclogAdapter(l *slog.Logger) *hclogAdapter {
	return &hclogAdapter{log: l.With("component", "raft"), level: hclog.Warn, limiter: &repeatLimiter{last: map[string]time.Time{}}}
}

// repeatLimiter passes a message at most once per window.
type repeatLimiter struct {
	mu   sync.Mutex // guards last
	last map[string]time.Time
}

func (r *repeatLimiter) allow(msg string, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t, ok := r.last[msg]; ok && now.Sub(t) < hclogRepeatWindow {
		return false
	}
	if len(r.last) > 1000 {
		clear(r.last)
	}
	r.last[msg] = now
	return true
}

func slogLevel(l hclog.Level) slog.Level {
	switch {
	case l <= hclog.Debug:
		return slog.LevelDebug
	case l == hclog.Info:
		return slog.LevelInfo
	case l == hclog.Warn:
		return slog.LevelWarn
	}
	return slog.LevelError
}

func (h *hclogAdapter) Log(level hclog.Level, msg string, args ...any) {
	if level == hclog.Warn && routineRaftWarnings[msg] {
		level = hclog.Info
	}
	if level == hclog.Off || level < h.level || !h.limiter.allow(msg, time.Now()) {
		return
	}
	if h.name != "" {
		args = append(args, "logger", h.name)
	}
	h.log.Log(context.Background(), slogLevel(level), msg, args...)
}

func (h *hclogAdapter) Trace(msg string, args ...any) { h.Log(hclog.Trace, msg, args...) }
func (h *hclogAdapter) Debug(msg string, args ...any) { h.Log(hclog.Debug, msg, args...) }
func (h *hclogAdapter) Info(msg string, args ...any)  { h.Log(hclog.Info, msg, args...) }
func (h *hclogAdapter) Warn(msg string, args ...any)  { h.Log(hclog.Warn, msg, args...) }
func (h *hclogAdapter) Error(msg string, args ...any) { h.Log(hclog.Error, msg, args...) }
func (h *hclogAdapter) IsTrace() bool                 { return h.level <= hclog.Trace }
func (h *hclogAdapter) IsDebug() bool                 { return h.level <= hclog.Debug }
func (h *hclogAdapter) IsInfo() bool                  { return h.level <= hclog.Info }
func (h *hclogAdapter) IsWarn() bool                  { return h.level <= hclog.Warn }
func (h *hclogAdapter) IsError() bool                 { return h.level <= hclog.Error }
func (h *hclogAdapter) ImpliedArgs() []any            { return h.args }
func (h *hclogAdapter) Name() string                  { return h.name }
func (h *hclogAdapter) SetLevel(level hclog.Level)    { h.level = level }
func (h *hclogAdapter) GetLevel() hclog.Level         { return h.level }

func (h *hclogAdapter) With(args ...any) hclog.Logger {
	c := *h
	c.args = append(append([]any(nil), h.args...), args...)
	c.log = h.log.With(args...)
	return &c
}

func (h *hclogAdapter) Named(name string) hclog.Logger {
	if h.name != "" {
		name = h.name + "." + name
	}
	return h.ResetNamed(name)
}

func (h *hclogAdapter) ResetNamed(name string) hclog.Logger {
	c := *h
	c.name = name
	return &c
}

func (h *hclogAdapter) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(h.StandardWriter(opts), "", 0)
}

func (h *hclogAdapter) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	level := hclog.Info
	if opts != nil && opts.ForceLevel != hclog.NoLevel {
		level = opts.ForceLevel
	}
	return writerFunc(func(p []byte) (int, error) {
		h.Log(level, strings.TrimSpace(string(p)))
		return len(p), nil
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// routineRaftWarnings are Raft warnings that describe normal operation
// (every start of a quorum of one begins with an election): logged at info.
var routineRaftWarnings = map[string]bool{
	"heartbeat timeout reached, starting election": true,
}
