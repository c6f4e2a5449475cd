package fields

import (
	"strconv"

	"github.com/floodgate/floodgate/core"
)

// Values are one Decision's fields, formatted. The zero Values holds no
// field; [Values.Format] fills it. A Values is meant to live on the stack:
// its per-request text sits in a fixed buffer, and the values are either
// constant strings of the policy or spans of that text.
type Values struct {
	buf [bufLen]byte
	n   int         // buf[:n] is the text
	k   int         // e[:k] are set
	p   *PolicyText // where the constant values come from
	// list replaces p.Policy in RateLimit-Policy when not empty: every
	// policy of a stacked limiter (see [Values.SetPolicies]).
	list string
	e    [numFields]entry
}

// bufLen is the size of the per-request text buffer. It holds the quoted
// name and the numbers, at most MaxQuotedName + maxNumbers bytes, and is
// shorter than 256 bytes so that an entry's span fits in two uint8s.
const bufLen = 160

// maxNumbers is the most the numbers take in a Values's text: the
// RateLimit value's ";r=" and ";t=" and at most four numbers (RateLimit's
// two, then X-RateLimit-Reset and Retry-After on a denial), each at most
// 20 bytes, the longest int64.
const maxNumbers = len(";r=") + len(";t=") + 4*20

// entry is one field: the span [i, j) of the text (which is shorter than
// 256 bytes), or with konst a constant of the policy (Limit: Events,
// Policy: Policy). It is four bytes: a Values is zeroed on every request.
type entry struct {
	f     Field
	konst bool
	i, j  uint8
}

// Format sets v to the fields of d in style, with p the formatted policy
// of d.Limit (p may be nil when style sends no rate-limit fields).
// Retry-After is set whenever d is a denial, whatever the style. Negative
// numbers from a misbehaving core.Limiter are written as 0:
//
//	X-RateLimit-Limit:     d.Limit.Events
//	X-RateLimit-Remaining: d.Remaining
//	X-RateLimit-Reset:     ceil(d.ResetAfter) in seconds
//	RateLimit-Policy:      "name";q=<Events>;w=<ceil(Period) in seconds, >= 1>
//	RateLimit:             "name";r=<Remaining>;t=<ceil(RetryAfter) if denied, else ceil(ResetAfter)>
//	Retry-After:           ceil(d.RetryAfter) in seconds, >= 1 (denials only)
func (v *Values) Format(d core.Decision, p *PolicyText, style core.HeaderStyle) {
	v.n, v.k, v.p, v.list = 0, 0, p, ""
	legacy, ietf := style.Legacy(), style.IETF()
	if p == nil {
		legacy, ietf = false, false
	}
	remaining := nonNeg(int64(d.Remaining))
	// Each number is formatted once: the RateLimit value "name";r=R;t=T
	// holds Remaining, and T is also Reset when allowed and Retry-After
	// when denied, so those values are spans of it.
	var rem, reset, rl, retry span
	if ietf {
		v.appendString(p.prefix)
		rem = v.appendInt(remaining)
		v.appendString(";t=")
		t := v.appendInt(resetSeconds(d))
		rl = span{0, v.n}
		switch {
		case d.Allowed:
			reset = t // t is ceil(ResetAfter)
		case d.RetryAfter > 0:
			retry = t // t is ceil(RetryAfter) >= 1
		}
	}
	if legacy {
		if !rem.set() {
			rem = v.appendInt(remaining)
		}
		if !reset.set() {
			reset = v.appendInt(CeilSeconds(d.ResetAfter))
		}
		v.konst(Limit)
		v.span(Remaining, rem)
		v.span(Reset, reset)
	}
	if ietf {
		v.konst(Policy)
		v.span(RateLimit, rl)
	}
	if !d.Allowed {
		if !retry.set() {
			retry = v.appendInt(RetryAfterSeconds(d))
		}
		v.span(RetryAfter, retry)
	}
}

// SetPolicies makes RateLimit-Policy, if v holds it, list, the policies of
// a stacked limiter formatted by [JoinPolicies], in place of the deciding
// policy alone; the other fields still describe the Decision's Limit. ""
// changes nothing. Call it after Format.
func (v *Values) SetPolicies(list string) { v.list = list }

// Len returns how many fields v holds.
func (v *Values) Len() int { return v.k }

// Text returns the per-request text the values point into. The caller
// copies it into a string it owns and passes that string to Field.
func (v *Values) Text() []byte { return v.buf[:v.n] }

// Field returns field i (0 <= i < Len) and its value, where text is a copy
// of Text().
func (v *Values) Field(i int, text string) (Field, string) {
	e := v.e[i]
	switch {
	case !e.konst:
		return e.f, text[e.i:e.j]
	case e.f == Limit:
		return e.f, v.p.Events
	case v.list != "":
		return e.f, v.list
	}
	return e.f, v.p.Policy
}

// span is where one value sits in the text.
type span struct{ i, j int }

// set reports whether the span holds a value: every value is at least one
// byte long.
func (s span) set() bool { return s.j > s.i }

func (v *Values) appendString(s string) {
	v.n += copy(v.buf[v.n:], s)
}

// appendInt appends n. There is always room: the quoted name is at most
// MaxQuotedName bytes (NewPolicyText cuts a longer one) and the numbers at
// most maxNumbers, so the text never outgrows buf, and no number is ever
// left out.
func (v *Values) appendInt(n int64) span {
	i := v.n
	v.n = len(strconv.AppendInt(v.buf[:i], n, 10))
	return span{i, v.n}
}

func (v *Values) konst(f Field) {
	v.e[v.k] = entry{f: f, konst: true}
	v.k++
}

func (v *Values) span(f Field, s span) {
	v.e[v.k] = entry{f: f, i: uint8(s.i), j: uint8(s.j)}
	v.k++
}
