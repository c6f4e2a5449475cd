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
	// bucket with the interval rounded up to a whole nanosecond.
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

// algo is an algorithm bound to one Limit. Its methods are pure functions of
// their arguments, so the same state can be decided again lock-free.
type algo interface {
	// fresh is the state of a key never seen before, at now.
	fresh(now int64) state
	// decide charges cost at now if it fits. It fills d (all but Limit)
	// and reports whether s changed; a denial never changes s.
	decide(s *state, now, cost int64, d *Decision) (changed bool)
	// idle reports whether s is whole again at now and so carries nothing.
	idle(s state, now int64) bool
	// refund gives cost back to s at now, never beyond whole.
	refund(s *state, now, cost int64) (changed bool)
	// maxCost is the largest cost that can ever be admitted at once.
	maxCost() int64
}

func newAlgo(a Algorithm, l Limit) (algo, error) {
	switch a {
	case TokenBucket:
		return &tokenBucket{
			rate:  float64(l.Events) / l.Period.Seconds(),
			burst: float64(l.EffectiveBurst()),
		}, nil
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

func (g *gcra) decide(s *state, now, cost int64, d *Decision) bool {
	tat := max(s.a, now)
	next := tat + cost*g.interval
	if next-now <= g.span {
		s.a = next
		d.Allowed = true
		d.Remaining = int((g.span - (next - now)) / g.interval)
		d.ResetAfter = time.Duration(next - now)
		d.RetryAfter = 0
		return true
	}
	d.Allowed = false
	d.Remaining = int(max(0, g.span-(tat-now)) / g.interval)
	d.ResetAfter = time.Duration(tat - now)
	d.RetryAfter = time.Duration(next - now - g.span)
	return false
}

func (g *gcra) idle(s state, now int64) bool { return s.a <= now }

func (g *gcra) refund(s *state, now, cost int64) bool {
	if s.a <= now {
		return false
	}
	s.a = max(now, s.a-cost*g.interval)
	return true
}

// ---- token bucket ----

// tokenBucket mirrors x/time/rate: state.a holds the float64 bits of the
// token count at time state.b.
type tokenBucket struct {
	rate  float64 // events per second, as rate.Limit
	burst float64
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
	return left >= 0 || tb.duration(-left) <= 0
}

// duration is x/time/rate's durationFromTokens (truncating).
func (tb *tokenBucket) duration(tokens float64) time.Duration {
	d := tokens / tb.rate * float64(time.Second)
	if d > math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(d)
}

// waitFor is the shortest wait after now until s holds enough tokens that
// want(tokens) is true, searched from the float estimate so that the answer
// is exact in whole nanoseconds: want holds at the result and not one
// nanosecond earlier.
func (tb *tokenBucket) waitFor(s state, now int64, shortfall float64, want func(float64) bool) time.Duration {
	if want(tb.tokensAt(s, now)) {
		return 0
	}
	// Refill counts from the last update, which a backwards clock step can
	// leave ahead of now.
	d := max(0, s.b-now) + int64(math.Ceil(shortfall/tb.rate*float64(time.Second)))
	if d < 1 {
		d = 1
	}
	if d > maxSpan {
		return maxSpan
	}
	for i := 0; i < 64 && !want(tb.tokensAt(s, now+d)); i++ {
		d++
	}
	for i := 0; i < 64 && d > 1 && want(tb.tokensAt(s, now+d-1)); i++ {
		d--
	}
	return time.Duration(d)
}

func (tb *tokenBucket) decide(s *state, now, cost int64, d *Decision) bool {
	tokens := tb.tokensAt(*s, now)
	n := float64(cost)
	if tb.fits(tokens, n) {
		left := tokens - n
		s.a = int64(math.Float64bits(left))
		s.b = max(s.b, now)
		d.Allowed = true
		d.Remaining = floorCount(left)
		d.RetryAfter = 0
		d.ResetAfter = tb.waitFor(*s, now, tb.burst-left, tb.whole)
		return true
	}
	d.Allowed = false
	d.Remaining = floorCount(tokens)
	d.RetryAfter = tb.waitFor(*s, now, n-tokens, func(t float64) bool { return tb.fits(t, n) })
	d.ResetAfter = tb.waitFor(*s, now, tb.burst-tokens, tb.whole)
	return false
}

func (tb *tokenBucket) whole(tokens float64) bool { return tokens >= tb.burst }

func (tb *tokenBucket) idle(s state, now int64) bool { return tb.tokensAt(s, now) >= tb.burst }

func (tb *tokenBucket) refund(s *state, now, cost int64) bool {
	tokens := min(tb.burst, tb.tokensAt(*s, now)+float64(cost))
	s.a = int64(math.Float64bits(tokens))
	s.b = max(s.b, now)
	return true
}

// floorCount turns a token count into whole requests, never negative.
func floorCount(tokens float64) int {
	if tokens <= 0 {
		return 0
	}
	return int(tokens)
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

func (fw *fixedWindow) decide(s *state, now, cost int64, d *Decision) bool {
	w, count := fw.current(*s, now)
	end := w + fw.period
	if count+cost <= fw.events {
		s.a, s.b = w, count+cost
		d.Allowed = true
		d.Remaining = int(fw.events - s.b)
		d.ResetAfter = time.Duration(end - now)
		d.RetryAfter = 0
		return true
	}
	d.Allowed = false
	d.Remaining = int(fw.events - count)
	d.ResetAfter = time.Duration(end - now)
	d.RetryAfter = time.Duration(end - now)
	return false
}

func (fw *fixedWindow) idle(s state, now int64) bool {
	_, count := fw.current(s, now)
	return count == 0
}

func (fw *fixedWindow) refund(s *state, now, cost int64) bool {
	if w, count := fw.current(*s, now); w == s.a && count > 0 {
		s.b = max(0, count-cost)
		return true
	}
	return false
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

func (sw *slidingWindow) decide(s *state, now, cost int64, d *Decision) bool {
	w, prev, cur, at := sw.counts(*s, now)
	left := w + sw.period - at
	used := sw.weighted(prev, left) + cur
	if used+cost <= sw.events {
		cur += cost
		s.a, s.b = w, prev<<32|cur
		d.Allowed = true
		d.Remaining = int(sw.events - used - cost)
		d.RetryAfter = 0
		d.ResetAfter = time.Duration(w + 2*sw.period - now)
		return true
	}
	d.Allowed = false
	d.Remaining = int(max(0, sw.events-used))
	var retryAt int64
	if cur+cost <= sw.events {
		// This window will do once the previous one weighs little enough.
		retryAt = w + sw.period - sw.longestLeft(sw.events-cur-cost, prev)
	} else {
		// Only the next window, once this one's count has faded enough.
		retryAt = w + 2*sw.period - sw.longestLeft(sw.events-cost, cur)
	}
	d.RetryAfter = time.Duration(retryAt - now)
	switch {
	case cur > 0:
		d.ResetAfter = time.Duration(w + 2*sw.period - now)
	case prev > 0:
		d.ResetAfter = time.Duration(w + sw.period - now)
	default:
		d.ResetAfter = 0
	}
	return false
}

func (sw *slidingWindow) idle(s state, now int64) bool {
	_, prev, cur, _ := sw.counts(s, now)
	return prev == 0 && cur == 0
}

func (sw *slidingWindow) refund(s *state, now, cost int64) bool {
	w, prev, cur, _ := sw.counts(*s, now)
	switch {
	case cur > 0:
		cur = max(0, cur-cost)
	case prev > 0:
		prev = max(0, prev-cost)
	default:
		return false
	}
	s.a, s.b = w, prev<<32|cur
	return true
}
