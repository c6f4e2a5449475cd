package core

import "time"

// ruling is a verdict with the policy it was reached under and whether the
// overflow state reached it: what the locked path returns, six words that
// travel in registers, so that Allow builds the Decision (which holds the
// whole policy) once, in its own result.
type ruling struct {
	v        verdict
	p        *policy
	overflow bool
}

// decision is r as a Decision.
func (r ruling) decision() Decision {
	d := r.p.decision(r.v)
	d.Overflow = r.overflow
	return d
}

// fill writes r into d, a zero Decision, field by field: a Decision
// holds the whole policy, and writing it in place spares a copy of it.
func (r ruling) fill(d *Decision) {
	d.Allowed, d.Overflow = r.v.allowed, r.overflow
	d.Limit = r.p.limit
	d.Remaining, d.ResetAfter = int(r.v.remaining), time.Duration(r.v.resetAfter)
	if r.v.allowed {
		d.Delay = time.Duration(r.v.retryAfter)
	} else {
		d.RetryAfter = time.Duration(r.v.retryAfter)
	}
}

// decide decides for key hash h of shard sh under p, the policy loaded
// when the call began. moved says that a Dynamic limiter has already looked
// for the key in its other tables.
func (k *Keyed) decide(p *policy, sh *shard, h uint64, now, cost int64, moved bool) (ruling, error) {
	var sl *slot
	if k.cache {
		sl = sh.slot(h)
		if cost > 1 {
			if st, ok := sl.load(h, now); ok {
				if _, v := p.alg.decide(st, now, cost); !v.allowed {
					return ruling{v: v, p: p}, nil
				}
			}
		}
	}
	sh.mu.Lock()
	if q := k.pol.Load(); q != p {
		// SetLimit ran since p was loaded: decide under the new limit, so
		// that no denial of the old one is cached after SetLimit cleared
		// this shard's cache.
		if p = q; cost > p.maxCost {
			sh.mu.Unlock()
			return ruling{}, p.checkCost(int(cost))
		}
	}
	st, found := sh.lru.Peek(h)
	if !found {
		if k.dyn != nil && !moved {
			sh.mu.Unlock()
			return k.dyn.miss(k, sh, h, now, cost)
		}
		return k.insert(p, sh, h, now, cost, p.alg.fresh(now), false), nil
	}
	ns, v := p.alg.decide(st, now, cost)
	if v.allowed {
		sh.lru.Add(h, ns)
		if sl != nil {
			sl.forget(h)
		}
	} else if sl != nil {
		// A denial leaves the key's recency alone, as an answer from the
		// cache must: with or without the cache, FullEvictLRU then drops
		// the same key.
		if one, ok := p.deniedOne(st, now, cost, v); ok {
			sl.store(h, st, now+one.retryAfter, now+one.resetAfter)
		}
	}
	sh.mu.Unlock()
	return ruling{v: v, p: p}, nil
}

// insert decides for a key sh does not hold, from state st, called with sh
// locked; it unlocks sh. st is a fresh state, or the key's state carried
// over from another table (carried), which is kept even when denied.
func (k *Keyed) insert(p *policy, sh *shard, h uint64, now, cost int64, st state, carried bool) ruling {
	if !k.makeRoom(p, sh, now) {
		sh.mu.Unlock()
		return k.decideOverflow(p, now, cost)
	}
	ns, v := p.alg.decide(st, now, cost)
	switch {
	case v.allowed:
		sh.lru.Add(h, ns)
		sh.track(now+v.resetAfter, h)
		sh.rankIn(p, ns, h)
	case carried:
		sh.lru.Add(h, st)
		sh.track(max(p.alg.idleAt(st), now), h)
		sh.rankIn(p, st, h)
	default:
		k.release(sh, 1) // a fresh key fits any valid cost; kept for safety
	}
	sh.mu.Unlock()
	return ruling{v: v, p: p}
}

func (p *policy) decision(v verdict) Decision {
	d := Decision{
		Allowed:    v.allowed,
		Limit:      p.limit,
		Remaining:  int(v.remaining),
		ResetAfter: time.Duration(v.resetAfter),
	}
	if v.allowed {
		d.Delay = time.Duration(v.retryAfter)
	} else {
		d.RetryAfter = time.Duration(v.retryAfter)
	}
	return d
}

// deniedOne returns the verdict for cost 1 on st at now, if st denies it,
// given that st denied cost with verdict v. Its waits end at instants that
// do not move while st stands, which lets the deny cache answer later
// requests without the algorithm.
func (p *policy) deniedOne(st state, now, cost int64, v verdict) (verdict, bool) {
	if cost == 1 {
		return v, true
	}
	_, one := p.alg.decide(st, now, 1)
	return one, !one.allowed
}

func (k *Keyed) decideOverflow(p *policy, now, cost int64) ruling {
	k.overflowMu.Lock()
	if !k.overflowSet {
		k.overflow, k.overflowSet = p.alg.fresh(now), true
	}
	var v verdict
	k.overflow, v = p.alg.decide(k.overflow, now, cost)
	k.overflowMu.Unlock()
	return ruling{v: v, p: p, overflow: true}
}
