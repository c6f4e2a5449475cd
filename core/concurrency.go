package core

import (
	"context"
	"hash/maphash"
	"math"
	"sync"
	"sync/atomic"
)

// concurrency counts units in flight: state.a is the units a key holds,
// state.b the generation of its state, a number no other state of the
// limiter has had. A Lease remembers the generation it was handed out
// under and gives its units back only to that state: a key evicted while
// in flight (FullEvictLRU) and tracked afresh is a new generation, which
// the old leases cannot drain.
//
// Memory per key: the 16-byte state. A key holding units is never idle,
// whatever the time; it becomes idle only when released, and the release
// indexes it (see Keyed.giveBack), so a key in flight is never indexed.
type concurrency struct {
	events, period int64
	// gen is the last generation handed out, shared by the policies one
	// limiter has had (SetLimit), so that no two states share one.
	gen *atomic.Int64
}

func (c *concurrency) fresh(int64) state { return state{b: c.gen.Add(1)} }
func (c *concurrency) maxCost() int64    { return c.events }

func (c *concurrency) decide(s state, _, cost int64) (state, verdict) {
	if held := s.a + cost; held <= c.events {
		return state{a: held, b: s.b}, verdict{allowed: true, remaining: c.events - held, resetAfter: c.period}
	}
	// A key may hold more than Events after SetLimit lowered it.
	return s, verdict{remaining: max(0, c.events-s.a), retryAfter: c.period, resetAfter: c.period}
}

func (c *concurrency) idleAt(s state) int64 {
	if s.a <= 0 {
		return math.MinInt64
	}
	return maxInstant
}

func (c *concurrency) idle(s state, _ int64) bool { return s.a <= 0 }

// spare is never true: a key holding nothing is idle and dropped as such,
// and one holding units must keep them for its leases to give them back.
func (c *concurrency) spare(state, int64) bool { return false }

func (c *concurrency) refund(s state, _, cost int64) (state, bool) {
	if s.a <= 0 {
		return s, false
	}
	return state{a: max(0, s.a-cost), b: s.b}, true
}

// acquire is Allow for a limiter that hands out leases: it decides under
// the shard's lock, with no deny cache, and hands an admission's units out
// in a Lease (a recycled record). cost has been checked against the policy
// Allow loaded; the policy in force under the lock decides.
func (k *Keyed) acquire(key string, cost int64) (Decision, error) {
	h := maphash.String(k.seed, key)
	now := k.now()
	if uint64(now) > maxNow {
		return Decision{}, clockError(now)
	}
	sh := &k.shards[h&k.mask]
	sh.mu.Lock()
	p := k.pol.Load()
	if cost > p.maxCost {
		sh.mu.Unlock()
		return Decision{}, p.checkCost(int(cost))
	}
	st, found := sh.lru.Peek(h)
	if !found {
		if !k.makeRoom(p, sh, now) {
			sh.mu.Unlock()
			return k.acquireOverflow(p, h, now, cost), nil
		}
		st = p.alg.fresh(now)
	}
	ns, v := p.alg.decide(st, now, cost)
	switch {
	case v.allowed:
		// Not indexed: a key in flight becomes idle only when released,
		// and giveBack indexes it then.
		sh.lru.Add(h, ns)
	case !found:
		k.release(sh, 1) // a fresh key fits any valid cost; kept for safety
	}
	sh.mu.Unlock()
	d := p.decision(v)
	if v.allowed {
		d.Lease = k.hold(h, ns.b, cost, false)
	}
	return d, nil
}

// acquireOverflow is acquire against the shared overflow state.
func (k *Keyed) acquireOverflow(p *policy, h uint64, now, cost int64) Decision {
	k.overflowMu.Lock()
	if !k.overflowSet {
		k.overflow, k.overflowSet = p.alg.fresh(now), true
	}
	var v verdict
	k.overflow, v = p.alg.decide(k.overflow, now, cost)
	gen := k.overflow.b
	k.overflowMu.Unlock()
	d := p.decision(v)
	d.Overflow = true
	if v.allowed {
		d.Lease = k.hold(h, gen, cost, true)
	}
	return d
}

// keyedHold is a Keyed's record of one admission (see [Holder]): the
// units it gave the state of key hash h, generation gen, or the overflow
// state. The records are recycled (keyedHolds), so that an admission
// allocates nothing.
type keyedHold struct {
	lease    atomic.Uint64 // the Lease's generation
	k        *Keyed
	h        uint64
	gen      int64
	units    int64
	overflow bool
}

var keyedHolds = sync.Pool{New: func() any { return new(keyedHold) }}

// hold returns the Lease of an admission that gave units to the state of
// hash h and generation gen (or to the overflow state).
func (k *Keyed) hold(h uint64, gen, units int64, overflow bool) Lease {
	r := keyedHolds.Get().(*keyedHold)
	r.k, r.h, r.gen, r.units, r.overflow = k, h, gen, units, overflow
	return Lease{h: r, gen: r.lease.Load()}
}

// EndLease gives the admission's units back, once: the record goes back
// to the pool only after its generation moved on.
func (r *keyedHold) EndLease(_ context.Context, gen uint64, _ Ending) error {
	if !r.lease.CompareAndSwap(gen, gen+1) {
		return nil
	}
	k, h, g, units, overflow := r.k, r.h, r.gen, r.units, r.overflow
	r.k = nil
	keyedHolds.Put(r)
	k.giveBack(h, g, units, overflow)
	return nil
}

// giveBack returns a lease's units to the state it was handed out under,
// if the limiter still holds that state: never below none held, and
// nothing to a key tracked afresh since (another generation).
func (k *Keyed) giveBack(h uint64, gen, units int64, overflow bool) {
	// A release gives back units whatever the limit: the policy in force
	// serves (SetLimit keeps the states and their generations).
	alg := k.pol.Load().alg
	if overflow {
		k.overflowMu.Lock()
		if k.overflow.b == gen {
			k.overflow, _ = alg.refund(k.overflow, 0, units)
		}
		k.overflowMu.Unlock()
		return
	}
	sh := &k.shards[h&k.mask]
	sh.mu.Lock()
	if st, ok := sh.lru.Peek(h); ok && st.b == gen {
		if st, ok = alg.refund(st, 0, units); ok {
			sh.lru.Add(h, st)
			if alg.idle(st, 0) {
				// Idle from now on: index it, at an instant no clock
				// reading precedes, so that the next sweep can drop it.
				sh.track(0, h)
			}
		}
	}
	sh.mu.Unlock()
}
