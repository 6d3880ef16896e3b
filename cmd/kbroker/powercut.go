package main

import (
	"context"
	"log/slog"
	"strings"

	"github.com/kbroker/kbroker/broker"
	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/internal/powercut"
	"github.com/kbroker/kbroker/storage/vfs"
)

// The power-loss test harness (internal/powercut) reaches a broker process
// through two environment variables, outside the KBROKER_ namespace of
// config keys: tests only, never a deployment.
const (
	// envPowercutJournal: record the log dirs' fsync bookkeeping in this
	// file, so that a test can turn a kill into a power loss.
	envPowercutJournal = "KBTEST_POWERCUT_JOURNAL"
	// envFailSyncIf: while this file exists, every sync in the log dirs
	// fails with EIO (a failing disk).
	envFailSyncIf = "KBTEST_FAIL_SYNC_IF"
)

// runBroker is broker.RunWith, on the power-loss recorder when environ
// asks for it.
func runBroker(environ []string) runFunc {
	return func(ctx context.Context, cfg *config.Config, log *slog.Logger) error {
		journal, failIf := envValue(environ, envPowercutJournal), envValue(environ, envFailSyncIf)
		if journal == "" && failIf == "" {
			return broker.Run(ctx, cfg, log)
		}
		if journal == "" {
			journal = "/dev/null"
		}
		rec, err := powercut.NewRecorder(vfs.Default, journal, cfg.LogDirs)
		if err != nil {
			return err
		}
		defer rec.Close()
		rec.FailSyncsWhileExists(failIf)
		log.Warn("test harness: log dir syncs are journaled for power-loss tests", "journal", journal, "fail_syncs_if", failIf)
		return broker.RunWith(ctx, cfg, log, rec)
	}
}

// envValue returns the value of key in environ ("" when unset).
func envValue(environ []string, key string) string {
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}
