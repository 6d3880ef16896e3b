package chaos

import (
	"math/rand/v2"
	"time"
)

// Kind is a fault the scheduler may pick, with how long it may last.
type Kind struct {
	Name string
	// MinHold, MaxHold bound how long the fault stays before it is healed.
	MinHold, MaxHold time.Duration
}

// Step is one planned fault.
type Step struct {
	// At is when the fault should start, from the start of the schedule.
	At   time.Duration
	Kind string
	Hold time.Duration
	// Pick is a random number the nemesis uses to choose its target (a
	// partition, a broker, a split), so that a replay picks the same.
	Pick uint64
}

// Schedule plans faults over total: a quiet gap in [minGap, maxGap], a
// fault of a random kind held for its random hold, and so on. The same seed
// gives the same schedule.
func Schedule(seed uint64, kinds []Kind, total, minGap, maxGap time.Duration) []Step {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	between := func(lo, hi time.Duration) time.Duration {
		if hi <= lo {
			return lo
		}
		return lo + time.Duration(rng.Int64N(int64(hi-lo)))
	}
	var out []Step
	at := time.Duration(0)
	for len(kinds) > 0 {
		at += between(minGap, maxGap)
		k := kinds[rng.IntN(len(kinds))]
		s := Step{At: at, Kind: k.Name, Hold: between(k.MinHold, k.MaxHold), Pick: rng.Uint64()}
		if at+s.Hold > total {
			break
		}
		out = append(out, s)
		at += s.Hold
	}
	return out
}
