// Package sampled holds the measurable statistics Kafka's quotas rest on
// (org.apache.kafka.common.metrics.stats): a windowed sum kept in
// Config.Samples samples of Config.Window each, and the rates measured over
// it, exactly as Kafka computes them, because a quota's throttle time is
// defined by these formulas and clients tune themselves to them:
//
//   - Rate (ClientQuotaManager's byte-rate and request-time quotas): the
//     windowed sum divided by the elapsed time since the oldest sample,
//     counted as at least Samples-1 whole windows, so that a client's
//     first bytes are not measured over a few milliseconds.
//   - SimpleRate (ReplicationQuotaManager): the same sum over the elapsed
//     time, counted as at least one window.
//   - TokenBucket (ControllerMutationQuotaManager, KIP-599): tokens refilled
//     at the quota's rate up to a burst of Samples * Window * quota.
//   - Avg (throttle-time metrics): the mean of the recorded values.
//
// Every stat takes the time of each call in milliseconds (Kafka's long
// timeMs), from the caller's clock: the package reads no clock and starts
// no goroutine. Stats are not safe for concurrent use; their owner locks.
package sampled
