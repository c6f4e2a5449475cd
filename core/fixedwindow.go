package core

import (
	"math"
	"math/bits"
)

// windowStart is the start of the period-long window holding now.
func windowStart(now, period int64) int64 {
	m := now % period
	if m < 0 {
		m += period
	}
	return now - m
}

// fixedWindow keeps the window start in state.a and its count in state.b.
//
// Memory per key: the 16-byte state.
type fixedWindow struct {
	period, events int64
}

func (fw *fixedWindow) fresh(now int64) state { return state{a: windowStart(now, fw.period)} }
func (fw *fixedWindow) maxCost() int64        { return fw.events }

// current returns the window that applies at now and its count. A state
// from a later window (the clock stepped back) stays in force. A stored
// start inside the current window, not at its start, comes from another
// period (SetLimit): its count is the current window's.
func (fw *fixedWindow) current(s state, now int64) (start, count int64) {
	w := windowStart(now, fw.period)
	switch {
	case s.a == w || s.a-w >= fw.period:
		// The common case first, returning the stored start: a branch, so
		// that what follows need not wait for the division above.
		return s.a, s.b
	case s.a > w:
		return w, s.b
	}
	return w, 0
}

func (fw *fixedWindow) decide(s state, now, cost int64) (state, verdict) {
	w, count := fw.current(s, now)
	end := w + fw.period
	if count+cost <= fw.events {
		return state{a: w, b: count + cost}, verdict{allowed: true, remaining: fw.events - count - cost, resetAfter: end - now}
	}
	// A count kept across SetLimit may exceed Events: nothing is left.
	return s, verdict{remaining: max(0, fw.events-count), retryAfter: end - now, resetAfter: end - now}
}

// idleAt is the end of the stored window, once anything is counted in it:
// the next window starts empty. (A start kept across SetLimit may lie inside
// a window of the new period, which then ends before this: idleAt is never
// early, which is all the table needs.)
func (fw *fixedWindow) idleAt(s state) int64 {
	if s.b == 0 {
		return math.MinInt64
	}
	return s.a + fw.period
}

func (fw *fixedWindow) idle(s state, now int64) bool { return now >= fw.idleAt(s) }

// spare: the window in force counts at most half of Events, or one.
func (fw *fixedWindow) spare(s state, now int64) bool {
	_, count := fw.current(s, now)
	return count <= spareUnits(fw.events)
}

// rank is the stored window's start plus its count's share of the period:
// keys of the window in force rank by count, and an admission in a later
// window raises the rank (so the index never holds a rank above a key's).
func (fw *fixedWindow) rank(s state) int64 {
	hi, lo := bits.Mul64(uint64(min(max(s.b, 0), fw.events)), uint64(fw.period))
	q, _ := bits.Div64(hi, lo, uint64(fw.events))
	return s.a + int64(q)
}

func (fw *fixedWindow) refund(s state, now, cost int64) (state, bool) {
	if w, count := fw.current(s, now); count > 0 {
		return state{a: w, b: max(0, count-cost)}, true
	}
	return s, false
}
