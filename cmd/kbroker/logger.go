package main

import (
	"fmt"
	"io"
	"log/slog"
)

// newLogger builds kbroker's logger on w: text (slog's key=value) or json
// lines, at level debug, info, warn or error.
func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log.level=%s is invalid: must be one of debug, info, warn, error", level)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("log.format=%s is invalid: must be one of text, json", format)
}
