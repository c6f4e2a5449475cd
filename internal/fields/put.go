package fields

import (
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
// It is the request path's writer: the values and their text come from a
// slab (see [Take]; the text is formatted straight into it), each value in
// a slot of its own with capacity equal to its length, so that no two
// responses share storage and an append to one value copies it. The map keys are assigned directly, with no
// canonicalisation. Most calls allocate nothing.
func Put(m map[string][]string, keys Keys, d *core.Decision, p *PolicyText, style core.HeaderStyle, list string) int {
	legacy, ietf := style.Legacy(), style.IETF()
	if p == nil {
		legacy, ietf = false, false
	}
	n := 0
	if legacy {
		n += 3
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
	vals := s.vals[s.nv : s.nv+n : s.nv+n]
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
	s.nv += n
	slabs.Put(s)

	names := &httpNames
	if keys == MetadataKeys {
		names = &mdNames
	}
	i := 0
	if legacy {
		vals[0], vals[1], vals[2] = p.Events, text[sp.rem.i:sp.rem.j], text[sp.reset.i:sp.reset.j]
		m[names[Limit]] = vals[0:1:1]
		m[names[Remaining]] = vals[1:2:2]
		m[names[Reset]] = vals[2:3:3]
		i = 3
	}
	if ietf {
		if list == "" {
			list = p.Policy
		}
		vals[i], vals[i+1] = list, text[sp.rl.i:sp.rl.j]
		m[names[Policy]] = vals[i : i+1 : i+1]
		m[names[RateLimit]] = vals[i+1 : i+2 : i+2]
		i += 2
	}
	if !d.Allowed {
		vals[i] = text[sp.retry.i:sp.retry.j]
		m[names[RetryAfter]] = vals[i : i+1 : i+1]
		i++
	}
	return i
}
