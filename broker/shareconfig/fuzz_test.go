package shareconfig

import (
	"testing"
)

// FuzzParseAutoOffsetReset feeds arbitrary strings to the
// share.auto.offset.reset parser (the only decoder of this package): it must
// not panic, a parsed by_duration is never negative, and Validate agrees
// with the parser. Seeds: testdata/fuzz/FuzzParseAutoOffsetReset.
func FuzzParseAutoOffsetReset(f *testing.F) {
	for _, s := range []string{"latest", "earliest", "by_duration:PT1H", "by_duration:-P1D", "by_duration:P1DT2H3M4.5S", "x:y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseAutoOffsetReset(s)
		if err == nil && r.Strategy == ByDuration && r.Duration < 0 {
			t.Fatalf("negative duration accepted: %q -> %v", s, r.Duration)
		}
		verr := Validate(map[string]string{AutoOffsetReset: s}, DefaultBounds())
		if (err == nil) != (verr == nil) {
			t.Fatalf("parser %v, Validate %v for %q", err, verr, s)
		}
	})
}
