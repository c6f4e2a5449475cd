package core

import (
	"fmt"
	"math"
	"math/bits"
	"time"
)

// Algorithm selects how a key's state turns into a decision. Every algorithm
// keeps 16 bytes of state per key in memory.
type Algorithm int

const (
	// TokenBucket is the default: a bucket of Burst tokens refilled at
	// Events/Period, with the arithmetic and decisions of
	// golang.org/x/time/rate's Limiter (float64 tokens). Unlike x/time/rate,
	// a clock that steps backwards never adds tokens.
	TokenBucket Algorithm = iota
	// GCRA is the generic cell rate algorithm: one theoretical arrival time
	// per key, integer nanoseconds, the same admissions as an ideal token
	// bucket with the interval rounded up to a whole nanosecond. Its
	// integer arithmetic costs a fraction of the token bucket's float
	// arithmetic per admission (BenchmarkAlgorithmAdmit: about 6 ns against
	// 35–40 on a 2-core machine), which shows when most requests are
	// admitted; choose it when matching x/time/rate's rounding does not
	// matter.
	GCRA
	// FixedWindow counts up to Events per window; windows are aligned to
	// multiples of Period since the Unix epoch. Burst is ignored. Up to
	// 2×Events can pass around a window boundary.
	FixedWindow
	// SlidingWindow is the sliding-window counter: the previous window's
	// count weighted by how much of it still overlaps the sliding period,
	// plus the current window's count, must stay within Events. Burst is
	// ignored. It assumes the previous window's requests were spread evenly.
	SlidingWindow
)

// String returns the algorithm's name.
func (a Algorithm) String() string {
	switch a {
	case TokenBucket:
		return "token-bucket"
	case GCRA:
		return "gcra"
	case FixedWindow:
		return "fixed-window"
	case SlidingWindow:
		return "sliding-window"
	}
	return fmt.Sprintf("Algorithm(%d)", int(a))
}

// state is one key's state; its meaning belongs to the algorithm.
type state struct{ a, b int64 }

// verdict is a decision without its Limit, in nanoseconds. Algorithms pass
// states and verdicts by value: a pointer passed through the interface would
// escape to the heap on every call.
type verdict struct {
	allowed                bool
	remaining              int64
	retryAfter, resetAfter int64
}

// algo is an algorithm bound to one Limit. Its methods are pure functions of
// their arguments, so the same state can be decided again lock-free.
type algo interface {
	// fresh is the state of a key never seen before, at now.
	fresh(now int64) state
	// decide charges cost at now if it fits and returns the new state. A
	// denial returns s unchanged; an admission always changes it.
	decide(s state, now, cost int64) (state, verdict)
	// idle reports whether s is whole again at now and so carries nothing.
	idle(s state, now int64) bool
	// refund gives cost back to s at now, never beyond whole.
	refund(s state, now, cost int64) (state, bool)
	// maxCost is the largest cost that can ever be admitted at once.
	maxCost() int64
}

func newAlgo(a Algorithm, l Limit) (algo, error) {
	switch a {
	case TokenBucket:
		rate := float64(l.Events) / l.Period.Seconds()
		return &tokenBucket{rate: rate, burst: float64(l.EffectiveBurst()), slack: 2 * rate / float64(time.Second)}, nil
	case GCRA:
		t := int64(l.Interval())
		return &gcra{interval: t, span: t * int64(l.EffectiveBurst()), burst: int64(l.EffectiveBurst())}, nil
	case FixedWindow:
		return &fixedWindow{period: int64(l.Period), events: int64(l.Events)}, nil
	case SlidingWindow:
		return &slidingWindow{period: int64(l.Period), events: int64(l.Events)}, nil
	}
	return nil, fmt.Errorf("core: unknown algorithm %d; use TokenBucket, GCRA, FixedWindow or SlidingWindow", int(a))
}

// ---- GCRA ----

// gcra keeps the theoretical arrival time (tat) in state.a: the instant at
// which the key's quota is whole again. Spending cost moves it interval×cost
// ahead; a request fits while tat stays within span of now.
type gcra struct {
	interval, span, burst int64
}

func (g *gcra) fresh(now int64) state { return state{a: now} }
func (g *gcra) maxCost() int64        { return g.burst }

func (g *gcra) decide(s state, now, cost int64) (state, verdict) {
	tat := max(s.a, now)
	next := tat + cost*g.interval
	if next-now <= g.span {
		return state{a: next}, verdict{allowed: true, remaining: (g.span - (next - now)) / g.interval, resetAfter: next - now}
	}
	return s, verdict{remaining: max(0, g.span-(tat-now)) / g.interval, retryAfter: next - now - g.span, resetAfter: tat - now}
}

func (g *gcra) idle(s state, now int64) bool { return s.a <= now }

func (g *gcra) refund(s state, now, cost int64) (state, bool) {
	if s.a <= now {
		return s, false
	}
	return state{a: max(now, s.a-cost*g.interval)}, true
}

// ---- token bucket ----

// tokenBucket mirrors x/time/rate: state.a holds the float64 bits of the
// token count at time state.b.
type tokenBucket struct {
	rate  float64 // events per second, as rate.Limit
	burst float64
	slack float64 // tokens refilled in 2 ns
}

func (tb *tokenBucket) fresh(now int64) state {
	return state{a: int64(math.Float64bits(tb.burst)), b: now}
}

func (tb *tokenBucket) maxCost() int64 { return int64(tb.burst) }

// tokensAt is x/time/rate's advance: the tokens s holds at now, capped at
// burst. A now before the last update adds nothing.
func (tb *tokenBucket) tokensAt(s state, now int64) float64 {
	tokens := math.Float64frombits(uint64(s.a))
	if now <= s.b {
		return tokens
	}
	tokens += time.Duration(now-s.b).Seconds() * tb.rate
	if tokens > tb.burst {
		tokens = tb.burst
	}
	return tokens
}

// fits is x/time/rate's admission test for n tokens out of tokens: what is
// left is non-negative, or the wait for the shortfall rounds to zero.
func (tb *tokenBucket) fits(tokens, n float64) bool {
	left := tokens - n
	if left >= 0 {
		return true
	}
	if -left > tb.slack {
		// More than two nanoseconds of refill short: the wait cannot
		// truncate to zero, so skip computing it.
		return false
	}
	return tb.duration(-left) <= 0
}

// duration is x/time/rate's durationFromTokens (truncating).
func (tb *tokenBucket) duration(tokens float64) time.Duration {
	d := tokens / tb.rate * float64(time.Second)
	if d > math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(d)
}

// waitFor is the shortest wait after now until s holds enough tokens for n
// to fit, searched from the float estimate so that the answer is exact in
// whole nanoseconds: n fits at the result and not one nanosecond earlier.
//
// "Fits" is x/time/rate's test, which admits once the wait for the shortfall
// truncates to 0 ns, up to a nanosecond before the ideal instant. ResetAfter
// uses the same test for a whole burst, so that it never lands a nanosecond
// past the whole second a client would expect.
func (tb *tokenBucket) waitFor(s state, now int64, n float64) int64 {
	tokens := tb.tokensAt(s, now)
	if tb.fits(tokens, n) {
		return 0
	}
	// Refill counts from the last update, which a backwards clock step can
	// leave ahead of now.
	// The truncated estimate is usually the answer: one check that n fits
	// then, one that it does not a nanosecond earlier.
	d := max(0, s.b-now) + int64((n-tokens)/tb.rate*float64(time.Second))
	if d < 1 {
		d = 1
	}
	if d > maxSpan {
		return maxSpan
	}
	for i := 0; i < 64 && !tb.fits(tb.tokensAt(s, now+d), n); i++ {
		d++
	}
	for i := 0; i < 64 && d > 1 && tb.fits(tb.tokensAt(s, now+d-1), n); i++ {
		d--
	}
	return d
}

// remaining is how many cost-1 requests fit, one after another, in tokens:
// the whole tokens, plus one when the fraction left is close enough to a
// token for x/time/rate's test to admit it.
func (tb *tokenBucket) remaining(tokens float64) int64 {
	n := floorCount(tokens)
	if float64(n) < tb.burst && tb.fits(tokens, float64(n+1)) {
		n++
	}
	return n
}

func (tb *tokenBucket) decide(s state, now, cost int64) (state, verdict) {
	tokens := tb.tokensAt(s, now)
	n := float64(cost)
	if tb.fits(tokens, n) {
		left := tokens - n
		ns := state{a: int64(math.Float64bits(left)), b: max(s.b, now)}
		return ns, verdict{allowed: true, remaining: tb.remaining(left), resetAfter: tb.waitFor(ns, now, tb.burst)}
	}
	return s, verdict{
		remaining:  tb.remaining(tokens),
		retryAfter: tb.waitFor(s, now, n),
		resetAfter: tb.waitFor(s, now, tb.burst),
	}
}

// idle reports whether a request of a whole burst would fit: the key is as
// good as new.
func (tb *tokenBucket) idle(s state, now int64) bool { return tb.fits(tb.tokensAt(s, now), tb.burst) }

func (tb *tokenBucket) refund(s state, now, cost int64) (state, bool) {
	tokens := min(tb.burst, tb.tokensAt(s, now)+float64(cost))
	return state{a: int64(math.Float64bits(tokens)), b: max(s.b, now)}, true
}

// floorCount turns a token count into whole requests, never negative.
func floorCount(tokens float64) int64 {
	if tokens <= 0 {
		return 0
	}
	return int64(tokens)
}

// ---- fixed window ----

// windowStart is the start of the period-long window holding now.
func windowStart(now, period int64) int64 {
	m := now % period
	if m < 0 {
		m += period
	}
	return now - m
}

// fixedWindow keeps the window start in state.a and its count in state.b.
type fixedWindow struct {
	period, events int64
}

func (fw *fixedWindow) fresh(now int64) state { return state{a: windowStart(now, fw.period)} }
func (fw *fixedWindow) maxCost() int64        { return fw.events }

// current returns the window that applies at now and its count. A state
// from a later window (the clock stepped back) stays in force.
func (fw *fixedWindow) current(s state, now int64) (start, count int64) {
	w := windowStart(now, fw.period)
	if s.a >= w {
		return s.a, s.b
	}
	return w, 0
}

func (fw *fixedWindow) decide(s state, now, cost int64) (state, verdict) {
	w, count := fw.current(s, now)
	end := w + fw.period
	if count+cost <= fw.events {
		return state{a: w, b: count + cost}, verdict{allowed: true, remaining: fw.events - count - cost, resetAfter: end - now}
	}
	return s, verdict{remaining: fw.events - count, retryAfter: end - now, resetAfter: end - now}
}

func (fw *fixedWindow) idle(s state, now int64) bool {
	_, count := fw.current(s, now)
	return count == 0
}

func (fw *fixedWindow) refund(s state, now, cost int64) (state, bool) {
	if w, count := fw.current(s, now); w == s.a && count > 0 {
		return state{a: w, b: max(0, count-cost)}, true
	}
	return s, false
}

// ---- sliding-window counter ----

// slidingWindow keeps the current window's start in state.a and, in state.b,
// the previous window's count in the high 32 bits and the current window's
// in the low 32 bits. At time t in window [w, w+P) the key has used
//
//	prev×(w+P−t)/P + cur
//
// and a request fits while that plus its cost stays within Events. Integer
// arithmetic (128-bit products) keeps every decision exact.
type slidingWindow struct {
	period, events int64
}

func (sw *slidingWindow) fresh(now int64) state { return state{a: windowStart(now, sw.period)} }
func (sw *slidingWindow) maxCost() int64        { return sw.events }

// counts returns the window in force at now, the counts of it and of the one
// before, and the instant within it that applies (now, or the window's start
// when the clock stepped back behind a stored window).
func (sw *slidingWindow) counts(s state, now int64) (w, prev, cur, at int64) {
	w = windowStart(now, sw.period)
	switch {
	case s.a >= w:
		w, prev, cur = s.a, s.b>>32, s.b&math.MaxUint32
	case s.a+sw.period == w:
		prev = s.b & math.MaxUint32
	}
	return w, prev, cur, max(now, w)
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
	w, prev, cur, at := sw.counts(s, now)
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

func (sw *slidingWindow) idle(s state, now int64) bool {
	_, prev, cur, _ := sw.counts(s, now)
	return prev == 0 && cur == 0
}

func (sw *slidingWindow) refund(s state, now, cost int64) (state, bool) {
	w, prev, cur, _ := sw.counts(s, now)
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
