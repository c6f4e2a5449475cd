package fallback

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/floodgate/floodgate/core"
)

// The breaker's state lives in one atomic word, so that a request reads it
// with one load and a transition is one compare-and-swap: the low two bits
// are the state and, when Open, the rest is the clock reading at which the
// open period ends (rounded up to a multiple of 4 ns). Probing is HalfOpen
// with the probe taken: only the probe's owner moves the word on from it.
const (
	wordClosed   int64 = 0
	wordOpen     int64 = 1
	wordHalfOpen int64 = 2
	wordProbing  int64 = 3
	stateBits    int64 = 3
)

// breaker is a circuit breaker that only counts: the Limiter calls the
// primary and tells it how the call went.
type breaker struct {
	word     atomic.Int64
	failures atomic.Int64 // primary failures in a row while Closed
	trips    atomic.Int64 // failed probes in a row; doubles the open period

	clock      core.Clock
	threshold  int64
	openFor    time.Duration
	maxOpenFor time.Duration
	observe    func(Event)

	failN atomic.Uint64 // for Stats
	opens atomic.Uint64
}

// state reports the breaker's state, seen from the clock's reading now.
func (b *breaker) state() State {
	w := b.word.Load()
	switch w & stateBits {
	case wordClosed:
		return Closed
	case wordOpen:
		if b.clock.Now() < w&^stateBits {
			return Open
		}
	}
	return HalfOpen
}

// tryProbe reports whether the caller, having read w (not Closed), now
// owns the probe: the open period has ended, or an earlier probe ended
// without an answer, and no other caller took the probe first.
func (b *breaker) tryProbe(w int64) bool {
	switch w & stateBits {
	case wordOpen:
		if b.clock.Now() < w&^stateBits || !b.word.CompareAndSwap(w, wordProbing) {
			return false
		}
		b.changed(Open, HalfOpen)
		return true
	case wordHalfOpen:
		return b.word.CompareAndSwap(w, wordProbing)
	}
	return false
}

// succeeded records that the primary answered. A probe closes the breaker.
func (b *breaker) succeeded(probe bool) {
	if probe {
		b.failures.Store(0)
		b.trips.Store(0)
		b.word.Store(wordClosed)
		b.changed(HalfOpen, Closed)
		return
	}
	// A load first, so that a healthy primary leaves the line unwritten.
	if b.failures.Load() != 0 {
		b.failures.Store(0)
	}
}

// failed records a primary failure (a store error or the timeout). A
// failed probe opens the breaker again, for twice as long as before; the
// threshold's worth of failures in a row opens a Closed one.
func (b *breaker) failed(err error, probe bool) {
	b.failN.Add(1)
	if b.observe != nil {
		b.observe(Event{Kind: EventPrimaryFailed, Err: err})
	}
	if probe {
		b.word.Store(b.openWord(b.trips.Add(1)))
		b.opens.Add(1)
		b.changed(HalfOpen, Open)
		return
	}
	if b.failures.Add(1) >= b.threshold && b.word.CompareAndSwap(wordClosed, b.openWord(0)) {
		b.opens.Add(1)
		b.changed(Closed, Open)
	}
}

// inconclusive hands the probe back: the probe's caller gave up, or the
// primary refused the request itself (a bad cost or key), which says
// nothing of its store. The next request probes again.
func (b *breaker) inconclusive(probe bool) {
	if probe {
		b.word.Store(wordHalfOpen)
	}
}

// openPeriod returns the open period after trips failed probes in a row:
// openFor doubled trips times, at most maxOpenFor.
func (b *breaker) openPeriod(trips int64) time.Duration {
	d := b.openFor
	for ; trips > 0 && d < b.maxOpenFor; trips-- {
		d *= 2
		if d <= 0 { // overflowed
			return b.maxOpenFor
		}
	}
	return min(d, b.maxOpenFor)
}

// openWord is the word of an Open breaker whose period, after trips failed
// probes, starts now.
func (b *breaker) openWord(trips int64) int64 {
	now, d := b.clock.Now(), int64(b.openPeriod(trips))
	until := int64(math.MaxInt64)
	if now <= math.MaxInt64-d-stateBits {
		until = now + d + stateBits
	}
	return until&^stateBits | wordOpen
}

func (b *breaker) changed(from, to State) {
	if b.observe != nil {
		b.observe(Event{Kind: EventStateChanged, From: from, To: to})
	}
}
