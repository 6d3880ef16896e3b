package sampled

import "math"

// TokenBucket is Kafka's TokenBucket (KIP-599), the controller mutation
// quota's measure: tokens refill at the quota per second up to a burst of
// Samples * Window * quota, and each recorded value takes that many. The
// quota is exceeded while the tokens are below zero; a bucket starts full.
type TokenBucket struct {
	tokens       float64
	lastUpdateMs int64
}

// burst is the most tokens the bucket holds.
func burst(c Config, quota float64) float64 {
	return float64(c.samples()) * (float64(c.windowMs()) / 1000) * quota
}

func (b *TokenBucket) refill(c Config, quota float64, nowMs int64) {
	b.tokens = math.Min(burst(c, quota), b.tokens+quota*float64(nowMs-b.lastUpdateMs)/1000)
	b.lastUpdateMs = nowMs
}

// Measure returns the tokens left at nowMs under quota.
func (b *TokenBucket) Measure(c Config, quota float64, nowMs int64) float64 {
	b.refill(c, quota, nowMs)
	return b.tokens
}

// Record takes value tokens at nowMs.
func (b *TokenBucket) Record(c Config, quota, value float64, nowMs int64) {
	b.refill(c, quota, nowMs)
	b.tokens = math.Min(burst(c, quota), b.tokens-value)
}

// ThrottleTime is ControllerMutationQuotaManager.throttleTimeMs: the ms
// until tokens (negative) refill to zero at quota per second.
func ThrottleTime(tokens, quota float64) int64 {
	if tokens >= 0 || quota <= 0 {
		return 0
	}
	return int64(math.Round(-tokens / quota * 1000))
}
