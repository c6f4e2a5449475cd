// Package obsreg holds what the metrics observers (promobs, otelobs) keep
// alike: the stores whose health they report, the overload guards whose
// state they report, the names of priorities (which debugpage shows too),
// and their series, one per limit and transport, found without a lock.
package obsreg

import (
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/option"
	"github.com/floodgate/floodgate/overload"
)

// Breaker is one store's health, read at each collection, under the name
// that tells stores apart.
type Breaker struct {
	Name   string
	Health core.HealthReporter
}

// AddBreaker returns list with b added, or list as it is, with the reason
// recorded in errs, when b has no name or another's.
func AddBreaker(errs *option.Errors, list []Breaker, b Breaker) []Breaker {
	if !errs.Require(b.Name != "", "breaker name is empty; name it after what it guards (\"redis\")") {
		return list
	}
	for _, x := range list {
		if !errs.Require(x.Name != b.Name, "two breakers are named %q; give each its own name", b.Name) {
			return list
		}
	}
	return append(list, b)
}

// Guard is one overload guard, read at each collection, under the name
// that tells guards apart.
type Guard struct {
	Name  string
	Guard overload.Guard
}

// AddGuard returns list with g added, or list as it is, with the reason
// recorded in errs, when g has no guard, no name or another's; opt is the
// option's name, for the message.
func AddGuard(errs *option.Errors, list []Guard, g Guard, opt string) []Guard {
	switch {
	case !errs.Require(g.Guard != nil, "%s(%q, nil): give the overload guard to report, such as an overload.Adaptive", opt, g.Name),
		!errs.Require(g.Name != "", "%s: the guard's name is empty; name it after what it protects (\"api\")", opt):
		return list
	}
	for _, x := range list {
		if !errs.Require(x.Name != g.Name, "%s: two guards are named %q; give each its own name", opt, g.Name) {
			return list
		}
	}
	return append(list, g)
}

// PriorityLabel names p in the shed counters' priority label: the named
// priorities by name, any other by its number.
func PriorityLabel(p overload.Priority) string {
	switch p {
	case overload.Sheddable:
		return "sheddable"
	case overload.Normal:
		return "normal"
	case overload.Critical:
		return "critical"
	}
	return strconv.Itoa(int(p))
}

// Key names a series: a limit's name and a transport.
type Key struct{ Limit, Transport string }

// Series maps each Key to its *V, added the first time it is seen. The map
// is copied on write, under a lock, so that Get takes one atomic load and
// no lock; a series is added once per limit and transport, which the
// application's configuration bounds. The zero Series is empty and ready.
type Series[V any] struct {
	m  atomic.Pointer[map[Key]*V]
	mu sync.Mutex
}

// Map returns every series so far. The map must not be changed.
func (s *Series[V]) Map() map[Key]*V {
	if m := s.m.Load(); m != nil {
		return *m
	}
	return nil
}

// Get returns the series of k, or nil.
func (s *Series[V]) Get(k Key) *V { return s.Map()[k] }

// Add returns the series of k, made by mk and added to a copy of the map
// unless it is there already.
func (s *Series[V]) Add(k Key, mk func() *V) *V {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.Map()
	if v := old[k]; v != nil {
		return v
	}
	next := make(map[Key]*V, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	v := mk()
	next[k] = v
	s.m.Store(&next)
	return v
}
