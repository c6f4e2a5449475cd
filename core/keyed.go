package core

import (
	"context"
	"fmt"
	"hash/maphash"
	"sync"
	"time"
)

// Keyed is the in-memory keyed limiter: one Limit applied to each key
// separately, with per-key state in a bounded, sharded LRU table.
//
// Keys are hashed with a per-limiter seeded 64-bit hash and only the hash is
// stored, so memory per key is fixed whatever the key's length (about 120
// bytes). Two distinct keys share state only if their hashes collide: odds of
// about n²/2⁶⁵ among n live keys (3·10⁻⁸ at a million).
//
// The table never holds more than its capacity. Keys whose quota is whole
// again carry nothing and are dropped first, wherever they sit in the table;
// when the table holds its capacity and none of the new key's shard is whole
// again, the [FullPolicy] decides. A lock-free cache answers repeated denials
// of a key without taking the shard's lock: a denial never changes state, so
// the answer is the same the locked path would give.
//
// The clock must read between 0 and 2⁶²−1 ns since the Unix epoch (1970 to
// 2116); outside that range Allow and Refund return [ErrClockRange], so that
// no time arithmetic can overflow.
//
// A Keyed is safe for concurrent use. Make one with [New].
type Keyed struct {
	limit   Limit
	clock   Clock // nil: the system clock, read without an interface call
	seed    maphash.Seed
	maxCost int64
	// fastCost bounds the costs Allow decides on its fast path: maxCost,
	// or 0 for a limiter that hands out leases, whose every call thus
	// takes the slow path and the other algorithms pay nothing for it.
	fastCost int64
	leases   bool
	cache    bool
	table
	ext *extTable // non-nil: the algorithm keeps its state there, not in table

	overflowMu  sync.Mutex
	overflow    state
	overflowSet bool
}

var _ Limiter = (*Keyed)(nil)

// maxNow bounds the clock readings a Keyed accepts: with instants up to
// maxNow + 2×maxSpan < 2⁶³, no sum or difference of instants overflows.
const maxNow = 1<<62 - 1

// New returns an in-memory keyed limiter enforcing l per key. It fails, with a
// message saying what to fix, if l or an option is invalid.
func New(l Limit, opts ...Option) (*Keyed, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	alg, err := newAlgo(o.algorithm, l, &o)
	if err != nil {
		return nil, err
	}
	// A concurrency limiter has no deny cache: its refusals end when a
	// lease is released, at no instant the cache could hold.
	leases := o.algorithm == Concurrency
	cache := o.denyCache && !leases
	k := &Keyed{
		limit:  l,
		clock:  o.clock,
		seed:   maphash.MakeSeed(),
		leases: leases,
		cache:  cache,
	}
	if extended(o.algorithm, &o) {
		wl, err := newWindowLog(o.algorithm, l, &o)
		if err != nil {
			return nil, err
		}
		k.maxCost, k.cache = wl.maxCost(), false
		k.ext = newExtTable(wl, o.capacity, o.shards, o.full)
		k.table.capacity = o.capacity
	} else {
		k.maxCost = alg.maxCost()
		k.table = newTable(alg, o.capacity, o.shards, o.full, cache)
	}
	k.fastCost = k.maxCost
	if leases {
		k.fastCost = 0
	}
	if o.seed != nil {
		k.seed = *o.seed
	}
	if k.clock == SystemClock {
		k.clock = nil
	}
	return k, nil
}

// MustNew is like New but panics on error. It is meant for package-level
// limiters built from constant configuration.
func MustNew(l Limit, opts ...Option) *Keyed {
	k, err := New(l, opts...)
	if err != nil {
		panic(err)
	}
	return k
}

// Limit returns the limit k enforces.
func (k *Keyed) Limit() Limit { return k.limit }

// Len returns how many keys k tracks now (keys decided against the overflow
// state are not tracked).
func (k *Keyed) Len() int {
	if k.ext != nil {
		return k.ext.len()
	}
	n := 0
	for i := range k.shards {
		s := &k.shards[i]
		s.mu.Lock()
		n += s.lru.Len()
		s.mu.Unlock()
	}
	return n
}

// Capacity returns the most keys k can track at once: the capacity it was
// made with.
func (k *Keyed) Capacity() int { return k.capacity }

func (k *Keyed) now() int64 {
	if k.clock == nil {
		return systemNow()
	}
	return k.clock.Now()
}

func (k *Keyed) checkCost(cost int) error {
	if cost < 1 {
		return fmt.Errorf("%w: cost must be >= 1, got %d", ErrInvalidCost, cost)
	}
	if int64(cost) > k.maxCost {
		return fmt.Errorf("%w: cost %d, at most %d under %s", ErrCostTooLarge, cost, k.maxCost, k.limit)
	}
	return nil
}

func clockError(now int64) error {
	return fmt.Errorf("%w: the clock reads %d ns since the Unix epoch; the in-memory limiter accepts 0 to %d (1970 to 2116): check the Clock", ErrClockRange, now, int64(maxNow))
}

// Allow decides whether key may spend cost units now and, if so, charges
// them. The context is not used: an in-memory decision never blocks. Under
// [Concurrency] an admission carries the Lease that gives the units back.
func (k *Keyed) Allow(_ context.Context, key string, cost int) (Decision, error) {
	if cost < 1 || int64(cost) > k.fastCost {
		if k.leases && cost >= 1 && int64(cost) <= k.maxCost {
			return k.acquire(key, int64(cost))
		}
		return Decision{}, k.checkCost(cost)
	}
	h := maphash.String(k.seed, key)
	now := k.now()
	if uint64(now) > maxNow {
		return Decision{}, clockError(now)
	}
	if k.ext != nil {
		v, overflow := k.ext.allow(h, now, int64(cost))
		d := k.decision(v)
		d.Overflow = overflow
		return d, nil
	}
	sh := &k.shards[h&k.mask]
	if k.cache && cost == 1 {
		// The common repeat denial, answered here so that the Decision is
		// built straight into the result: until the cached instant nothing
		// fits, so nothing is left, and both waits end at fixed instants.
		if until, resetAt, ok := sh.slot(h).loadWaits(h, now); ok {
			return Decision{Limit: k.limit, RetryAfter: time.Duration(until - now), ResetAfter: time.Duration(resetAt - now)}, nil
		}
	}
	return k.decide(sh, h, now, int64(cost)), nil
}

func (k *Keyed) decide(sh *shard, h uint64, now, cost int64) Decision {
	var sl *slot
	if k.cache {
		sl = sh.slot(h)
		if cost > 1 {
			if st, ok := sl.load(h, now); ok {
				if _, v := k.alg.decide(st, now, cost); !v.allowed {
					return k.decision(v)
				}
			}
		}
	}
	sh.mu.Lock()
	st, found := sh.lru.Peek(h)
	if !found {
		return k.insert(sh, h, now, cost)
	}
	ns, v := k.alg.decide(st, now, cost)
	if v.allowed {
		sh.lru.Add(h, ns)
		if sl != nil {
			sl.forget(h)
		}
	} else if sl != nil {
		// A denial leaves the key's recency alone, as an answer from the
		// cache must: with or without the cache, FullEvictLRU then drops
		// the same key.
		if one, ok := k.deniedOne(st, now, cost, v); ok {
			sl.store(h, st, now+one.retryAfter, now+one.resetAfter)
		}
	}
	sh.mu.Unlock()
	return k.decision(v)
}

// insert decides for a key sh does not hold, called with sh locked; it
// unlocks sh.
func (k *Keyed) insert(sh *shard, h uint64, now, cost int64) Decision {
	if !k.makeRoom(sh, now) {
		sh.mu.Unlock()
		return k.decideOverflow(now, cost)
	}
	ns, v := k.alg.decide(k.alg.fresh(now), now, cost)
	if v.allowed {
		sh.lru.Add(h, ns)
		sh.track(now+v.resetAfter, h)
	} else {
		k.release(sh, 1) // a fresh key fits any valid cost; kept for safety
	}
	sh.mu.Unlock()
	return k.decision(v)
}

func (k *Keyed) decision(v verdict) Decision {
	d := Decision{
		Allowed:    v.allowed,
		Limit:      k.limit,
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
func (k *Keyed) deniedOne(st state, now, cost int64, v verdict) (verdict, bool) {
	if cost == 1 {
		return v, true
	}
	_, one := k.alg.decide(st, now, 1)
	return one, !one.allowed
}

func (k *Keyed) decideOverflow(now, cost int64) Decision {
	k.overflowMu.Lock()
	if !k.overflowSet {
		k.overflow, k.overflowSet = k.alg.fresh(now), true
	}
	var v verdict
	k.overflow, v = k.alg.decide(k.overflow, now, cost)
	k.overflowMu.Unlock()
	d := k.decision(v)
	d.Overflow = true
	return d
}

// Refund gives back cost units charged to key, never beyond a whole quota.
// A key that is no longer tracked has nothing to give back to.
func (k *Keyed) Refund(_ context.Context, key string, cost int) error {
	if err := k.checkCost(cost); err != nil {
		return err
	}
	h := maphash.String(k.seed, key)
	now := k.now()
	if uint64(now) > maxNow {
		return clockError(now)
	}
	if k.ext != nil {
		k.ext.refund(h, now, int64(cost))
		return nil
	}
	sh := &k.shards[h&k.mask]
	sh.mu.Lock()
	if st, ok := sh.lru.Peek(h); ok {
		if st, ok = k.alg.refund(st, now, int64(cost)); ok {
			sh.lru.Add(h, st)
			sh.forget(h)
			// The key may be idle earlier now: index its new instant.
			sh.track(max(k.alg.idleAt(st), now), h)
		}
	}
	sh.mu.Unlock()
	return nil
}
