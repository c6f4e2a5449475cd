package rls

import (
	"context"
	"hash/maphash"
	"strings"
	"sync/atomic"
	"time"

	"github.com/floodgate/floodgate/core"
)

// LocalCacheEntryBytes is what one entry of the local cache
// (Config.LocalCacheBytes) is counted as: its slot in the table (16
// bytes), the refusal it holds (48 bytes) and a key of up to 64 bytes.
// A longer key takes more; the number of entries is fixed.
const LocalCacheEntryBytes = 128

// localCache remembers, in process, the keys a limiter refused a request
// of cost 1, and until when (the refusal's RetryAfter, counted from
// before the request asked the store, so that an entry never outlives
// the store's own answer). Until then, a request naming such a key is
// refused with no store asked: a key refused at cost 1 is refused at any
// cost. It is envoyproxy/ratelimit's local cache of over-limit keys
// (LOCAL_CACHE_SIZE_IN_BYTES).
//
// An entry holds the key and the limiter (the compiled rule) it was
// refused by, which a lookup must match: a reload that keeps a rule's
// limits keeps its limiter and so its entries; one that changes them
// leaves them unmatched.
//
// Units given back make a refused key admissible before its entry
// expires, so a refund ends the entries of its key (forget): this
// instance's refunds, that is the hits a request gives back
// (is_negative_hits), the checks given back (hits_addend 0) and the
// charges undone when a request is refused; a refund made by another
// instance does not reach this cache, which keeps refusing the key until
// the entry's end. A request that was decided before such a refund
// ended but stores its refusal after must not leave an entry: each slot
// keeps the instant of the last refund of its keys, and an entry of a
// request that began before it is dropped.
//
// It is a direct-mapped table: a key's entry may be overwritten by
// another key's, which costs that key a round trip. Lookups are one hash
// and one atomic load. It is safe for concurrent use.
type localCache struct {
	seed  maphash.Seed
	mask  uint64
	slots []cacheSlot
}

// cacheSlot is one slot of the table.
type cacheSlot struct {
	e atomic.Pointer[refusal]
	// refunded is the latest instant (Config.Clock, ns) a refund of a
	// key of this slot ended.
	refunded atomic.Int64
}

// refusal is one refused key: refused by c's limit layer until until,
// its quota whole again at resetAt (Config.Clock, ns).
type refusal struct {
	key            string
	c              *compiled
	layer          int
	until, resetAt int64
}

// newLocalCache returns a cache of bytes/LocalCacheEntryBytes entries,
// rounded down to a power of two (at least one).
func newLocalCache(bytes int) *localCache {
	n := 1
	for n*2 <= bytes/LocalCacheEntryBytes {
		n *= 2
	}
	return &localCache{seed: maphash.MakeSeed(), mask: uint64(n - 1), slots: make([]cacheSlot, n)}
}

func (lc *localCache) slot(key string) *cacheSlot {
	return &lc.slots[maphash.String(lc.seed, key)&lc.mask]
}

// lookup returns the refusal of key by c at now, if one is cached: no
// units left, and the waits that remain.
func (lc *localCache) lookup(key string, c *compiled, now int64) (core.Decision, bool) {
	e := lc.slot(key).e.Load()
	if e == nil || now >= e.until || e.c != c || e.key != key {
		return core.Decision{}, false
	}
	return core.Decision{
		Limit:      c.layer(e.layer),
		RetryAfter: time.Duration(e.until - now),
		ResetAfter: time.Duration(max(0, e.resetAt-now)),
	}, true
}

// store remembers that c refused key, in a request that began at start,
// with d (a refusal of cost 1).
func (lc *localCache) store(key string, c *compiled, d core.Decision, start int64) {
	layer := c.layerOf(d.Limit)
	if layer < 0 || d.RetryAfter <= 0 {
		return
	}
	s := lc.slot(key)
	e := &refusal{key: strings.Clone(key), c: c, layer: layer, until: start + int64(d.RetryAfter), resetAt: start + int64(d.ResetAfter)}
	s.e.Store(e)
	// A refund that ended after the request began may have come after
	// its refusal: then the entry may be stale. The refund's forget
	// stamps the slot before it looks for the entry, and the entry is
	// stored before the stamp is read here, so one of the two sees the
	// other (atomics are sequentially consistent).
	if s.refunded.Load() >= start {
		s.e.CompareAndSwap(e, nil)
	}
}

// forget ends key's entries: units of key were given back by a call
// that ended at now.
func (lc *localCache) forget(key string, now int64) {
	s := lc.slot(key)
	for {
		old := s.refunded.Load()
		if old >= now || s.refunded.CompareAndSwap(old, now) {
			break
		}
	}
	if e := s.e.Load(); e != nil && e.key == key {
		s.e.CompareAndSwap(e, nil)
	}
}

// layerOf is the index of l among c's limiter's limits, names aside (a stack's
// decision names an unnamed layer); -1 if it is none of them.
func (c *compiled) layerOf(l core.Limit) int {
	l.Name = ""
	for i := range c.limits {
		m := c.limits[i]
		m.Name = ""
		if m == l {
			return i
		}
	}
	return -1
}

// layer is c's limit i as its limiter's decisions name it: a stack names
// an unnamed layer by its rate.
func (c *compiled) layer(i int) core.Limit {
	l := c.texts[i].Limit
	if len(c.texts) > 1 && l.Name == "" {
		l.Name = core.DefaultName(l)
	}
	return l
}

// enforced reports whether it is an enforced descriptor (not in shadow
// mode): one that refuses the request as verdict says.
func enforced(it *item) bool { return !it.rule.Shadow }

// recall answers, from the local cache, the descriptors that take
// selects and a limiter would decide, whose keys are known to be
// refused: each is then decided, refused, with nothing left and the
// waits that remain, and no store is asked for it. It reports whether
// any descriptor take selects is so answered (by this call or an
// earlier one). With no cache, it does nothing.
func (s *Service) recall(items []item, take func(*item) bool) bool {
	if s.cache == nil {
		return false
	}
	var now int64
	read, hit := false, false
	for i := range items {
		it := &items[i]
		if !it.limited() || it.back || it.c == nil || !take(it) {
			continue
		}
		if !it.cached {
			if !read {
				now, read = s.c.Clock.Now(), true
			}
			d, ok := s.cache.lookup(it.key, it.c, now)
			if !ok {
				continue
			}
			it.decide(d)
			it.cached = true
		}
		hit = true
	}
	return hit
}

// observeCached tells the observer of the enforced descriptors the local
// cache refused: admitted is the request's fate.
func (s *Service) observeCached(ctx context.Context, items []item, admitted bool) {
	if s.cache == nil {
		return
	}
	for i := range items {
		if it := &items[i]; it.cached && enforced(it) {
			s.observe(ctx, it, admitted)
		}
	}
}

// remember keeps in the local cache the keys a limiter refused at cost 1
// in this request (which began at start), and ends the entries of the
// keys that may have been given units back since: hits given back
// (is_negative_hits), admissions left uncharged (a check given back, a
// charge undone, and, on several servers, a call one of them refused,
// whose other servers' charges the Multi refunded), and failures (a
// refund that may have been made).
func (s *Service) remember(items []item, start int64) {
	var end int64
	read := false
	for i := range items {
		it := &items[i]
		if !it.limited() || it.c == nil || it.cached {
			continue
		}
		switch {
		case it.back || it.err != nil || it.decided && it.d.Allowed && !it.charged:
			if !read { // after every refund of the request
				end, read = s.c.Clock.Now(), true
			}
			s.cache.forget(it.key, end)
		case it.decided && !it.d.Allowed && it.cost == 1:
			s.cache.store(it.key, it.c, it.d, start)
		}
	}
}
