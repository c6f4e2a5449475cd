package fields

import (
	"sync/atomic"

	"github.com/floodgate/floodgate/core"
)

// maxCached bounds a Cache. A limiter sees one Limit, or a handful with
// stacked or per-route limits; a limiter that made up a new Limit per
// decision would otherwise grow the cache without end.
const maxCached = 16

// Cache maps a Limit to what a transport formats once for it (its
// PolicyText, a problem+json body, gRPC status details). It is a
// copy-on-write slice behind an atomic pointer: a hit is one load and a
// short scan, with no lock and no allocation. The zero Cache is not usable;
// make one with NewCache.
//
// Past maxCached limits, the last one missed is kept alone in a slot of
// its own, replaced on every miss. An adaptive limit (overload.Adaptive)
// reports a new Limit each time its limit moves; once its first values
// have filled the list, the slot holds the current one, so its requests
// still format nothing until the limit moves again. Limits that
// alternate past the bound pay what they did without the slot, a build
// per miss, plus the slot's entry.
type Cache[T any] struct {
	list   atomic.Pointer[[]cached[T]]
	recent atomic.Pointer[cached[T]]
	make   func(core.Limit) *T
}

type cached[T any] struct {
	limit core.Limit
	v     *T
}

// NewCache returns a Cache that builds missing entries with make.
func NewCache[T any](make func(core.Limit) *T) *Cache[T] {
	return &Cache[T]{make: make}
}

// Get returns l's entry, building it on a miss. When the list is full it
// keeps the entry in the recent slot instead.
func (c *Cache[T]) Get(l core.Limit) *T {
	if ps := c.list.Load(); ps != nil {
		for i := range *ps {
			if (*ps)[i].limit == l {
				return (*ps)[i].v
			}
		}
	}
	if r := c.recent.Load(); r != nil && r.limit == l {
		return r.v
	}
	v := c.make(l)
	for {
		old := c.list.Load()
		var next []cached[T]
		if old != nil {
			for i := range *old {
				if (*old)[i].limit == l {
					return (*old)[i].v // another goroutine added it meanwhile
				}
			}
			if len(*old) >= maxCached {
				c.recent.Store(&cached[T]{l, v})
				return v
			}
			next = make([]cached[T], len(*old), len(*old)+1)
			copy(next, *old)
		}
		next = append(next, cached[T]{l, v})
		if c.list.CompareAndSwap(old, &next) {
			return v
		}
	}
}
