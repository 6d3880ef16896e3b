// Package faketime is the name the share-group packages' tests knew the
// manual clock by; the clock is testsupport.Clock (one fake clock for
// every package's tests). New code imports internal/testsupport.
package faketime

import (
	"time"

	"github.com/kbroker/kbroker/internal/testsupport"
)

// Clock is testsupport.Clock.
type Clock = testsupport.Clock

// New returns a clock showing start (testsupport.NewClock).
func New(start time.Time) *Clock { return testsupport.NewClock(start) }
