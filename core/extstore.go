package core

import (
	"math"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// extTable is the bounded store of the algorithms whose per-key state does
// not fit in the 16-byte state (SlidingLog, SlidingWindow with sub-windows):
// per-key logs in shards of golang-lru's simplelru, keyed by the 64-bit
// hash, beside the main table so that the other algorithms keep their
// compact states. A Keyed uses one or the other, never both.
//
// It keeps the main table's rules: the whole table holds at most capacity
// keys (one atomic count); keys whose quota is whole again are dropped
// first; when none can be dropped, the FullPolicy decides (FullOverflow:
// the key of the shard whose log counts least gives up its place if it is
// spare, else one shared overflow log; FullEvictLRU: the least recently
// charged key goes). There is no deny cache: every decision takes the
// shard's lock.
//
// Finding idle keys: each shard keeps every key in a min-heap by an instant
// no later than the key's idleAt (xlog.due). Admissions only move idleAt
// later and leave the heap alone; a refund that moves it earlier lowers the
// key's instant in the heap. An arrival pops the keys due by now: an idle
// key is dropped, a live one goes back down the heap at its true instant,
// which an admission since it was placed pays for. So every idle key of a
// shard is found at amortised O(log n) per operation, with one heap slot
// (8 bytes) per key.
//
// Finding the key that loses least: a bounded index by rank, the sum of the
// key's log (an upper bound of what it counts at any later instant), kept as
// the main table keeps its own (see reuse.go), from the first time the
// table is full on: about one byte per key.
type extTable struct {
	alg      *windowLog
	shards   []extShard
	mask     uint64
	full     FullPolicy
	capacity int64
	idxCap   int          // the most candidates a shard's index by rank holds
	held     atomic.Int64 // keys held by all the shards

	overflowMu sync.Mutex
	overflow   xlog
}

// extShard is one lock's worth of keys, padded to its own cache lines.
type extShard struct {
	mu    sync.Mutex
	lru   *simplelru.LRU[uint64, *xlog]
	heap  []*xlog // idle index: a min-heap by due
	light index   // candidates for reuse, by the sum of their logs
	// free is the log of the last key dropped, kept for the next new
	// key: under churn a key arrives for each one that leaves, and
	// taking its place then costs no allocation.
	free *xlog
	_    [128 - 8 - 8 - 24 - 32 - 8]byte
}

func newExtTable(alg *windowLog, capacity, shards int, full FullPolicy) *extTable {
	if shards == 0 {
		shards = shardsFor(capacity)
	}
	for shards > 1 && shards > capacity {
		shards /= 2
	}
	share := (capacity + shards - 1) / shards
	t := &extTable{
		alg:      alg,
		shards:   make([]extShard, shards),
		mask:     uint64(shards - 1),
		full:     full,
		capacity: int64(capacity),
		idxCap:   max(32, share/16),
	}
	for i := range t.shards {
		// As in the main table, the LRU never evicts by itself.
		t.shards[i].lru, _ = simplelru.NewLRU[uint64, *xlog](capacity+1, nil)
		// Built when first needed (see index.add).
		t.shards[i].light.floor = math.MinInt64
	}
	return t
}

func (t *extTable) len() int {
	n := 0
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		n += s.lru.Len()
		s.mu.Unlock()
	}
	return n
}

// allow decides cost for key hash h at now. The verdict's overflow result
// reports a decision against the overflow log.
func (t *extTable) allow(h uint64, now, cost int64) (verdict, bool) {
	s := &t.shards[h&t.mask]
	s.mu.Lock()
	x, ok := s.lru.Peek(h)
	if !ok {
		return t.insert(s, h, now, cost)
	}
	v := t.alg.decide(x, now, cost)
	if v.allowed {
		s.lru.Get(h) // recency: admissions count, denials do not
	}
	s.mu.Unlock()
	return v, false
}

// insert decides for a key s does not hold, called with s locked; it
// unlocks s.
func (t *extTable) insert(s *extShard, h uint64, now, cost int64) (verdict, bool) {
	if !t.makeRoom(s, now) {
		s.mu.Unlock()
		t.overflowMu.Lock()
		v := t.alg.decide(&t.overflow, now, cost)
		t.overflowMu.Unlock()
		return v, true
	}
	x := s.newLog(h)
	v := t.alg.decide(x, now, cost) // a fresh key fits any valid cost
	s.lru.Add(h, x)
	x.due = t.alg.idleAt(x)
	s.push(x)
	s.light.add(x.sum, h, t.idxCap)
	s.mu.Unlock()
	return v, false
}

// refund gives cost back to key hash h at now, if s holds it.
func (t *extTable) refund(h uint64, now, cost int64) {
	s := &t.shards[h&t.mask]
	s.mu.Lock()
	if x, ok := s.lru.Peek(h); ok && t.alg.refund(x, now, cost) {
		s.lru.Get(h) // a refund is a charge, as in the main table
		if at := t.alg.idleAt(x); at < x.due {
			x.due = at
			s.up(x.pos)
		}
		s.light.add(x.sum, h, t.idxCap)
	}
	s.mu.Unlock()
}

// makeRoom makes s ready to take a new key, called with s locked: it drops
// the idle keys of s that are due, then claims room from the table, then
// applies the FullPolicy (under FullOverflow, reuse).
func (t *extTable) makeRoom(s *extShard, now int64) bool {
	if dropped := t.sweep(s, now); dropped > 0 {
		// One key's room goes to the arriving key.
		t.held.Add(int64(1 - dropped))
		return true
	}
	for {
		n := t.held.Load()
		if n >= t.capacity {
			break
		}
		if t.held.CompareAndSwap(n, n+1) {
			return true
		}
	}
	if t.full == FullEvictLRU {
		return t.evictOldest(s)
	}
	return t.reuse(s, now)
}

// sweep drops the keys of s that are idle at now and returns how many.
func (t *extTable) sweep(s *extShard, now int64) int {
	dropped := 0
	for len(s.heap) > 0 && s.heap[0].due <= now {
		x := s.heap[0]
		if at := t.alg.idleAt(x); at > now {
			x.due = at
			s.down(0)
			continue
		}
		s.remove(x)
		dropped++
	}
	return dropped
}

// evictOldest drops the least recently charged key to make room
// (FullEvictLRU); a shard holding none takes room from another, whose lock
// it only tries, as the main table does.
func (t *extTable) evictOldest(s *extShard) bool {
	if _, x, ok := s.lru.GetOldest(); ok {
		s.remove(x)
		return true
	}
	for i := range t.shards {
		o := &t.shards[i]
		if o == s || !o.mu.TryLock() {
			continue
		}
		_, x, ok := o.lru.GetOldest()
		if ok {
			o.remove(x)
		}
		o.mu.Unlock()
		if ok {
			return true // o's room passes to s: the count of keys held stays
		}
	}
	return false
}

// remove drops x from s: from the LRU and from the idle index. s keeps x
// for the next new key.
func (s *extShard) remove(x *xlog) {
	s.free = x
	s.lru.Remove(x.h)
	last := len(s.heap) - 1
	i := x.pos
	if i != last {
		s.heap[i] = s.heap[last]
		s.heap[i].pos = i
	}
	s.heap[last] = nil
	s.heap = s.heap[:last]
	if i != last {
		s.down(i)
		s.up(i)
	}
}

// push adds x to the idle index.
func (s *extShard) push(x *xlog) {
	x.pos = len(s.heap)
	s.heap = append(s.heap, x)
	s.up(x.pos)
}

func (s *extShard) up(i int) {
	h := s.heap
	for i > 0 {
		p := (i - 1) / 2
		if h[p].due <= h[i].due {
			return
		}
		h[i], h[p] = h[p], h[i]
		h[i].pos, h[p].pos = i, p
		i = p
	}
}

func (s *extShard) down(i int) {
	h := s.heap
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if c+1 < len(h) && h[c+1].due < h[c].due {
			c++
		}
		if h[i].due <= h[c].due {
			return
		}
		h[i], h[c] = h[c], h[i]
		h[i].pos, h[c].pos = i, c
		i = c
	}
}
