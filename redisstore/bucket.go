package redisstore

import (
	"fmt"
	"math"
	"time"

	"github.com/floodgate/floodgate/core"
)

// bucket is a token bucket limit's arithmetic, as core's tokenBucket does
// it, operation for operation (and as lua/tokenbucket.lua does): the
// script's admission alone answers with the tokens it left, and the
// remaining count and the reset are worked out here, where they cost a
// fraction of what they cost in Lua. The results are core's, bit for bit.
type bucket struct {
	rate      float64 // events per second
	burst     float64
	slack     float64 // tokens refilled in 2 ns
	reach     int64   // how far a search for a wait may reach, in ns
	overdraft bool
}

// newBucket returns l's bucket; overdraft is WithOverdraft.
func newBucket(l core.Limit, overdraft bool) *bucket {
	b := &bucket{rate: float64(l.Events) / l.Period.Seconds(), burst: float64(l.EffectiveBurst()), overdraft: overdraft}
	b.slack = 2 * b.rate / float64(time.Second)
	// A wait for the whole burst is at most its refill time plus float
	// rounding; searches may look a little further.
	fill := b.burst / b.rate * float64(time.Second)
	if overdraft {
		fill *= 2 // from a whole burst in debt
	}
	b.reach = int64(math.Ceil(fill+fill/8)) + int64(time.Millisecond)
	return b
}

// admitted turns an admission's reply {2, m, x} (the tokens left are
// m·2^x) into the reply the other algorithms give: {1, remaining, 0,
// reset}.
func (b *bucket) admitted(v vals) (vals, error) {
	if b == nil || v[2] < -1100 || v[2] > 1100 {
		return v, &core.StoreError{Op: "allow", Err: fmt.Errorf("redisstore: the script answered %d %d %d, which no token bucket admission answers", v[0], v[1], v[2])}
	}
	tk := math.Ldexp(float64(v[1]), int(v[2]))
	return vals{1, b.remaining(tk), 0, b.wait(tk)}, nil
}

// after is the tokens d ns after an update that left tk (core's
// tokensAt).
func (b *bucket) after(tk float64, d int64) float64 {
	if d > 0 {
		tk += float64(time.Duration(d).Seconds() * b.rate)
	}
	if tk > b.burst {
		tk = b.burst
	}
	return tk
}

// fits is x/time/rate's test (core's fits): what is left is not negative,
// or the wait for the shortfall truncates to zero nanoseconds.
func (b *bucket) fits(tk, n float64) bool {
	left := tk - n
	if left >= 0 {
		return true
	}
	return -left <= b.slack && -left/b.rate*float64(time.Second) < 1
}

// remaining is core's remaining: the cost-1 requests that fit in tk.
func (b *bucket) remaining(tk float64) int64 {
	var n int64
	if tk > 0 {
		n = int64(tk)
	}
	if b.overdraft {
		for b.fits(tk-float64(n), 0) {
			n++
		}
		return n
	}
	if float64(n) < b.burst && b.fits(tk, float64(n+1)) {
		n++
	}
	return n
}

// wait is the shortest wait until the whole burst fits in a bucket just
// updated to tk, exact in whole nanoseconds (core's waitFor).
func (b *bucket) wait(tk float64) int64 {
	have := b.after(tk, 0)
	if b.fits(have, b.burst) {
		return 0
	}
	limit := b.reach
	d := min(max(int64((b.burst-have)/b.rate*float64(time.Second)), 1), limit)
	for range 4 {
		if d > limit {
			break
		}
		if b.fits(b.after(tk, d), b.burst) {
			for range 4 {
				if d == 1 || !b.fits(b.after(tk, d-1), b.burst) {
					return d
				}
				d--
			}
			break
		}
		d++
	}
	// Bracket the wait by galloping from d, then bisect.
	d = min(d, limit)
	var lo, hi int64
	if b.fits(b.after(tk, d), b.burst) {
		hi = d
		for step := int64(2); ; step *= 2 {
			if lo = max(hi-step, 0); lo == 0 || !b.fits(b.after(tk, lo), b.burst) {
				break
			}
			hi = lo
		}
	} else {
		lo = d
		for step := int64(1); ; step *= 2 {
			if hi = min(lo+step, limit); hi == limit || b.fits(b.after(tk, hi), b.burst) {
				break
			}
			lo = hi
		}
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if b.fits(b.after(tk, mid), b.burst) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}
