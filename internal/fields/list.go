package fields

import (
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/floodgate/floodgate/core"
)

// JoinPolicies formats RateLimit-Policy for a stack of limits: every
// policy, in order, as a Structured Field List ("a";q=5;w=1, "b";q=100;w=3600).
// It returns "" for an empty stack.
func JoinPolicies(ls []core.Limit) string {
	var b strings.Builder
	for i, l := range ls {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(NewPolicyText(l).Policy)
	}
	return b.String()
}

// Lists maps the policies of stacked limiters (core.PolicyLister) to their
// JoinPolicies text. A PolicyLister returns the same shared slice on every
// call, so an entry is found by the slice's identity (its first element's
// address and its length), with no lock, no allocation and no comparison
// of limits; the entry keeps the slice alive, so the address cannot be
// reused by another. A limiter that returned a fresh slice per call would
// fill the cache (it is bounded, as [Cache] is) and then pay a join per
// request. The zero Lists is ready to use.
type Lists struct {
	list atomic.Pointer[[]listEntry]
}

type listEntry struct {
	ls   []core.Limit
	text string
}

// Get returns the text for ls; "" for an empty stack.
func (c *Lists) Get(ls []core.Limit) string {
	if len(ls) == 0 {
		return ""
	}
	if es := c.list.Load(); es != nil {
		for i := range *es {
			if e := &(*es)[i]; same(e.ls, ls) {
				return e.text
			}
		}
	}
	text := JoinPolicies(ls)
	for {
		old := c.list.Load()
		var next []listEntry
		if old != nil {
			if len(*old) >= maxCached {
				return text
			}
			next = append(make([]listEntry, 0, len(*old)+1), *old...)
		}
		next = append(next, listEntry{ls, text})
		if c.list.CompareAndSwap(old, &next) {
			return text
		}
	}
}

// Of returns the text for lim's policies when lim is a stacked limiter
// (core.PolicyLister), and "" otherwise.
func (c *Lists) Of(lim core.Limiter) string {
	if pl, ok := lim.(core.PolicyLister); ok {
		return c.Get(pl.Policies())
	}
	return ""
}

func same(a, b []core.Limit) bool {
	return len(a) == len(b) && unsafe.SliceData(a) == unsafe.SliceData(b)
}
