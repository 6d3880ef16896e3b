package storage

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/kbroker/kbroker/record"
)

// LogConfig holds the Kafka topic configs the log implements. A zero field
// takes Kafka's default (see DefaultLogConfig); the config layer maps Kafka's
// literal values (for example retention.ms=0) onto these fields.
type LogConfig struct {
	SegmentBytes          int64         // segment.bytes (default 1 GiB, at most 2 GiB-1)
	SegmentMs             time.Duration // segment.ms (default 7d)
	IndexIntervalBytes    int32         // index.interval.bytes (4096)
	MaxIndexBytes         int32         // segment.index.bytes (10 MiB)
	RetentionMs           int64         // retention.ms, -1 = unlimited (default 7d)
	RetentionBytes        int64         // retention.bytes, -1 = unlimited (default -1)
	FlushMessages         int64         // flush.messages (math.MaxInt64 = never by count)
	FlushMs               int64         // flush.ms (math.MaxInt64 = never by time)
	PreallocateChunkBytes int64         // fallocate step of .log files; 0 = min(segment.bytes, 8 MiB)
	// Compact is set when cleanup.policy contains "compact": the cleaner
	// keeps the latest record per key (cleaner.go), time/size retention is
	// skipped unless CompactDelete is set too (cleanup.policy=compact,delete),
	// and follower appends may skip offsets.
	Compact       bool
	CompactDelete bool
	// DeleteRetentionMs is delete.retention.ms: how long a tombstone stays
	// after the cleaning that first retained it (default 1 day). The config
	// layer maps a literal 0 to 1.
	DeleteRetentionMs int64
	// MinCompactionLagMs (min.compaction.lag.ms, default 0) keeps records
	// younger than it out of cleaning; MaxCompactionLagMs
	// (max.compaction.lag.ms, default math.MaxInt64 = none) makes a log
	// cleanable regardless of its dirty ratio once its oldest dirty batch is
	// older than it, and also rolls the active segment of a compacted log.
	MinCompactionLagMs int64
	MaxCompactionLagMs int64
	// MinCleanableDirtyRatio is min.cleanable.dirty.ratio (default 0.5): a
	// log is cleaned when dirty bytes / (clean + dirty bytes) exceeds it.
	// The config layer maps a literal 0 to math.SmallestNonzeroFloat64.
	MinCleanableDirtyRatio float64
}

// Kafka's defaults.
const (
	DefaultSegmentBytes       = 1 << 30
	DefaultSegmentMs          = 7 * 24 * time.Hour
	DefaultIndexIntervalBytes = 4096
	DefaultMaxIndexBytes      = 10 << 20
	DefaultRetentionMs        = int64(7 * 24 * time.Hour / time.Millisecond)
	DefaultDeleteRetentionMs  = int64(24 * time.Hour / time.Millisecond)
	DefaultMinCleanableRatio  = 0.5
	defaultPreallocateChunk   = 8 << 20
)

// DefaultLogConfig returns Kafka's topic defaults.
func DefaultLogConfig() LogConfig {
	return LogConfig{
		SegmentBytes:       DefaultSegmentBytes,
		SegmentMs:          DefaultSegmentMs,
		IndexIntervalBytes: DefaultIndexIntervalBytes,
		MaxIndexBytes:      DefaultMaxIndexBytes,
		RetentionMs:        DefaultRetentionMs,
		RetentionBytes:     -1,
		FlushMessages:      math.MaxInt64,
		FlushMs:            math.MaxInt64,

		DeleteRetentionMs:      DefaultDeleteRetentionMs,
		MaxCompactionLagMs:     math.MaxInt64,
		MinCleanableDirtyRatio: DefaultMinCleanableRatio,
	}
}

// withDefaults fills zero fields with defaults.
func (c LogConfig) withDefaults() LogConfig {
	d := DefaultLogConfig()
	if c.SegmentBytes == 0 {
		c.SegmentBytes = d.SegmentBytes
	}
	if c.SegmentMs == 0 {
		c.SegmentMs = d.SegmentMs
	}
	if c.IndexIntervalBytes == 0 {
		c.IndexIntervalBytes = d.IndexIntervalBytes
	}
	if c.MaxIndexBytes == 0 {
		c.MaxIndexBytes = d.MaxIndexBytes
	}
	if c.RetentionMs == 0 {
		c.RetentionMs = d.RetentionMs
	}
	if c.RetentionBytes == 0 {
		c.RetentionBytes = d.RetentionBytes
	}
	if c.FlushMessages == 0 {
		c.FlushMessages = d.FlushMessages
	}
	if c.FlushMs == 0 {
		c.FlushMs = d.FlushMs
	}
	if c.DeleteRetentionMs == 0 {
		c.DeleteRetentionMs = d.DeleteRetentionMs
	}
	if c.MaxCompactionLagMs == 0 {
		c.MaxCompactionLagMs = d.MaxCompactionLagMs
	}
	if c.MinCleanableDirtyRatio == 0 {
		c.MinCleanableDirtyRatio = d.MinCleanableDirtyRatio
	}
	return c
}

// Validate checks ranges (after defaults are applied).
func (c LogConfig) Validate() error {
	c = c.withDefaults()
	var errs []error
	if c.SegmentBytes < record.BatchHeaderSize || c.SegmentBytes > math.MaxInt32 {
		errs = append(errs, fmt.Errorf("segment.bytes %d not in [%d, %d]", c.SegmentBytes, record.BatchHeaderSize, math.MaxInt32))
	}
	if c.SegmentMs < time.Millisecond {
		errs = append(errs, fmt.Errorf("segment.ms %v below 1ms", c.SegmentMs))
	}
	if c.IndexIntervalBytes < 0 {
		errs = append(errs, fmt.Errorf("index.interval.bytes %d negative", c.IndexIntervalBytes))
	}
	if c.MaxIndexBytes < timeIndexEntrySize*2 {
		errs = append(errs, fmt.Errorf("segment.index.bytes %d below %d", c.MaxIndexBytes, timeIndexEntrySize*2))
	}
	if c.RetentionMs < -1 || c.RetentionBytes < -1 {
		errs = append(errs, fmt.Errorf("retention.ms %d / retention.bytes %d below -1", c.RetentionMs, c.RetentionBytes))
	}
	if c.FlushMessages < 1 || c.FlushMs < 0 || c.PreallocateChunkBytes < 0 {
		errs = append(errs, errors.New("flush.messages must be >= 1, flush.ms and the preallocate chunk >= 0"))
	}
	if c.DeleteRetentionMs < 0 || c.MinCompactionLagMs < 0 || c.MaxCompactionLagMs < 1 {
		errs = append(errs, fmt.Errorf("delete.retention.ms %d / min.compaction.lag.ms %d negative or max.compaction.lag.ms %d below 1",
			c.DeleteRetentionMs, c.MinCompactionLagMs, c.MaxCompactionLagMs))
	}
	if c.MinCompactionLagMs > c.MaxCompactionLagMs {
		errs = append(errs, fmt.Errorf("min.compaction.lag.ms %d above max.compaction.lag.ms %d", c.MinCompactionLagMs, c.MaxCompactionLagMs))
	}
	if !(c.MinCleanableDirtyRatio >= 0 && c.MinCleanableDirtyRatio <= 1) {
		errs = append(errs, fmt.Errorf("min.cleanable.dirty.ratio %v not in [0, 1]", c.MinCleanableDirtyRatio))
	}
	if len(errs) > 0 {
		return fmt.Errorf("storage: invalid log config: %w", errors.Join(errs...))
	}
	return nil
}

// segmentParams derives what a new or re-activated segment needs.
func (c *LogConfig) segmentParams() segmentParams {
	chunk := c.PreallocateChunkBytes
	if chunk <= 0 {
		chunk = min(c.SegmentBytes, defaultPreallocateChunk)
	}
	return segmentParams{capacity: c.SegmentBytes, chunk: chunk, maxIndexBytes: int64(c.MaxIndexBytes)}
}

// retentionApplies reports whether time/size retention deletes segments.
func (c *LogConfig) retentionApplies() bool { return !c.Compact || c.CompactDelete }

// compacted reports whether the cleaner compacts the log.
func (c *LogConfig) compacted() bool { return c.Compact || c.CompactDelete }

// maxSegmentAge is how long the active segment may stay open: segment.ms,
// or max.compaction.lag.ms if smaller on a compacted log (Kafka's
// LogConfig.maxSegmentMs), so that its records become cleanable in time.
func (c *LogConfig) maxSegmentAge() time.Duration {
	if c.compacted() && c.MaxCompactionLagMs < int64(c.SegmentMs/time.Millisecond) {
		return time.Duration(c.MaxCompactionLagMs) * time.Millisecond
	}
	return c.SegmentMs
}
