package core

import (
	"context"
	"fmt"
	"hash/maphash"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
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
// again carry nothing and are dropped first; when every tracked key is still
// live, the [FullPolicy] decides. A lock-free cache answers repeated denials
// of a key without taking the shard's lock: a denial never changes state, so
// the answer is the same the locked path would give.
//
// A Keyed is safe for concurrent use. Make one with [New].
type Keyed struct {
	limit   Limit
	alg     algo
	clock   Clock // nil: the system clock, read without an interface call
	seed    maphash.Seed
	shards  []shard
	mask    uint64
	maxCost int64
	full    FullPolicy
	cache   bool

	overflowMu  sync.Mutex
	overflow    state
	overflowSet bool
}

// shard is one lock's worth of keys. The fields set once in New share a
// cache line that the lock-free deny path reads; the mutex, written by every
// locked decision, has a line of its own, so locking a shard does not evict
// that line from other cores' caches. 128 bytes: shards share no line.
type shard struct {
	slots    []slot
	slotMask uint64
	lru      *simplelru.LRU[uint64, state]
	capacity int
	_        [64 - 24 - 8 - 8 - 8]byte
	mu       sync.Mutex
	_        [64 - 8]byte
}

// slot caches one denied key: its hash, its state, the instant before which
// no request of any cost can be admitted, and the instant its quota is whole
// again. Readers use it as a seqlock; only the holder of the shard's lock
// writes it.
type slot struct {
	seq            atomic.Uint64
	hash           atomic.Uint64
	a, b           atomic.Int64
	until, resetAt atomic.Int64
}

var _ Limiter = (*Keyed)(nil)

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
	alg, err := newAlgo(o.algorithm, l)
	if err != nil {
		return nil, err
	}
	n := o.shards
	for n > 1 && n > o.capacity {
		n /= 2
	}
	k := &Keyed{
		limit:   l,
		alg:     alg,
		clock:   o.clock,
		seed:    maphash.MakeSeed(),
		shards:  make([]shard, n),
		mask:    uint64(n - 1),
		maxCost: alg.maxCost(),
		full:    o.full,
		cache:   o.denyCache,
	}
	if k.clock == SystemClock {
		k.clock = nil
	}
	per := o.capacity / n
	// The deny cache needs room for the keys being hammered at one time,
	// not for every key: a few percent of the table, at most 256 slots (12
	// KiB) a shard.
	slots := 8
	for slots < per/16 && slots < 256 {
		slots *= 2
	}
	for i := range k.shards {
		s := &k.shards[i]
		s.capacity = per
		// The LRU's own bound is one above ours so that it never evicts
		// by itself: this type decides what leaves.
		s.lru, _ = simplelru.NewLRU[uint64, state](per+1, nil)
		if k.cache {
			s.slots = make([]slot, slots)
			s.slotMask = uint64(slots - 1)
		}
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
	n := 0
	for i := range k.shards {
		s := &k.shards[i]
		s.mu.Lock()
		n += s.lru.Len()
		s.mu.Unlock()
	}
	return n
}

// Capacity returns the most keys k can track at once.
func (k *Keyed) Capacity() int { return k.shards[0].capacity * len(k.shards) }

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

// Allow decides whether key may spend cost units now and, if so, charges
// them. The context is not used: an in-memory decision never blocks.
func (k *Keyed) Allow(_ context.Context, key string, cost int) (Decision, error) {
	if cost < 1 || int64(cost) > k.maxCost {
		return Decision{}, k.checkCost(cost)
	}
	h := maphash.String(k.seed, key)
	now := k.now()
	sh := &k.shards[h&k.mask]
	if k.cache && cost == 1 {
		// The common repeat denial, answered here so that the Decision is
		// built straight into the result: until the cached instant nothing
		// fits, so nothing is left, and both waits end at fixed instants.
		if until, resetAt, ok := sh.slots[(h>>32)&sh.slotMask].loadWaits(h, now); ok {
			return Decision{Limit: k.limit, RetryAfter: time.Duration(until - now), ResetAfter: time.Duration(resetAt - now)}, nil
		}
	}
	return k.decide(sh, h, now, int64(cost)), nil
}

func (k *Keyed) decide(sh *shard, h uint64, now, cost int64) Decision {
	var sl *slot
	if k.cache {
		sl = &sh.slots[(h>>32)&sh.slotMask]
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
		if !sh.makeRoom(k.alg, k.full, now) {
			sh.mu.Unlock()
			return k.decideOverflow(now, cost)
		}
		st = k.alg.fresh(now)
	}
	ns, v := k.alg.decide(st, now, cost)
	if v.allowed {
		sh.lru.Add(h, ns)
		if sl != nil {
			sl.forget(h)
		}
	} else {
		if found {
			sh.lru.Get(h) // a key being denied is in use: keep it recent
		}
		if sl != nil {
			if one, ok := k.deniedOne(st, now, cost, v); ok {
				sl.store(h, st, now+one.retryAfter, now+one.resetAfter)
			}
		}
	}
	sh.mu.Unlock()
	return k.decision(v)
}

func (k *Keyed) decision(v verdict) Decision {
	return Decision{
		Allowed:    v.allowed,
		Limit:      k.limit,
		Remaining:  int(v.remaining),
		RetryAfter: time.Duration(v.retryAfter),
		ResetAfter: time.Duration(v.resetAfter),
	}
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

// makeRoom drops whole-again keys from the old end of the shard and reports
// whether a new key fits. With FullEvictLRU it always makes room. Once the
// shard is half full, each insertion checks a couple of its oldest keys, so
// idle keys are swept out over time without a background goroutine; below
// that, idle keys stay (they cost only memory the bound allows) so that a
// small set of keys does not churn in and out of the table.
func (s *shard) makeRoom(alg algo, full FullPolicy, now int64) bool {
	if s.lru.Len() >= s.capacity/2 {
		for i := 0; i < 2; i++ {
			_, old, ok := s.lru.GetOldest()
			if !ok || !alg.idle(old, now) {
				break
			}
			s.lru.RemoveOldest()
		}
	}
	if s.lru.Len() < s.capacity {
		return true
	}
	if full == FullEvictLRU {
		s.lru.RemoveOldest()
		return true
	}
	return false
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
	sh := &k.shards[h&k.mask]
	sh.mu.Lock()
	if st, ok := sh.lru.Peek(h); ok {
		if st, ok = k.alg.refund(st, now, int64(cost)); ok {
			sh.lru.Add(h, st)
			if k.cache {
				sh.slots[(h>>32)&sh.slotMask].forget(h)
			}
		}
	}
	sh.mu.Unlock()
	return nil
}

// loadWaits returns the cached instants for key hash h if they still hold
// at now.
func (s *slot) loadWaits(h uint64, now int64) (until, resetAt int64, ok bool) {
	seq := s.seq.Load()
	if seq&1 != 0 || s.hash.Load() != h {
		return 0, 0, false
	}
	until, resetAt = s.until.Load(), s.resetAt.Load()
	return until, resetAt, now < until && s.seq.Load() == seq
}

// load returns the cached state for key hash h if it still holds at now.
func (s *slot) load(h uint64, now int64) (st state, ok bool) {
	seq := s.seq.Load()
	if seq&1 != 0 || s.hash.Load() != h || now >= s.until.Load() {
		return state{}, false
	}
	st = state{a: s.a.Load(), b: s.b.Load()}
	return st, s.seq.Load() == seq
}

func (s *slot) store(h uint64, st state, until, resetAt int64) {
	s.seq.Add(1)
	s.hash.Store(h)
	s.a.Store(st.a)
	s.b.Store(st.b)
	s.until.Store(until)
	s.resetAt.Store(resetAt)
	s.seq.Add(1)
}

func (s *slot) forget(h uint64) {
	if s.hash.Load() == h {
		s.seq.Add(1)
		s.until.Store(math.MinInt64)
		s.seq.Add(1)
	}
}
