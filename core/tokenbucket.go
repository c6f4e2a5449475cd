package core

import (
	"math"
	"time"
)

// tokenBucket mirrors x/time/rate: state.a holds the float64 bits of the
// token count at time state.b.
//
// Memory per key: the 16-byte state.
type tokenBucket struct {
	rate      float64 // events per second, as rate.Limit
	burst     float64
	slack     float64 // tokens refilled in 2 ns
	overdraft bool    // WithOverdraft: admit any cost while not in debt
}

func (tb *tokenBucket) fresh(now int64) state {
	return state{a: int64(math.Float64bits(tb.burst)), b: now}
}

func (tb *tokenBucket) maxCost() int64 { return int64(tb.burst) }

// tokensAt is x/time/rate's advance: the tokens s holds at now, capped at
// burst. A now before the last update adds nothing, and the cap holds then
// too (a state kept across SetLimit may hold more than the new burst).
func (tb *tokenBucket) tokensAt(s state, now int64) float64 {
	tokens := math.Float64frombits(uint64(s.a))
	if now > s.b {
		// The conversion keeps the product rounded on its own (no fused
		// multiply-add on any platform), as the Redis scripts compute it.
		tokens += float64(time.Duration(now-s.b).Seconds() * tb.rate)
	}
	// Without refill, only a state kept across SetLimit to a smaller
	// burst holds more.
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
// to fit, exact in whole nanoseconds: n fits at the result and not one
// nanosecond earlier.
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
	// leave ahead of now. The truncated estimate is usually the answer: one
	// check that n fits then, one that it does not a nanosecond earlier.
	// Over long spans float64 rounding moves the answer by up to a few
	// hundred nanoseconds; a galloping search then brackets it and bisects.
	// A whole burst refills in at most maxSpan, give or take float64
	// rounding; the search stops at twice that, which the clock range keeps
	// clear of overflow.
	lead := max(0, s.b-now)
	limit := lead + 2*maxSpan
	d := lead + int64((n-tokens)/tb.rate*float64(time.Second))
	d = min(max(d, 1), limit)
	// The estimate is usually within a few nanoseconds of the answer (the
	// truncation, and x/time/rate's test admitting a nanosecond early): a
	// short scan each way, kept inline because a call per check costs more
	// than the arithmetic, settles it; anything further off is searched.
	fits := false
	for i := 0; i < 4 && d <= limit; i++ {
		if tb.fits(tb.tokensAt(s, now+d), n) {
			fits = true
			break
		}
		d++
	}
	if fits {
		for i := 0; i < 4; i++ {
			if d == 1 || !tb.fits(tb.tokensAt(s, now+d-1), n) {
				return d
			}
			d--
		}
	}
	return tb.search(s, now, min(d, limit), limit, n)
}

// search finds waitFor's answer when the estimate d is off: it gallops
// from d to bracket the answer, then bisects. limit bounds the wait.
func (tb *tokenBucket) search(s state, now, d, limit int64, n float64) int64 {
	var lo, hi int64 // n does not fit after lo, and fits after hi
	if tb.fitsAfter(s, now, d, n) {
		hi = d
		for step := int64(2); ; step *= 2 {
			if lo = max(hi-step, 0); lo == 0 || !tb.fitsAfter(s, now, lo, n) {
				break
			}
			hi = lo
		}
	} else {
		lo = d
		for step := int64(1); ; step *= 2 {
			if hi = min(lo+step, limit); hi == limit || tb.fitsAfter(s, now, hi, n) {
				break
			}
			lo = hi
		}
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if tb.fitsAfter(s, now, mid, n) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// fitsAfter reports whether n fits in s after waiting d from now.
func (tb *tokenBucket) fitsAfter(s state, now, d int64, n float64) bool {
	return tb.fits(tb.tokensAt(s, now+d), n)
}

// remaining is how many cost-1 requests fit, one after another, in tokens:
// the whole tokens, plus one when the fraction left is close enough to a
// token for x/time/rate's test to admit it.
//
// With overdraft, a request goes through while the bucket is not in debt,
// whatever it leaves: the whole tokens, and one more into debt.
func (tb *tokenBucket) remaining(tokens float64) int64 {
	n := floorCount(tokens)
	if tb.overdraft {
		for tb.fits(tokens-float64(n), 0) {
			n++
		}
		return n
	}
	if float64(n) < tb.burst && tb.fits(tokens, float64(n+1)) {
		n++
	}
	return n
}

func (tb *tokenBucket) decide(s state, now, cost int64) (state, verdict) {
	tokens := tb.tokensAt(s, now)
	n := float64(cost)
	need := n // what must be there for the request to go
	if tb.overdraft {
		need = 0 // not in debt; a refusal waits for the debt alone
	}
	if tb.fits(tokens, need) {
		left := tokens - n
		ns := state{a: int64(math.Float64bits(left)), b: max(s.b, now)}
		return ns, verdict{allowed: true, remaining: tb.remaining(left), resetAfter: tb.waitFor(ns, now, tb.burst)}
	}
	return s, verdict{
		remaining:  tb.remaining(tokens),
		retryAfter: tb.waitFor(s, now, need),
		resetAfter: tb.waitFor(s, now, tb.burst),
	}
}

// idleAt is when a request of a whole burst fits: the key is as good as new.
// Before its last update (state.b) the bucket gains nothing, so a state not
// idle then is not idle earlier either.
func (tb *tokenBucket) idleAt(s state) int64 {
	if tb.fits(math.Float64frombits(uint64(s.a)), tb.burst) {
		return math.MinInt64
	}
	return s.b + tb.waitFor(s, s.b, tb.burst)
}

// idle reports whether a request of a whole burst would fit at now.
func (tb *tokenBucket) idle(s state, now int64) bool { return tb.fits(tb.tokensAt(s, now), tb.burst) }

// spare: the bucket lacks at most half its burst, or one token.
func (tb *tokenBucket) spare(s state, now int64) bool {
	return tb.burst-tb.tokensAt(s, now) <= float64(spareUnits(int64(tb.burst)))
}

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
