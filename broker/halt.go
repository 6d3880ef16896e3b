package broker

import (
	"fmt"
)

// A failed log dir halts the broker, as Kafka does. After a failed fsync
// the kernel may have dropped the dirty pages, so the dir's partitions
// cannot acknowledge anything more (storage takes the dir offline), and
// they must move: Kafka in KRaft mode halts when its last log dir fails,
// and, at metadata versions without directory assignment (before 3.7-IV2,
// KIP-858), on any log dir failure, since the controller cannot move the
// partitions of one dir alone. kbroker has no directory assignment in its
// metadata log, so it halts on any log dir failure: no controlled shutdown
// (the dir's partitions could not hand over cleanly anyway), no flush and
// no clean-shutdown marker. The controller fences the broker when its
// session expires and elects other leaders; when the broker starts again,
// it registers as after an unclean shutdown (KIP-966: it leaves the ISRs
// and eligible leader replicas until it has caught up), and its logs are
// recovered.

// logDirFailed is storage's OnLogDirFailure: the broker halts.
func (b *Broker) logDirFailed(dir string, err error) {
	b.logger.Error("halting: log dir failed; the broker stops so that the controller moves its partitions elsewhere",
		"log_dir", dir, "err", err)
	b.halt(fmt.Errorf("log dir %s failed: %w", dir, err))
}

// halt makes Halted deliver err (the first reason only).
func (b *Broker) halt(err error) {
	b.haltOnce.Do(func() { b.halted <- err })
}

// Halted delivers the reason the broker must stop at once; the owner then
// calls Abort and exits with an error (Run does).
func (b *Broker) Halted() <-chan error { return b.halted }

// Abort stops the broker as a crash would for its data: listeners,
// replication and the controller node stop (heartbeats with them), the
// logs are neither flushed nor closed and no clean-shutdown marker is
// written. The process is expected to exit next. Later calls do nothing.
func (b *Broker) Abort() { b.abortOnce.Do(b.abort) }

func (b *Broker) abort() {
	b.stopServing()
	if b.ctrl != nil {
		if err := b.ctrl.Close(); err != nil {
			b.logger.Warn("closing the controller node", "err", err)
		}
	}
}
