package breaker

import (
	"math"
	"sync/atomic"
)

// Buckets is how many buckets a window is cut into: the counts of calls
// leave the window a tenth of it at a time.
const Buckets = 10

// RunFailures is how many failures, with no success, the previous bucket
// and the current one must hold between them to open a breaker on the
// second rule (see the package documentation).
const RunFailures = 3

// window counts a Closed breaker's outcomes over the last Buckets buckets
// of the clock, each width nanoseconds long, without a lock: each bucket
// is two atomic words, one for successes and one for failures, whose high
// 32 bits tag the bucket (the low 32 bits of its number) and low 32 bits
// count. A record for a bucket whose word still holds an older tag resets
// the word; a read ignores every word not tagged with the bucket it asks
// for. So a bucket's counts vanish as soon as the clock leaves it behind,
// and nothing ever sweeps the window.
type window struct {
	width int64
	// skip is added to every bucket number. Clearing the window adds
	// Buckets to it, which makes every word Buckets buckets too old to
	// count: a clear is one atomic add, however busy the window.
	skip       atomic.Int64
	succ, fail [Buckets]atomic.Uint64
}

// bucket returns the number of the bucket that holds the instant now.
func (w *window) bucket(now int64) int64 {
	n := now / w.width
	if now < 0 && n*w.width != now { // round down before the epoch too
		n--
	}
	return n + w.skip.Load()
}

// slot returns the index of bucket n's words.
func slot(n int64) int {
	i := int(n % Buckets)
	if i < 0 {
		i += Buckets
	}
	return i
}

// add counts one outcome in bucket n of words (succ or fail).
func (w *window) add(words *[Buckets]atomic.Uint64, n int64) {
	word, tag := &words[slot(n)], uint32(n)
	for {
		old := word.Load()
		switch t := uint32(old >> 32); {
		case t == tag:
			if uint32(old) != math.MaxUint32 { // saturates rather than spill into the tag
				word.Add(1)
			}
			return
		case old != 0 && int32(tag-t) < 0:
			// The slot already holds a later bucket: this report read the
			// clock before another one moved on. Too late to count. (A
			// word never written is 0; one written counts at least 1.)
			return
		case word.CompareAndSwap(old, uint64(tag)<<32|1):
			return
		}
	}
}

// count returns the number in words for bucket n: 0 unless its slot is
// tagged with n.
func count(words *[Buckets]atomic.Uint64, n int64) uint64 {
	w := words[slot(n)].Load()
	if uint32(w>>32) != uint32(n) {
		return 0
	}
	return w & math.MaxUint32
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
		s, f := count(&w.succ, n-i), count(&w.fail, n-i)
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
