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
	b, s := format(v.buf[:0], &d, p, legacy, ietf)
	v.n = len(b)
	if legacy {
		v.konst(Limit)
		v.span(Remaining, s.rem)
		v.span(Reset, s.reset)
	}
	if ietf {
		v.konst(Policy)
		v.span(RateLimit, s.rl)
	}
	if !d.Allowed {
		v.span(RetryAfter, s.retry)
	}
}

// spans are where format put each per-request value in the text.
type spans struct{ rem, reset, rl, retry span }

// format appends the per-request text of d's fields to b: the RateLimit
// value when ietf, Remaining and Reset when legacy (as parts of the
// RateLimit value where they are the same numbers), and Retry-After on a
// denial. Each number is formatted once: the RateLimit value
// "name";r=R;t=T holds Remaining, and T is also Reset when allowed and
// Retry-After when denied, so those values are spans of it. b must have
// room for len(p.prefix) + maxNumbers bytes more, which bufLen always is.
// Values.Format and Put share it, so that both say the same thing.
func format(b []byte, d *core.Decision, p *PolicyText, legacy, ietf bool) ([]byte, spans) {
	var s spans
	remaining := nonNeg(int64(d.Remaining))
	if ietf {
		b = append(b, p.prefix...)
		s.rem.i = uint8(len(b))
		b = strconv.AppendInt(b, remaining, 10)
		s.rem.j = uint8(len(b))
		b = append(b, ";t="...)
		t := span{i: uint8(len(b))}
		b = strconv.AppendInt(b, resetSeconds(*d), 10)
		t.j = uint8(len(b))
		s.rl = span{0, uint8(len(b))}
		switch {
		case d.Allowed:
			s.reset = t // t is ceil(ResetAfter)
		case d.RetryAfter > 0:
			s.retry = t // t is ceil(RetryAfter) >= 1
		}
	}
	if legacy {
		if !s.rem.set() {
			b, s.rem = appendInt(b, remaining)
		}
		if !s.reset.set() {
			b, s.reset = appendInt(b, CeilSeconds(d.ResetAfter))
		}
	}
	if !d.Allowed && !s.retry.set() {
		b, s.retry = appendInt(b, RetryAfterSeconds(*d))
	}
	return b, s
}

func appendInt(b []byte, n int64) ([]byte, span) {
	i := len(b)
	b = strconv.AppendInt(b, n, 10)
	return b, span{uint8(i), uint8(len(b))}
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

// span is where one value sits in the text, which is shorter than 256
// bytes (bufLen): two bytes, so that format returns its spans in a
// register.
type span struct{ i, j uint8 }

// set reports whether the span holds a value: every value is at least one
// byte long.
func (s span) set() bool { return s.j > s.i }

func (v *Values) konst(f Field) {
	v.e[v.k] = entry{f: f, konst: true}
	v.k++
}

func (v *Values) span(f Field, s span) {
	v.e[v.k] = entry{f: f, i: s.i, j: s.j}
	v.k++
}
