package core

import (
	"math"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// table is the bounded store behind [Keyed]: per-key states in shards of
// golang-lru's simplelru, keyed by a 64-bit hash, with a hard bound on the
// keys held by the whole table (not by each shard), an index that finds the
// keys whose quota is whole again, one by rank that finds the key that
// loses least when the table is full (see index.go), and the deny cache's
// slots.
//
// Capacity is accounted in three places that always add up to it: keys held
// by the shards, capacity a shard has claimed but not used yet (its budget),
// and the shared pool. A shard claims capacity from the pool in chunks and
// gives back what it frees beyond two chunks, so inserting a key rarely
// touches a cache line other shards write. A key is refused room only when
// the pool and every budget are empty: the table holds capacity keys. From
// then on, freed room goes straight to the pool until an eighth of the
// capacity is free again, so that refusing a key costs one look at the pool,
// not a visit to every shard.
type table struct {
	shards   []shard
	mask     uint64
	full     FullPolicy
	capacity int
	chunk    int64
	tight    int64 // below this much free in the pool, the table is nearly full
	pool     *pool
}

// pool is the capacity no shard has claimed, alone on its cache lines.
// dry is set when a shard found the pool and every budget empty: the table
// is full, so shards give freed room straight back to the pool, where the
// next reserve finds it without visiting every shard. It clears once the
// table has room to spare again.
type pool struct {
	_    [64]byte
	free atomic.Int64
	_    [56]byte
	// dry is read on every release and written only when the table
	// fills or drains: a line of its own, apart from free's traffic.
	dry atomic.Bool
	_   [63]byte
}

// shard is one lock's worth of keys. The fields set once in New share a
// cache line that the lock-free deny path reads; the mutex and the fields
// written under it have a line of their own, so locking a shard does not
// evict that line from other cores' caches; the index by rank, which only
// the windows and warm-up use, has a third. 192 bytes: shards share no line.
type shard struct {
	slots    []slot
	slotMask uint64
	lru      *simplelru.LRU[uint64, state]
	share    int // the shard's even part of the capacity, a sizing hint
	idxCap   int // the most candidates the idle index holds
	_        [64 - 24 - 8 - 8 - 8 - 8]byte

	mu       sync.Mutex
	budget   atomic.Int64 // capacity claimed from the pool, not holding a key
	idle     index        // candidates for dropping, by idle instant
	examined int64        // keys looked at to find idle ones (tests read it)
	_        [64 - 8 - 8 - 32 - 8]byte

	// light: candidates for reuse by rank, for the algorithms whose rank
	// is not their idle instant (see index.go); written under mu.
	light index
	_     [64 - 32]byte
}

// shardsFor is how many shards a table of capacity keys gets by default:
// up to 64, but at least 64 keys' worth each, so that a small table is not
// cut into shards of a few keys.
func shardsFor(capacity int) int {
	n := 64
	for n > 1 && capacity/n < 64 {
		n /= 2
	}
	return n
}

func newTable(capacity, shards int, full FullPolicy, cache bool) table {
	if shards == 0 {
		shards = shardsFor(capacity)
	}
	for shards > 1 && shards > capacity {
		shards /= 2
	}
	share := (capacity + shards - 1) / shards
	t := table{
		shards:   make([]shard, shards),
		mask:     uint64(shards - 1),
		full:     full,
		capacity: capacity,
		chunk:    int64(max(1, min(64, share/16))),
		tight:    int64(capacity / 8),
		pool:     new(pool),
	}
	t.pool.free.Store(int64(capacity))
	for i := range t.shards {
		s := &t.shards[i]
		s.share = share
		s.idxCap = max(32, share/16)
		s.idle.floor = maxInstant
		s.light.floor = math.MinInt64 // built when first needed (see index.add)
		// The LRU's own bound is above any count the table allows, so that
		// it never evicts by itself: the table decides what leaves.
		s.lru, _ = simplelru.NewLRU[uint64, state](capacity+1, nil)
		if cache {
			n := slotsFor(share)
			s.slots = make([]slot, n)
			s.slotMask = uint64(n - 1)
		}
	}
	return t
}

// slot is the deny-cache slot for key hash h, which must belong to s.
func (s *shard) slot(h uint64) *slot { return &s.slots[(h>>32)&s.slotMask] }

// forget clears h's deny-cache slot: h's state changed or h left.
func (s *shard) forget(h uint64) {
	if s.slots != nil {
		s.slot(h).forget(h)
	}
}

// remove drops key h from s, with its deny-cache slot.
func (s *shard) remove(h uint64) {
	s.lru.Remove(h)
	s.forget(h)
}

// reserve claims room for one more key in s: from its budget, else a chunk
// from the pool, else what other shards have claimed and not used. It fails
// only when the table holds capacity keys.
func (t *table) reserve(s *shard) bool {
	if take(&s.budget, 1) == 1 {
		return true
	}
	dry := t.pool.dry.Load()
	n := t.chunk
	if dry {
		n = 1 // a full table keeps its free room where every shard finds it
	}
	if got := take(&t.pool.free, n); got > 0 {
		s.budget.Add(got - 1)
		return true
	}
	if dry {
		return false
	}
	for i := range t.shards {
		if o := &t.shards[i]; o != s {
			if got := take(&o.budget, 1<<62); got > 0 {
				s.budget.Add(got - 1)
				return true
			}
		}
	}
	t.pool.dry.Store(true)
	return false
}

// release returns room for n keys that s no longer holds; what s has
// claimed beyond two chunks goes back to the pool.
func (t *table) release(s *shard, n int) {
	if n == 0 {
		return
	}
	if t.pool.dry.Load() {
		if t.pool.free.Add(int64(n)) > t.tight {
			t.pool.dry.Store(false)
		}
		return
	}
	if b := s.budget.Add(int64(n)); b > 2*t.chunk {
		if got := take(&s.budget, b-t.chunk); got > 0 {
			t.pool.free.Add(got)
		}
	}
}

// take removes up to n from c, never below zero, and returns how much.
func take(c *atomic.Int64, n int64) int64 {
	for {
		v := c.Load()
		if v <= 0 {
			return 0
		}
		got := min(v, n)
		if c.CompareAndSwap(v, v-got) {
			return got
		}
	}
}

// makeRoom makes s ready to take a new key, called with s locked; p is
// the policy in force, whose algorithm tells idle keys. Keys whose quota is
// whole again are dropped first. Once s is half its share full, each
// arrival drops one from its old end; once the table is nearly full, each
// arrival drops every idle key of its shard, so that idle keys in one shard
// do not hold capacity that a shard without any needs. When the table is
// full, the idle index finds an idle key anywhere in s. Only when s holds
// none and the table is full does the policy apply: FullEvictLRU drops the
// least recently charged key; FullOverflow gives up the key of s that loses
// least, if it is spare, and otherwise refuses (the caller then uses the
// overflow state).
func (t *table) makeRoom(p *policy, s *shard, now int64) bool {
	alg := p.alg
	// The room of a key dropped here goes to the arriving key straight
	// away, without passing through the shard's budget or the pool: one
	// atomic round trip fewer per insertion under churn.
	dropped := 0
	swept := false // s holds no idle key
	if t.pool.free.Load() < t.tight {
		for n := t.sweep(p, s, now); n > 0; n = t.sweep(p, s, now) {
			dropped += n
		}
		swept = true
	} else if s.lru.Len() >= s.share/2 {
		dropped = t.dropOldIdle(alg, s, now, 1)
	}
	if dropped > 0 {
		t.release(s, dropped-1)
		return true
	}
	if t.reserve(s) {
		return true
	}
	if !swept {
		if n := t.sweep(p, s, now); n > 0 {
			t.release(s, n-1)
			return true
		}
	}
	if t.full == FullEvictLRU {
		return t.evictOldest(s)
	}
	return t.reuse(p, s, now)
}

// dropOldIdle drops up to n idle keys from the least recently charged end
// of s and returns how many it dropped.
func (t *table) dropOldIdle(alg algo, s *shard, now int64, n int) int {
	dropped := 0
	for dropped < n {
		h, st, ok := s.lru.GetOldest()
		if !ok {
			break
		}
		s.examined++
		if !alg.idle(st, now) {
			break
		}
		s.lru.RemoveOldest()
		s.forget(h)
		dropped++
	}
	return dropped
}

// evictOldest drops the least recently charged key to make room for a new
// one (FullEvictLRU). A shard holding nothing while the table is full takes
// room from another shard, whose lock it only tries: waiting for it while
// holding its own could deadlock.
func (t *table) evictOldest(s *shard) bool {
	if h, _, ok := s.lru.RemoveOldest(); ok {
		s.forget(h) // its room goes straight to the new key
		return true
	}
	for i := range t.shards {
		o := &t.shards[i]
		if o == s || !o.mu.TryLock() {
			continue
		}
		h, _, ok := o.lru.RemoveOldest()
		if ok {
			o.forget(h)
			t.release(o, 1)
		}
		o.mu.Unlock()
		if ok && t.reserve(s) {
			return true
		}
	}
	return false
}
