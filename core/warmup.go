package core

import (
	"fmt"
	"math"
	"time"
)

// warmUp is Guava's SmoothWarmingUp, in nanoseconds where Guava counts
// microseconds, with Guava's formulas and its rounding (each wait truncated
// to a whole unit). state.a holds the float64 bits of the stored permits,
// state.b the next free instant. A key is admitted once its next free
// instant has come; the request then moves that instant on by the time its
// permits cost: stable per permit at or below the threshold, more above it,
// up to cold for the last permit of a full store. An idle key stores one
// permit per coolDown, up to max: it cools.
//
// Memory per key: the 16-byte state. A wait is at most cold × burst, which
// newWarmUp keeps within maxSpan.
type warmUp struct {
	stable, cold   float64 // ns per permit, warm and cold
	threshold, max float64 // stored permits
	slope          float64 // ns per permit, per stored permit above the threshold
	coolDown       float64 // ns per permit stored while idle
	burst          int64
}

func newWarmUp(l Limit) (*warmUp, error) {
	period, coldFactor := l.WarmUp, l.ColdFactor
	if coldFactor == 0 {
		coldFactor = DefaultColdFactor
	}
	w := &warmUp{burst: int64(l.EffectiveBurst())}
	w.stable = float64(l.Period) / float64(l.Events)
	w.cold = w.stable * coldFactor
	warm := float64(period)
	w.threshold = 0.5 * warm / w.stable
	w.max = w.threshold + 2*warm/(w.stable+w.cold)
	w.slope = (w.cold - w.stable) / (w.max - w.threshold)
	w.coolDown = warm / w.max
	if w.cold*float64(w.burst) > maxSpan {
		return nil, fmt.Errorf("core: WarmUp with limit %s and cold factor %v: a cold request of the whole burst would wait more than %v; lower the burst or the cold factor", l, coldFactor, time.Duration(maxSpan))
	}
	return w, nil
}

func (w *warmUp) fresh(now int64) state {
	return state{a: int64(math.Float64bits(w.max)), b: now}
}

func (w *warmUp) maxCost() int64 { return w.burst }

// permitsToTime is the time the permit stored above the threshold at
// position p costs. The conversion keeps the product rounded on its own:
// without it the compiler may fuse it with the sum (arm64, amd64 v3),
// and the Redis script, which rounds each operation, would differ.
func (w *warmUp) permitsToTime(p float64) float64 { return w.stable + float64(p*w.slope) }

// storedWait is Guava's storedPermitsToWaitTime: what taking n of stored
// permits costs, the part above the threshold as the trapezoid under the
// slope, the rest at the stable rate.
func (w *warmUp) storedWait(stored, n float64) int64 {
	var d int64
	if above := stored - w.threshold; above > 0 {
		take := min(above, n)
		length := w.permitsToTime(above) + w.permitsToTime(above-take)
		d = int64(take * length / 2)
		n -= take
	}
	return d + int64(w.stable*n)
}

func (w *warmUp) decide(s state, now, cost int64) (state, verdict) {
	next := s.b
	if next > now {
		return s, verdict{retryAfter: next - now, resetAfter: w.idleAt(s) - now}
	}
	// A store kept across SetLimit may exceed the new maximum.
	stored := min(w.max, math.Float64frombits(uint64(s.a)))
	if now > next {
		stored = min(w.max, stored+float64(now-next)/w.coolDown)
		next = now
	}
	n := float64(cost)
	spend := min(n, stored)
	next += w.storedWait(stored, spend) + int64((n-spend)*w.stable)
	ns := state{a: int64(math.Float64bits(stored - spend)), b: next}
	v := verdict{allowed: true, resetAfter: w.idleAt(ns) - now}
	if next <= now {
		v.remaining = 1
	}
	return ns, v
}

// idleAt is the first instant at which s has cooled back to a full store,
// the state of a key never seen: its next free instant, plus the time to
// store the permits it lacks, rounded up so that the store is full then.
func (w *warmUp) idleAt(s state) int64 {
	stored := math.Float64frombits(uint64(s.a))
	if stored >= w.max {
		return s.b
	}
	d := int64(math.Ceil((w.max - stored) * w.coolDown))
	for stored+float64(d)/w.coolDown < w.max {
		d++
	}
	return s.b + d
}

func (w *warmUp) idle(s state, now int64) bool { return now >= w.idleAt(s) }

// spare: the key's next free instant is at most half its burst's cold
// waits away, or one. Giving a key up hands back only that wait: a key
// seen afresh is cold, never faster than the key was.
func (w *warmUp) spare(s state, now int64) bool {
	return float64(s.b-now) <= float64(spareUnits(w.burst))*w.cold
}

// rank is the next free instant: the wait giving the key up would forgive.
func (w *warmUp) rank(s state) int64 { return s.b }

// refund moves the next free instant back by cost permits at the stable
// rate, never before now. Guava has no refund; this gives back what a
// request of cost would take on a warm key.
func (w *warmUp) refund(s state, now, cost int64) (state, bool) {
	if s.b <= now {
		return s, false
	}
	return state{a: s.a, b: max(now, s.b-int64(float64(cost)*w.stable))}, true
}
