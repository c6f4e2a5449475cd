package promobs

import (
	"sync/atomic"
	"unsafe"
)

// identityCache finds a series by the identity of its names' strings, their
// data pointers and lengths, rather than by hashing and comparing their
// bytes. Limit names come from the core.Limit values a limiter holds, so
// the same string, with the same backing array, recurs event after event.
//
// It is a fixed table of slots filled once, never replaced: a name seen
// under a new backing array takes a free slot among the few its hash
// probes, or none, and is then found by content (the series map) from then
// on. So names made afresh for each event cannot grow it, and finding
// allocates nothing. An entry holds its strings, which keeps their memory
// from being reused by other strings while the entry could match them.
type identityCache struct {
	slots [identitySlots]atomic.Pointer[identityEntry]
}

const (
	identityBits   = 12
	identitySlots  = 1 << identityBits
	identityProbes = 4 // slots probed from a name's hash
)

// identityEntry is a filled slot: the names, whose identities it matches,
// and their series.
type identityEntry struct {
	limit, transport string
	s                *series
}

// identityHash hashes the identities of limit and transport.
func identityHash(limit, transport string) uint64 {
	h := addr(limit)*0x9e3779b97f4a7c15 + addr(transport)*0xc2b2ae3d27d4eb4f
	return h >> (64 - identityBits)
}

// addr is the identity of s: its data pointer plus its length, or 0 for
// "", whose data pointer is unspecified.
func addr(s string) uint64 {
	if len(s) == 0 {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(unsafe.StringData(s)))) + uint64(len(s))
}

// same reports whether a and b are the same string: the same bytes in the
// same memory, or both empty.
func same(a, b string) bool {
	return len(a) == len(b) && (len(a) == 0 || unsafe.StringData(a) == unsafe.StringData(b))
}

// find returns the series of the names whose identities hash to h, or nil.
func (c *identityCache) find(h uint64, limit, transport string) *series {
	for i := range uint64(identityProbes) {
		e := c.slots[(h+i)&(identitySlots-1)].Load()
		if e == nil {
			return nil // slots are filled in probe order and never emptied
		}
		if same(e.limit, limit) && same(e.transport, transport) {
			return e.s
		}
	}
	return nil
}

// add records s under the names' identities, if a slot they probe is free.
func (c *identityCache) add(h uint64, limit, transport string, s *series) {
	var mine *identityEntry
	for i := uint64(0); i < identityProbes; {
		p := &c.slots[(h+i)&(identitySlots-1)]
		if e := p.Load(); e != nil {
			if same(e.limit, limit) && same(e.transport, transport) {
				return // another goroutine was first
			}
			i++
			continue
		}
		if mine == nil {
			mine = &identityEntry{limit: limit, transport: transport, s: s}
		}
		if p.CompareAndSwap(nil, mine) {
			return
		}
		// Another goroutine filled the slot: look at it again.
	}
}
