package redisstore

import (
	"math"
	"time"

	"github.com/floodgate/floodgate/core"
)

// A share's arithmetic (quota_fallback.go says when it decides): a GCRA
// for GCRA and the token bucket, whose admissions are the same, and a
// count per window for a fixed window.

// shareTerms are one share of a limit: a GCRA (which admits as the token
// bucket does) of interval and burst, or a fixed window of burst units per
// period.
type shareTerms struct {
	fixed    bool
	holders  int64
	interval int64 // ns per unit; 0 for a fixed window
	burst    int64 // units
	period   int64 // ns; a fixed window's
}

// termsOf returns the share of l among h holders (at least 1): a GCRA's
// interval h times l's (at most the longest span a script takes, so that
// a share's arithmetic never overflows), and l's burst (a fixed window's
// events) divided by h, at least 1.
func termsOf(l core.Limit, h int64) shareTerms {
	h = max(h, 1)
	if l.Algorithm == core.FixedWindow {
		return shareTerms{fixed: true, holders: h, burst: max(1, int64(l.Events)/h), period: int64(l.Period)}
	}
	interval := min(satMul(h, int64(l.Interval())), int64(maxSpan))
	return shareTerms{holders: h, interval: interval, burst: max(1, int64(l.EffectiveBurst())/h)}
}

// warm returns the share's state as the grant sent at the instant sent
// left it: rem units in the shared state, divided among the holders, and
// for a fixed window reset, the time left in the grant's window.
func (t shareTerms) warm(sent, rem, reset int64) share {
	s := share{terms: t}
	left := min(t.burst, max(rem, 0)/t.holders)
	if t.fixed {
		s.end, s.count = sent+reset, t.burst-left
		return s
	}
	s.tat = satAdd(sent, satMul(t.burst-left, t.interval))
	return s
}

// allow decides for cost units at now, and charges s if it admits.
func (s *share) allow(now, cost int64) core.Decision {
	d, next := s.decide(now, cost)
	if d.Allowed {
		*s = next
	}
	return d
}

// decide returns the decision for cost units at now and s as it would be
// once they were charged.
func (s share) decide(now, cost int64) (core.Decision, share) {
	t := &s.terms
	if t.fixed {
		if now >= s.end {
			s.end, s.count = (now/t.period+1)*t.period, 0
		}
		wait := time.Duration(s.end - now)
		if s.count+cost > t.burst {
			return core.Decision{Remaining: int(t.burst - s.count), RetryAfter: max(wait, 1), ResetAfter: wait}, s
		}
		s.count += cost
		return core.Decision{Allowed: true, Remaining: int(t.burst - s.count), ResetAfter: wait}, s
	}
	tol := satMul(t.burst, t.interval)
	tat := max(s.tat, now)
	next := satAdd(tat, satMul(cost, t.interval))
	if next-now > tol {
		return core.Decision{Remaining: int((tol - (tat - now)) / t.interval),
			RetryAfter: time.Duration(next - now - tol), ResetAfter: time.Duration(tat - now)}, s
	}
	s.tat = next
	return core.Decision{Allowed: true, Remaining: int((tol - (next - now)) / t.interval), ResetAfter: time.Duration(next - now)}, s
}

// allowAll decides for cost units at now under every share of ss, all or
// nothing, and names the layer as a core.Stack does: the refusing one that
// waits longest, or, admitted, the one with the least left.
func allowAll(ss []share, limits []core.Limit, now, cost int64) core.Decision {
	if len(ss) == 1 {
		d := ss[0].allow(now, cost)
		d.Limit = limits[0]
		return d
	}
	ds, nexts := make([]core.Decision, len(ss)), make([]share, len(ss))
	allowed := true
	for i := range ss {
		ds[i], nexts[i] = ss[i].decide(now, cost)
		allowed = allowed && ds[i].Allowed
	}
	pick := 0
	for i, d := range ds {
		switch {
		case allowed && d.Remaining < ds[pick].Remaining,
			!allowed && !d.Allowed && (ds[pick].Allowed || d.RetryAfter > ds[pick].RetryAfter):
			pick = i
		}
	}
	d := ds[pick]
	d.Limit = limits[pick]
	if allowed {
		copy(ss, nexts)
		return d
	}
	for _, o := range ds {
		if !o.Allowed {
			d.Remaining = min(d.Remaining, o.Remaining)
		}
	}
	return d
}

// refund gives back cost units at now, never beyond a whole share.
func (s *share) refund(now, cost int64) {
	if s.terms.fixed {
		if now < s.end {
			s.count = max(0, s.count-cost)
		}
		return
	}
	s.tat = max(s.tat-satMul(cost, s.terms.interval), now)
}

// whole is the instant s is whole again.
func (s *share) whole() int64 {
	if s.terms.fixed {
		if s.count == 0 {
			return 0
		}
		return s.end
	}
	return s.tat
}

// satMul is a×b for a, b ≥ 0, at most math.MaxInt64.
func satMul(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

// satAdd is a+b for b ≥ 0, at most math.MaxInt64.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
