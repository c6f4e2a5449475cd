package fields

import (
	"strconv"
	"unsafe"

	"github.com/floodgate/floodgate/core"
)

// Keys selects the names [Put] writes the fields under.
type Keys uint8

const (
	// HTTPKeys are the header names in canonical form (Field.HTTP), the
	// keys an http.Header holds.
	HTTPKeys Keys = iota
	// MetadataKeys are the lower-case gRPC metadata keys (Field.Metadata).
	MetadataKeys
)

// Put sets the fields of d in style on m, an http.Header or a gRPC
// metadata.MD, under the names keys selects: the values [Values.Format]
// gives for the same arguments, with list in RateLimit-Policy as
// [Values.SetPolicies] says. p may be nil when style sends no rate-limit
// fields. It returns how many fields it set.
//
// It is the request path's writer, and it allocates nothing on most calls.
// A value that repeats from one response to the next (the policy's limit
// and RateLimit-Policy, a number below [SharedNumbers]) is a one-element
// slice shared by every response that carries it, read-only: Set, Add and
// Del on the header leave it intact (its capacity is its length, so an
// append copies), and only a handler that wrote into m[k][i] in place
// would change it for others. Every other value (the RateLimit field, a
// large Remaining) gets a slot of its own in a slab (see [Take]) and its
// text is formatted straight into the slab, so no two responses share
// storage that is not read-only. The map keys are assigned directly, with
// no canonicalisation.
//
// A shed (d.Shed: an overload guard refused, not the client's quota) gets
// Retry-After alone: the rate-limit fields describe a client's quota,
// which a shed neither read nor charged.
func Put(m map[string][]string, keys Keys, d *core.Decision, p *PolicyText, style core.HeaderStyle, list string) int {
	legacy, ietf := style.Legacy(), style.IETF()
	if p == nil || d.Shed {
		legacy, ietf = false, false
	}
	// n is the most slab slots the values can take: RateLimit, a stack's
	// policy list, and the numbers when they are not small.
	n := 0
	if legacy {
		n += 2
	}
	if ietf {
		n += 2
	}
	if !d.Allowed {
		n++
	}
	if n == 0 {
		return 0
	}
	// The text is formatted straight into the slab: need is the most it
	// can take (bufLen at most, well under a slab's text), each number at
	// most 20 bytes: RateLimit's "name";r=R;t=T holds Remaining and one of
	// Reset and Retry-After, the legacy values are two numbers of their
	// own without it, and a denial adds at most two.
	need := 0
	switch {
	case ietf:
		need = len(p.prefix) + len(";t=") + 2*20
	case legacy:
		need = 2 * 20
	}
	if !d.Allowed {
		need += 2 * 20
	}
	s := slabs.Get().(*slab)
	if s.nv+n > slabVals || s.nt+need > slabText {
		// Full: drop it, its storage belongs to earlier responses now.
		s = new(slab)
	}
	x := slots{free: s.vals[s.nv : s.nv+n : s.nv+n]}
	b, sp := format(s.text[s.nt:s.nt:slabText], d, p, legacy, ietf)
	var text string
	if start := &s.text[s.nt]; unsafe.SliceData(b) == start {
		// These bytes are never written again (nt only grows and a slab
		// is never reset), which is what unsafe.String requires; every
		// set of fields has some text.
		text = unsafe.String(start, len(b))
		s.nt += len(b)
	} else {
		text = string(b) // need was short and append moved b: never, but safe
	}

	names := &httpNames
	if keys == MetadataKeys {
		names = &mdNames
	}
	set := 0
	if legacy {
		m[names[Limit]] = p.events
		m[names[Remaining]] = x.number(nonNeg(int64(d.Remaining)), text, sp.rem)
		m[names[Reset]] = x.number(CeilSeconds(d.ResetAfter), text, sp.reset)
		set = 3
	}
	if ietf {
		if list == "" || list == p.Policy {
			m[names[Policy]] = p.policy
		} else {
			m[names[Policy]] = x.one(list)
		}
		m[names[RateLimit]] = x.one(text[sp.rl.i:sp.rl.j])
		set += 2
	}
	if !d.Allowed {
		m[names[RetryAfter]] = x.number(RetryAfterSeconds(*d), text, sp.retry)
		set++
	}
	s.nv += x.used
	slabs.Put(s)
	return set
}

// slots hands out a slab's value slots one at a time.
type slots struct {
	free []string
	used int
}

// one returns a fresh slot holding v, with capacity 1.
func (x *slots) one(v string) []string {
	i := x.used
	x.free[i] = v
	x.used++
	return x.free[i : i+1 : i+1]
}

// number returns the value for n, whose text is sp in text: the shared
// slice when n is small, else a fresh slot.
func (x *slots) number(n int64, text string, sp span) []string {
	if uint64(n) < SharedNumbers {
		return sharedNumbers[n : n+1 : n+1]
	}
	return x.one(text[sp.i:sp.j])
}

// SharedNumbers bounds the numbers whose value slices are shared by every
// response (see [Put]): Remaining under a limit of up to this many
// requests, and waits of up to this many seconds, the common values.
const SharedNumbers = 1024

// sharedNumbers holds the text of 0 .. SharedNumbers-1.
var sharedNumbers = func() []string {
	s := make([]string, SharedNumbers)
	for i := range s {
		s[i] = strconv.Itoa(i)
	}
	return s
}()
