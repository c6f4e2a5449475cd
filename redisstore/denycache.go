package redisstore

import (
	"hash/maphash"
	"sync/atomic"
	"time"

	"github.com/floodgate/floodgate/core"
)

// denyCache remembers, in process, keys the server refused a cost-1 request
// and until when: until then, cost-1 requests for the key are refused with
// no round trip. A Limiter owns its cache, and an entry holds the limit it
// was refused under, which a lookup must match: a Dynamic's key whose limit
// changed asks the server again.
//
// It is a direct-mapped table of immutable entries: a lookup is one hash and
// one atomic load, and a key's entry may be overwritten by another key's,
// which only costs that key a round trip.
//
// A refusal in flight while units are given back must not be kept: the
// server decided it before the refund. So each refund bumps refunds when it
// is done, and a refusal is kept only if no refund ended since its request
// set out (see since and keep).
type denyCache struct {
	seed    maphash.Seed
	mask    uint64
	slots   []atomic.Pointer[denied]
	refunds atomic.Uint64
}

// denied is one refused key: refused under pol (its limit and script
// arguments) until until, whole again at resetAt (local clock, ns), by a
// stack's layer (0 for one limit).
type denied struct {
	key            string
	pol            *policy
	until, resetAt int64
	layer          int64
}

func newDenyCache(size int) *denyCache {
	n := 1
	for n < size {
		n *= 2
	}
	return &denyCache{seed: maphash.MakeSeed(), mask: uint64(n - 1), slots: make([]atomic.Pointer[denied], n)}
}

func (c *denyCache) slot(key string) *atomic.Pointer[denied] {
	return &c.slots[maphash.String(c.seed, key)&c.mask]
}

// lookup returns the refusal for key under p at now if one is cached, and
// the layer that refused.
func (c *denyCache) lookup(key string, p *policy, now int64) (core.Decision, int64, bool) {
	e := c.slot(key).Load()
	if e == nil || now >= e.until || e.pol != p || e.key != key {
		return core.Decision{}, 0, false
	}
	return core.Decision{RetryAfter: time.Duration(e.until - now), ResetAfter: time.Duration(max(0, e.resetAt-now))}, e.layer, true
}

// since marks when a request sets out, for keep.
func (c *denyCache) since() uint64 { return c.refunds.Load() }

// keep remembers that key is refused under p until until, by layer, unless
// a refund ended since mark: the refusal may predate it. A refund that ends
// while the entry is being stored finds it and forgets it, or is seen by the
// check after the store, which takes the entry back.
func (c *denyCache) keep(mark uint64, key string, p *policy, until, resetAt, layer int64) {
	if c.refunds.Load() != mark {
		return
	}
	s := c.slot(key)
	e := &denied{key: key, pol: p, until: until, resetAt: resetAt, layer: layer}
	s.Store(e)
	if c.refunds.Load() != mark {
		s.CompareAndSwap(e, nil)
	}
}

// refunded forgets key once units given back for it reached the server,
// and makes refusals then in flight go unkept.
func (c *denyCache) refunded(key string) {
	c.refunds.Add(1)
	c.forget(key)
}

// forget drops key's entry: its quota changed here.
func (c *denyCache) forget(key string) {
	s := c.slot(key)
	if e := s.Load(); e != nil && e.key == key {
		s.CompareAndSwap(e, nil)
	}
}
