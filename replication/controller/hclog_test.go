package controller

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

func TestHclogAdapterLevelsAndRepeats(t *testing.T) {
	var buf bytes.Buffer
	h := newHclogAdapter(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	h.Info("chatty")
	h.Warn("peer down", "peer", "a")
	h.Warn("peer down", "peer", "b") // a repeat within the window
	h.Named("snap").Error("broken", "k", 1)
	out := buf.String()
	if strings.Contains(out, "chatty") || strings.Count(out, "peer down") != 1 {
		t.Fatalf("output:\n%s", out)
	}
	if !strings.Contains(out, "level=ERROR") || !strings.Contains(out, "logger=snap") || !strings.Contains(out, "component=raft") {
		t.Fatalf("output:\n%s", out)
	}
	if h.IsInfo() || !h.IsWarn() || h.GetLevel() != hclog.Warn {
		t.Fatal("levels")
	}
}
