package core

import (
	"math"
	"math/bits"
)

// slidingWindow keeps the current window's start in state.a and, in state.b,
// the previous window's count in the high 32 bits and the current window's
// in the low 32 bits. At time t in window [w, w+P) the key has used
//
//	prev×(w+P−t)/P + cur
//
// and a request fits while that plus its cost stays within Events. Integer
// arithmetic (128-bit products) keeps every decision exact.
//
// Memory per key: the 16-byte state (each count fits in 32 bits because
// Limit.Validate caps Events at 2³¹−1).
type slidingWindow struct {
	period, events int64
}

func (sw *slidingWindow) fresh(now int64) state { return state{a: windowStart(now, sw.period)} }
func (sw *slidingWindow) maxCost() int64        { return sw.events }

// counts returns the window in force at now and the counts of it and of the
// one before; the instant within it that applies is max(now, w) (the
// window's start when the clock stepped back behind a stored window). A
// stored window whose start is not aligned to the period comes from another
// period (SetLimit): it counts as the window of this period that holds its
// start.
func (sw *slidingWindow) counts(s state, now int64) (w, prev, cur int64) {
	w = windowStart(now, sw.period)
	switch {
	case s.a >= w:
		if s.a-w >= sw.period {
			w = s.a
		}
		prev, cur = s.b>>32, s.b&math.MaxUint32
	case s.a >= w-sw.period:
		prev = s.b & math.MaxUint32
	}
	return w, prev, cur
}

// weighted is ceil(count×left/P): the previous window's share still in the
// sliding period when left of the current window remains.
func (sw *slidingWindow) weighted(count, left int64) int64 {
	hi, lo := bits.Mul64(uint64(count), uint64(left))
	q, r := bits.Div64(hi, lo, uint64(sw.period))
	if r != 0 {
		q++
	}
	return int64(q)
}

// longestLeft is the most time that may remain in a window for count in the
// previous window to weigh at most room: floor(room×P/count).
func (sw *slidingWindow) longestLeft(room, count int64) int64 {
	hi, lo := bits.Mul64(uint64(room), uint64(sw.period))
	if hi >= uint64(count) {
		return sw.period
	}
	q, _ := bits.Div64(hi, lo, uint64(count))
	return int64(min(q, uint64(sw.period)))
}

func (sw *slidingWindow) decide(s state, now, cost int64) (state, verdict) {
	var w, prev, cur int64
	if s.a == windowStart(now, sw.period) {
		// The common case, the stored window current, taken by a branch
		// with the stored start, so that what follows need not wait for
		// the division.
		w, prev, cur = s.a, s.b>>32, s.b&math.MaxUint32
	} else {
		w, prev, cur = sw.counts(s, now)
	}
	at := max(now, w)
	left := w + sw.period - at
	used := sw.weighted(prev, left) + cur
	if used+cost <= sw.events {
		return state{a: w, b: prev<<32 | (cur + cost)}, verdict{
			allowed:    true,
			remaining:  sw.events - used - cost,
			resetAfter: w + 2*sw.period - now,
		}
	}
	var retryAt int64
	if cur+cost <= sw.events {
		// This window will do once the previous one weighs little enough.
		retryAt = w + sw.period - sw.longestLeft(sw.events-cur-cost, prev)
	} else {
		// Only the next window, once this one's count has faded enough.
		retryAt = w + 2*sw.period - sw.longestLeft(sw.events-cost, cur)
	}
	v := verdict{remaining: max(0, sw.events-used), retryAfter: retryAt - now}
	switch {
	case cur > 0:
		v.resetAfter = w + 2*sw.period - now
	case prev > 0:
		v.resetAfter = w + sw.period - now
	}
	return s, v
}

// idleAt is when nothing counted still weighs: two windows after the stored
// one if it counted anything, one window after it if only the window before
// it did.
func (sw *slidingWindow) idleAt(s state) int64 {
	switch {
	case s.b&math.MaxUint32 != 0:
		return s.a + 2*sw.period
	case s.b != 0:
		return s.a + sw.period
	}
	return math.MinInt64
}

func (sw *slidingWindow) idle(s state, now int64) bool { return now >= sw.idleAt(s) }

// spare: what the key has used at now, as decide counts it, is at most
// half of Events, or one.
func (sw *slidingWindow) spare(s state, now int64) bool {
	w, prev, cur := sw.counts(s, now)
	left := w + sw.period - max(now, w)
	return sw.weighted(prev, left)+cur <= spareUnits(sw.events)
}

// rank is both counts: the most the key can have used at any instant from
// its last change on. The previous window's share fades at a rate its count
// sets, so no rank that stands still orders keys exactly at every instant;
// this one never ranks a key below what giving it up hands back. An
// admission in the next window may lower it (the count that fades drops
// out); such a key is then indexed above its rank, found later than it
// could be, never given up early.
func (sw *slidingWindow) rank(s state) int64 {
	return s.b>>32 + s.b&math.MaxUint32
}

func (sw *slidingWindow) refund(s state, now, cost int64) (state, bool) {
	w, prev, cur := sw.counts(s, now)
	switch {
	case cur > 0:
		cur = max(0, cur-cost)
	case prev > 0:
		prev = max(0, prev-cost)
	default:
		return s, false
	}
	return state{a: w, b: prev<<32 | cur}, true
}
