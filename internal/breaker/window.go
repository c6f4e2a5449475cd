package breaker

import (
	"sync/atomic"

	"github.com/floodgate/floodgate/internal/tally"
)

// Buckets is how many buckets a window is cut into: the counts of calls
// leave the window a tenth of it at a time.
const Buckets = tally.Buckets

// RunFailures is how many failures, with no success, the previous bucket
// and the current one must hold between them to open a breaker on the
// second rule (see the package documentation).
const RunFailures = 3

// window counts a Closed breaker's outcomes over the last Buckets buckets
// of the clock, each width nanoseconds long, without a lock: one
// tally.Window for successes and one for failures. A bucket's counts
// vanish as soon as the clock leaves it behind, and nothing ever sweeps
// the window.
type window struct {
	width int64
	// skip is added to every bucket number. Clearing the window adds
	// Buckets to it, which makes every word Buckets buckets too old to
	// count: a clear is one atomic add, however busy the window.
	skip       atomic.Int64
	succ, fail tally.Window
}

// bucket returns the number of the bucket that holds the instant now.
func (w *window) bucket(now int64) int64 {
	return tally.Bucket(now, w.width) + w.skip.Load()
}

// clear forgets every count.
func (w *window) clear() { w.skip.Add(Buckets) }

// counts is what a window holds at one instant.
type counts struct {
	calls, failures uint64 // over the whole window
	// The current bucket's and the one before it.
	curSucc, curFail, prevSucc, prevFail uint64
}

// read returns the counts of the window whose newest bucket is n.
func (w *window) read(n int64) counts {
	var c counts
	for i := range int64(Buckets) {
		s, f := w.succ.Count(n-i), w.fail.Count(n-i)
		c.calls += s + f
		c.failures += f
		switch i {
		case 0:
			c.curSucc, c.curFail = s, f
		case 1:
			c.prevSucc, c.prevFail = s, f
		}
	}
	return c
}

// trips reports whether c opens a breaker that needs minCalls and rate
// percent: either rule of the package documentation.
func (c counts) trips(minCalls, rate uint64) bool {
	if c.calls >= minCalls && c.failures*100 >= rate*c.calls {
		return true // failing often: the rate over the window
	}
	// Failing every call: nothing but failures for a whole bucket at least.
	return c.prevFail > 0 && c.prevSucc == 0 && c.curSucc == 0 && c.prevFail+c.curFail >= RunFailures
}
