package admin

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetKind says how an OffsetSpec picks an offset.
type OffsetKind int

// The offset kinds.
const (
	OffsetStart      OffsetKind = iota // the log start (earliest)
	OffsetEnd                          // the high watermark (latest)
	OffsetExact                        // N
	OffsetAfterStart                   // +N: N after the log start
	OffsetBeforeEnd                    // -N: N before the end
	OffsetTime                         // @T: the first record at or after T
)

// OffsetSpec is a position in every partition of a topic, as the CLI and
// the console take it: start, end, 42, +10, -10 or @TIME.
type OffsetSpec struct {
	Kind   OffsetKind
	N      int64 // the offset, or how many records from start or end
	Millis int64 // OffsetTime: unix milliseconds
}

// OffsetSyntax describes what ParseOffset accepts, for help and errors.
const OffsetSyntax = "start (or earliest), end (or latest), an offset (42), +N after the start, " +
	"-N before the end, or @TIME: @1714557600000 (unix ms), @2024-05-01T10:00:00Z, @2024-05-01, @-1h (ago)"

// ParseOffset parses an offset spec; now resolves @-DURATION.
func ParseOffset(s string, now time.Time) (OffsetSpec, error) {
	s = strings.TrimSpace(s)
	bad := func() (OffsetSpec, error) {
		return OffsetSpec{}, fmt.Errorf("malformed offset %q: want %s", s, OffsetSyntax)
	}
	switch strings.ToLower(s) {
	case "start", "earliest", "beginning", "oldest":
		return OffsetSpec{Kind: OffsetStart}, nil
	case "end", "latest", "newest":
		return OffsetSpec{Kind: OffsetEnd}, nil
	case "":
		return bad()
	}
	if t, ok := strings.CutPrefix(s, "@"); ok {
		ms, err := ParseTime(t, now)
		if err != nil {
			return OffsetSpec{}, fmt.Errorf("malformed offset %q: %v", s, err)
		}
		return OffsetSpec{Kind: OffsetTime, Millis: ms}, nil
	}
	kind := OffsetExact
	digits := s
	switch s[0] {
	case '+':
		kind, digits = OffsetAfterStart, s[1:]
	case '-':
		kind, digits = OffsetBeforeEnd, s[1:]
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n < 0 || digits == "" || digits[0] == '+' || digits[0] == '-' {
		return bad()
	}
	return OffsetSpec{Kind: kind, N: n}, nil
}

// ParseTime parses unix milliseconds, RFC 3339, a date (UTC), or -DURATION
// (that long before now) into unix milliseconds.
func ParseTime(s string, now time.Time) (int64, error) {
	if d, ok := strings.CutPrefix(s, "-"); ok {
		dur, err := time.ParseDuration(d)
		if err != nil || dur <= 0 {
			return 0, fmt.Errorf("%q is not a duration like -1h or -30m", s)
		}
		return now.Add(-dur).UnixMilli(), nil
	}
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil && ms >= 0 {
		return ms, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, fmt.Errorf("%q is not a time: want unix milliseconds, RFC 3339 (2024-05-01T10:00:00Z), a date (2024-05-01) or -DURATION (-1h)", s)
}

// String prints the spec back in ParseOffset's syntax.
func (o OffsetSpec) String() string {
	switch o.Kind {
	case OffsetStart:
		return "start"
	case OffsetEnd:
		return "end"
	case OffsetAfterStart:
		return "+" + strconv.FormatInt(o.N, 10)
	case OffsetBeforeEnd:
		return "-" + strconv.FormatInt(o.N, 10)
	case OffsetTime:
		return "@" + time.UnixMilli(o.Millis).UTC().Format(time.RFC3339Nano)
	}
	return strconv.FormatInt(o.N, 10)
}

// KgoOffset is the spec as a kgo consumer offset (for group consumers,
// whose partitions are not known in advance).
func (o OffsetSpec) KgoOffset() kgo.Offset {
	switch o.Kind {
	case OffsetEnd:
		return kgo.NewOffset().AtEnd()
	case OffsetExact:
		return kgo.NewOffset().At(o.N)
	case OffsetAfterStart:
		return kgo.NewOffset().AtStart().Relative(o.N)
	case OffsetBeforeEnd:
		return kgo.NewOffset().AtEnd().Relative(-o.N)
	case OffsetTime:
		return kgo.NewOffset().AfterMilli(o.Millis)
	}
	return kgo.NewOffset().AtStart()
}

// Offsets maps topic -> partition -> offset.
type Offsets map[string]map[int32]int64

func (o Offsets) set(t string, p int32, off int64) {
	if o[t] == nil {
		o[t] = map[int32]int64{}
	}
	o[t][p] = off
}

// Lookup returns the offset of t/p, -1 if absent.
func (o Offsets) Lookup(t string, p int32) int64 {
	if off, ok := o[t][p]; ok {
		return off
	}
	return -1
}

// Resolve turns a spec into an absolute offset for each partition of set,
// clamped to [log start, high watermark]: a time after the last record
// resolves to the end, as Kafka's tools do.
func (c *Client) Resolve(ctx context.Context, set kadm.TopicsSet, spec OffsetSpec) (Offsets, error) {
	topics := sortedTopics(set)
	starts, err := c.adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		return nil, c.Explain(ctx, err)
	}
	ends, err := c.adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, c.Explain(ctx, err)
	}
	var times kadm.ListedOffsets
	if spec.Kind == OffsetTime {
		if times, err = c.adm.ListOffsetsAfterMilli(ctx, spec.Millis, topics...); err != nil {
			return nil, c.Explain(ctx, err)
		}
	}
	out := Offsets{}
	for t, ps := range set {
		for p := range ps {
			start, okS := starts.Lookup(t, p)
			end, okE := ends.Lookup(t, p)
			if !okS || !okE || start.Err != nil || end.Err != nil {
				return nil, c.offsetErr(t, p, start.Err, end.Err)
			}
			out.set(t, p, pick(spec, start.Offset, end.Offset, times, t, p))
		}
	}
	return out, nil
}

func (c *Client) offsetErr(t string, p int32, errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return c.codeErr(fmt.Sprintf("partition %s/%d", t, p), err, nil, kmsg.ListOffsets.Int16())
		}
	}
	return fmt.Errorf("partition %s/%d: its leader did not answer ListOffsets", t, p)
}

// pick applies spec to one partition whose log spans [start, end).
func pick(spec OffsetSpec, start, end int64, times kadm.ListedOffsets, t string, p int32) int64 {
	var off int64
	switch spec.Kind {
	case OffsetStart:
		off = start
	case OffsetEnd:
		off = end
	case OffsetExact:
		off = spec.N
	case OffsetAfterStart:
		off = start + spec.N
	case OffsetBeforeEnd:
		off = end - spec.N
	case OffsetTime:
		off = end
		if lo, ok := times.Lookup(t, p); ok && lo.Err == nil && lo.Offset >= 0 {
			off = lo.Offset
		}
	}
	return min(max(off, start), end)
}
