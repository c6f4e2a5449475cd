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
type Cache[T any] struct {
	list atomic.Pointer[[]cached[T]]
	make func(core.Limit) *T
}

type cached[T any] struct {
	limit core.Limit
	v     *T
}

// NewCache returns a Cache that builds missing entries with make.
func NewCache[T any](make func(core.Limit) *T) *Cache[T] {
	return &Cache[T]{make: make}
}

// Get returns l's entry, building it on a miss. When the cache is full it
// builds the entry without keeping it.
func (c *Cache[T]) Get(l core.Limit) *T {
	if ps := c.list.Load(); ps != nil {
		for i := range *ps {
			if (*ps)[i].limit == l {
				return (*ps)[i].v
			}
		}
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
