package shareconfig

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strings"
	"time"
)

// Strategy is a share.auto.offset.reset strategy.
type Strategy int8

// The strategies of Kafka's ShareGroupAutoOffsetResetStrategy.
const (
	Latest     Strategy = iota // the high watermark
	Earliest                   // the log start offset
	ByDuration                 // the first offset at or after now - Duration
)

var strategyNames = [...]string{Latest: "latest", Earliest: "earliest", ByDuration: "by_duration"}

func (s Strategy) String() string {
	if s >= 0 && int(s) < len(strategyNames) {
		return strategyNames[s]
	}
	return fmt.Sprintf("Strategy(%d)", int8(s))
}

// Reset is a parsed share.auto.offset.reset.
type Reset struct {
	Strategy Strategy
	// Duration is the look-back of ByDuration, saturated at the largest
	// time.Duration (a start before the log's first record means earliest).
	Duration time.Duration
}

// ParseAutoOffsetReset parses a share.auto.offset.reset value:
// "earliest", "latest" or "by_duration:<ISO-8601 duration>" (Java's
// Duration.parse syntax, PnDTnHnMn.nS), case-insensitive as Kafka; a
// negative duration is refused.
func ParseAutoOffsetReset(v string) (Reset, error) {
	kind, rest, hasArg := strings.Cut(strings.TrimSpace(v), ":")
	switch strings.ToLower(strings.TrimSpace(kind)) {
	case "earliest":
		if hasArg {
			return Reset{}, errors.New("earliest takes no duration")
		}
		return Reset{Strategy: Earliest}, nil
	case "latest":
		if hasArg {
			return Reset{}, errors.New("latest takes no duration")
		}
		return Reset{Strategy: Latest}, nil
	case "by_duration":
		if !hasArg || strings.TrimSpace(rest) == "" {
			return Reset{}, errors.New("by_duration needs a duration: by_duration:PnDTnHnMn.nS")
		}
		d, err := ParseISODuration(strings.TrimSpace(rest))
		if err != nil {
			return Reset{}, err
		}
		if d < 0 {
			return Reset{}, errors.New("negative duration is not supported")
		}
		return Reset{Strategy: ByDuration, Duration: d}, nil
	}
	return Reset{}, fmt.Errorf("unknown strategy %q: must be earliest, latest or by_duration:<duration>", kind)
}

// isoDuration is java.time.Duration.parse's grammar.
var isoDuration = regexp.MustCompile(`(?i)^([-+]?)P(?:([-+]?[0-9]+)D)?(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?$`)

var errBadDuration = errors.New("text cannot be parsed to a Duration")

// ParseISODuration parses an ISO-8601 duration the way Java's
// Duration.parse does (days are 24 hours; signs on the whole and on each
// part; up to nine fraction digits on the seconds). Durations beyond
// time.Duration's range saturate.
func ParseISODuration(s string) (time.Duration, error) {
	m := isoDuration.FindStringSubmatch(s)
	if m == nil {
		return 0, errBadDuration
	}
	days, hours, mins, secs, frac := m[2], m[4], m[5], m[6], m[7]
	if m[3] != "" && hours == "" && mins == "" && secs == "" {
		return 0, errBadDuration // "T" with nothing after it
	}
	if days == "" && m[3] == "" {
		return 0, errBadDuration // "P" alone
	}
	total := new(big.Int)
	for _, part := range []struct {
		v    string
		unit int64
	}{{days, int64(24 * time.Hour)}, {hours, int64(time.Hour)}, {mins, int64(time.Minute)}, {secs, int64(time.Second)}} {
		if err := addPart(total, part.v, part.unit); err != nil {
			return 0, err
		}
	}
	if frac != "" {
		ns := new(big.Int)
		ns.SetString((frac + "000000000")[:9], 10)
		if strings.HasPrefix(secs, "-") {
			ns.Neg(ns)
		}
		total.Add(total, ns)
	}
	if m[1] == "-" {
		total.Neg(total)
	}
	return saturate(total), nil
}

func addPart(total *big.Int, v string, unit int64) error {
	if v == "" {
		return nil
	}
	n, ok := new(big.Int).SetString(strings.TrimPrefix(v, "+"), 10)
	if !ok {
		return errBadDuration
	}
	total.Add(total, n.Mul(n, big.NewInt(unit)))
	return nil
}

func saturate(n *big.Int) time.Duration {
	switch {
	case n.IsInt64():
		return time.Duration(n.Int64())
	case n.Sign() > 0:
		return math.MaxInt64
	}
	return math.MinInt64
}
