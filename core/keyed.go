package core

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"sync"
	"sync/atomic"
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
	pol    atomic.Pointer[policy] // the limit in force and its algorithm
	clock  Clock                  // nil: the system clock, read without an interface call
	seed   maphash.Seed
	leases bool // the algorithm is Concurrency: admissions carry a Lease
	cache  bool
	table
	ext *extTable // non-nil: the algorithm keeps its state there, not in table

	setMu sync.Mutex // serialises SetLimit
	dyn   *Dynamic   // the Dynamic limiter k is one table of, or nil

	overflowMu  sync.Mutex
	overflow    state
	overflowSet bool
}

// policy is a Limit bound to its algorithm: what a Keyed enforces, swapped
// as a whole by SetLimit, so that a decision reads a limit and its
// algorithm that belong together.
type policy struct {
	limit   Limit
	alg     algo // nil for the extended algorithms (see wl)
	maxCost int64
	// fastCost bounds the costs Allow decides on its fast path: maxCost,
	// or 0 for a limiter that hands out leases, whose every call thus
	// takes the slow path and the other algorithms pay nothing for it.
	fastCost int64
	wl       *windowLog // the extended algorithms' (SlidingLog, sub-windows), or nil
}

func newPolicy(l Limit) (*policy, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	p := &policy{limit: l}
	var err error
	if l.extended() {
		if p.wl, err = newWindowLog(l); err != nil {
			return nil, err
		}
		p.maxCost = p.wl.maxCost()
	} else {
		if p.alg, err = newAlgo(l); err != nil {
			return nil, err
		}
		p.maxCost = p.alg.maxCost()
	}
	p.fastCost = p.maxCost
	if l.Algorithm == Concurrency {
		p.fastCost = 0
	}
	return p, nil
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
	if o.maxLimits != 0 {
		return nil, fmt.Errorf("core: WithMaxLimits(%d) applies to NewDynamic only", o.maxLimits)
	}
	return newKeyed(l, &o)
}

// newKeyed is New after the options are checked.
func newKeyed(l Limit, o *options) (*Keyed, error) {
	p, err := newPolicy(l)
	if err != nil {
		return nil, err
	}
	// A concurrency limiter has no deny cache: its refusals end when a
	// lease is released, at no instant the cache could hold.
	leases := l.Algorithm == Concurrency
	k := &Keyed{
		clock:  o.clock,
		seed:   maphash.MakeSeed(),
		leases: leases,
		cache:  o.denyCache && !leases,
	}
	if p.wl != nil {
		k.cache = false
		k.ext = newExtTable(p.wl, o.capacity, o.shards, o.full)
		k.table.capacity = o.capacity
	} else {
		k.table = newTable(o.capacity, o.shards, o.full, k.cache)
	}
	k.pol.Store(p)
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
func (k *Keyed) Limit() Limit { return k.pol.Load().limit }

// SetLimit makes k enforce l from now on, keeping every key's state: no key
// gets a fresh quota, and none loses what it has spent. It fails, changing
// nothing, if l is invalid, exactly as [New] would, or names another
// algorithm.
//
// The change is atomic: a decision is made under the old limit or the new
// one, never a mix, and once SetLimit returns every decision is made under
// l (decisions under way meanwhile may finish under the old one). Denials
// cached under the old limit are dropped.
//
// A key's state is read under the new limit as follows; an arrival under
// the new limit then proceeds from it as the algorithm always does.
//
//   - TokenBucket: the tokens the key held at its last update are kept, capped
//     at the new burst, and refill at the new rate from that update on. Raising
//     the burst adds no tokens at once: the key fills up to it at the new rate.
//   - GCRA and LeakyBucket: the key's theoretical arrival instant (when its
//     quota is whole again; the instant its line drains) is kept. The time the
//     key owes is kept, so what it may spend now is that debt read at the new
//     interval and burst: a key whole again stays whole, a key in debt beyond
//     the new burst is refused until the debt is within it.
//   - FixedWindow: the count of the stored window is kept while the window of
//     the new period that holds the stored window's start is current; a count
//     above the new Events is refused until the window ends (Remaining 0).
//     With the same period, that is simply: the count is kept for the window.
//   - SlidingWindow: as FixedWindow, for both counts: a stored window counts
//     as the window of the new period holding its start, so its counts are the
//     current and previous ones while that window is current, and its current
//     count becomes the previous one in the window after.
//   - WarmUp: the stored permits (capped at the new maximum) and the next free
//     instant are kept.
//   - Concurrency: the units each key has in flight are kept, and their
//     leases give them back as before; a key holding more than the new
//     Events is refused (Remaining 0) until enough are released.
//
// SetLimit cannot change the algorithm: the keys' state belongs to it.
// SlidingLog and SlidingWindow with sub-windows keep logs sized for
// their limit: SetLimit on such a limiter fails with [ErrSetLimitUnsupported],
// changing nothing.
//
// The overflow state (FullOverflow) carries over the same way. Keys keep
// their place in the table; the first time the table looks for keys to drop
// after a change, each shard is scanned once to index its keys' idle
// instants under the new limit.
func (k *Keyed) SetLimit(l Limit) error {
	if k.ext != nil {
		return fmt.Errorf("%w: %v keeps per-key logs sized for its limit; make a new limiter for %s", ErrSetLimitUnsupported, algorithmName(k.Limit()), l)
	}
	if old := k.Limit().Algorithm; l.Algorithm != old {
		return fmt.Errorf("%w: the limiter's keys hold %v state, which %v cannot read; make a new limiter for %s", ErrSetLimitUnsupported, old, l.Algorithm, l)
	}
	p, err := newPolicy(l)
	if err != nil {
		return err
	}
	k.setMu.Lock()
	defer k.setMu.Unlock()
	if c, ok := p.alg.(*concurrency); ok {
		// Leases name generations of the old policy's counter: keep
		// counting from it, so that no new state takes an old one's.
		c.gen = k.pol.Load().alg.(*concurrency).gen
	}
	k.pol.Store(p)
	// A decision that loaded the old policy before the store above checks
	// it again under its shard's lock (see decide), so once a shard has
	// been through here, nothing caches a denial of the old limit in it.
	for i := range k.shards {
		s := &k.shards[i]
		s.mu.Lock()
		for j := range s.slots {
			s.slots[j].clear()
		}
		s.floor = math.MinInt64 // idle instants are the old limit's: rescan
		s.mu.Unlock()
	}
	return nil
}

// ErrSetLimitUnsupported is wrapped by the error [Keyed.SetLimit] returns
// for an algorithm whose per-key state cannot be read under another limit
// (SlidingLog, SlidingWindow with sub-windows), and by the error
// [NewDynamic] returns for an algorithm it cannot move between limits.
var ErrSetLimitUnsupported = errors.New("core: the limit cannot change under this algorithm")

// algorithmName names l's algorithm in errors, with its sub-windows.
func algorithmName(l Limit) string {
	if l.Algorithm == SlidingWindow && l.SubWindows != 0 {
		return fmt.Sprintf("%v with %d sub-windows", l.Algorithm, l.SubWindows)
	}
	return l.Algorithm.String()
}

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

func (p *policy) checkCost(cost int) error {
	if cost < 1 {
		return fmt.Errorf("%w: cost must be >= 1, got %d", ErrInvalidCost, cost)
	}
	if int64(cost) > p.maxCost {
		return fmt.Errorf("%w: cost %d, at most %d under %s", ErrCostTooLarge, cost, p.maxCost, p.limit)
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
	p := k.pol.Load()
	if cost < 1 || int64(cost) > p.fastCost {
		if k.leases && cost >= 1 && int64(cost) <= p.maxCost {
			return k.acquire(key, int64(cost))
		}
		return Decision{}, p.checkCost(cost)
	}
	h := maphash.String(k.seed, key)
	now := k.now()
	if uint64(now) > maxNow {
		return Decision{}, clockError(now)
	}
	if k.ext != nil {
		v, overflow := k.ext.allow(h, now, int64(cost))
		d := p.decision(v)
		d.Overflow = overflow
		return d, nil
	}
	sh := &k.shards[h&k.mask]
	if k.cache && cost == 1 {
		// The common repeat denial, answered here so that the Decision is
		// built straight into the result: until the cached instant nothing
		// fits, so nothing is left, and both waits end at fixed instants.
		if until, resetAt, ok := sh.slot(h).loadWaits(h, now); ok {
			return Decision{Limit: p.limit, RetryAfter: time.Duration(until - now), ResetAfter: time.Duration(resetAt - now)}, nil
		}
	}
	return k.decide(p, sh, h, now, int64(cost), false)
}

// decide decides for key hash h of shard sh under p, the policy loaded
// when the call began. moved says that a Dynamic limiter has already looked
// for the key in its other tables.
func (k *Keyed) decide(p *policy, sh *shard, h uint64, now, cost int64, moved bool) (Decision, error) {
	var sl *slot
	if k.cache {
		sl = sh.slot(h)
		if cost > 1 {
			if st, ok := sl.load(h, now); ok {
				if _, v := p.alg.decide(st, now, cost); !v.allowed {
					return p.decision(v), nil
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
			return Decision{}, p.checkCost(int(cost))
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
	return p.decision(v), nil
}

// insert decides for a key sh does not hold, from state st, called with sh
// locked; it unlocks sh. st is a fresh state, or the key's state carried
// over from another table (carried), which is kept even when denied.
func (k *Keyed) insert(p *policy, sh *shard, h uint64, now, cost int64, st state, carried bool) Decision {
	if !k.makeRoom(p.alg, sh, now) {
		sh.mu.Unlock()
		return k.decideOverflow(p, now, cost)
	}
	ns, v := p.alg.decide(st, now, cost)
	switch {
	case v.allowed:
		sh.lru.Add(h, ns)
		sh.track(now+v.resetAfter, h)
	case carried:
		sh.lru.Add(h, st)
		sh.track(max(p.alg.idleAt(st), now), h)
	default:
		k.release(sh, 1) // a fresh key fits any valid cost; kept for safety
	}
	sh.mu.Unlock()
	return p.decision(v)
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

func (k *Keyed) decideOverflow(p *policy, now, cost int64) Decision {
	k.overflowMu.Lock()
	if !k.overflowSet {
		k.overflow, k.overflowSet = p.alg.fresh(now), true
	}
	var v verdict
	k.overflow, v = p.alg.decide(k.overflow, now, cost)
	k.overflowMu.Unlock()
	d := p.decision(v)
	d.Overflow = true
	return d
}

// Refund gives back cost units charged to key, never beyond a whole quota.
// A key that is no longer tracked has nothing to give back to.
func (k *Keyed) Refund(_ context.Context, key string, cost int) error {
	if err := k.pol.Load().checkCost(cost); err != nil {
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
	if _, ok := sh.lru.Peek(h); !ok && k.dyn != nil {
		sh.mu.Unlock()
		k.dyn.carry(k, sh, h, now)
		sh.mu.Lock()
	}
	k.refundLocked(sh, h, now, int64(cost))
	sh.mu.Unlock()
	return nil
}

// refundLocked gives cost back to key hash h of sh, called with sh locked.
func (k *Keyed) refundLocked(sh *shard, h uint64, now, cost int64) {
	p := k.pol.Load()
	if st, ok := sh.lru.Peek(h); ok {
		if st, ok = p.alg.refund(st, now, cost); ok {
			sh.lru.Add(h, st)
			sh.forget(h)
			// The key may be idle earlier now: index its new instant.
			sh.track(max(p.alg.idleAt(st), now), h)
		}
	}
}
