package core

import (
	"context"
	"fmt"
	"hash/maphash"
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
// again, the [FullPolicy] decides: by default, the key that loses least
// gives up its place if it has spent at most half its quota. A lock-free
// cache answers repeated denials of a key without taking the shard's lock:
// a denial never changes state, so the answer is the same the locked path
// would give.
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
	// rk is alg's rank when it is not alg's idle instant (the windows,
	// warm-up): a full table keeps a second index of keys by it. nil for
	// the others.
	rk ranker
	// keep says that a full table never gives up a key to make room
	// (Concurrency: a key holding nothing is idle, and one holding
	// units must keep them, or their leases would give back nothing).
	keep bool
}

// rank is the order in which a full table gives up p's keys, least first.
func (p *policy) rank(st state) int64 {
	if p.rk != nil {
		return p.rk.rank(st)
	}
	return p.alg.idleAt(st)
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
		p.rk, _ = p.alg.(ranker)
		p.keep = l.Algorithm == Concurrency
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
		var d Decision
		ruling{v: v, p: p, overflow: overflow}.fill(&d)
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
	r, err := k.decide(p, sh, h, now, int64(cost), false)
	if err != nil {
		return Decision{}, err
	}
	return r.decision(), nil
}
