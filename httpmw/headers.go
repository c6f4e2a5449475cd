package httpmw

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/floodgate/floodgate/core"
)

// Header keys in canonical form (as textproto.CanonicalMIMEHeaderKey writes
// them), assigned straight into the map: http.Header.Set would canonicalise
// the key and allocate a fresh one-element slice on every call.
const (
	hdrLimit      = "X-Ratelimit-Limit"
	hdrRemaining  = "X-Ratelimit-Remaining"
	hdrReset      = "X-Ratelimit-Reset"
	hdrPolicy     = "Ratelimit-Policy"
	hdrRateLimit  = "Ratelimit"
	hdrRetryAfter = "Retry-After"
)

// policy holds what the headers say about one Limit that never changes from
// one request to the next, formatted once.
type policy struct {
	limit    core.Limit
	limitVal string    // X-RateLimit-Limit: Events
	policy   string    // RateLimit-Policy: "name";q=Events;w=Period
	prefix   string    // start of RateLimit: "name";r=
	problem  fixedBody // problem+json body, only with WithProblemDetails
}

// maxPolicies bounds the cache of formatted policies. A limiter sees one
// Limit, or a handful with stacked limits; a limiter that made up a new
// Limit per decision would otherwise grow the cache without end.
const maxPolicies = 16

// policyCache maps a Limit to its formatted policy. It is a copy-on-write
// slice behind an atomic pointer: the hot path is one load and a short scan,
// with no lock and no allocation.
type policyCache struct {
	list    atomic.Pointer[[]*policy]
	problem bool
}

func (c *policyCache) get(l core.Limit) *policy {
	if ps := c.list.Load(); ps != nil {
		for _, p := range *ps {
			if p.limit == l {
				return p
			}
		}
	}
	p := newPolicy(l, c.problem)
	for {
		old := c.list.Load()
		var next []*policy
		if old != nil {
			for _, q := range *old {
				if q.limit == l {
					return q // another goroutine added it meanwhile
				}
			}
			if len(*old) >= maxPolicies {
				return p // full: format per request rather than grow
			}
			next = make([]*policy, len(*old), len(*old)+1)
			copy(next, *old)
		}
		next = append(next, p)
		if c.list.CompareAndSwap(old, &next) {
			return p
		}
	}
}

func newPolicy(l core.Limit, problem bool) *policy {
	name := policyName(l.Name)
	p := &policy{
		limit:    l,
		limitVal: strconv.FormatInt(nonNeg(int64(l.Events)), 10),
		policy:   sfString(name) + ";q=" + strconv.FormatInt(nonNeg(int64(l.Events)), 10) + ";w=" + strconv.FormatInt(max(ceilSeconds(l.Period), 1), 10),
		prefix:   sfString(name) + ";r=",
	}
	if problem {
		p.problem = newFixedBody(problemBody(name, l))
	}
	return p
}

// policyName is the name the headers use: the Limit's, or "default".
func policyName(name string) string {
	if name == "" {
		return "default"
	}
	return name
}

// sfString formats s as a Structured Field String (RFC 8941 §3.3.3): quoted,
// with '"' and '\' escaped. Bytes a String cannot hold (controls, non-ASCII)
// become '_'; core.Limit.Validate never lets them into a name, but a custom
// core.Limiter could, and a header value must never carry CR or LF.
func sfString(s string) string {
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20 || c > 0x7e:
			b = append(b, '_')
		default:
			b = append(b, c)
		}
	}
	return string(append(b, '"'))
}

// ceilSeconds is d in whole seconds, rounded up, and 0 for d <= 0: a client
// that waits that long is never early.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	return s
}

func nonNeg(n int64) int64 { return max(n, 0) }

// retryAfterSeconds is the Retry-After value for a denial: ceil(RetryAfter),
// at least 1, because 0 would invite an immediate retry that RetryAfter says
// cannot succeed yet.
func retryAfterSeconds(d core.Decision) int64 { return max(ceilSeconds(d.RetryAfter), 1) }

// resetSeconds is the RateLimit t parameter: on a denial, seconds until the
// same request can succeed; when allowed, until the quota is whole again.
// Retry-After is therefore never earlier than t, as the draft requires.
func resetSeconds(d core.Decision) int64 {
	if d.Allowed {
		return ceilSeconds(d.ResetAfter)
	}
	return ceilSeconds(d.RetryAfter)
}

// WriteHeaders sets the rate-limit headers for d on h, in the configured
// style, and Retry-After when d is a denial (whatever the style). It writes
// only values computed from d, never anything from the request:
//
//	X-RateLimit-Limit:     d.Limit.Events
//	X-RateLimit-Remaining: d.Remaining
//	X-RateLimit-Reset:     ceil(d.ResetAfter) in seconds from now
//	RateLimit-Policy:      "name";q=<Events>;w=<ceil(Period) in seconds, >= 1>
//	RateLimit:             "name";r=<Remaining>;t=<ceil(RetryAfter) if denied, else ceil(ResetAfter)>
//	Retry-After:           ceil(d.RetryAfter) in seconds, >= 1 (denials only)
//
// where name is d.Limit.Name, or "default" when empty. Negative numbers from
// a misbehaving core.Limiter are written as 0.
//
// Call it before the response's WriteHeader: adapters call it before the
// next handler runs, so every limited response carries the headers whatever
// status it ends with. Each header gets a slice whose capacity equals its
// length, so a later h.Add copies rather than overwriting a neighbour.
func (l *Limiter) WriteHeaders(h http.Header, d core.Decision) {
	legacy, ietf := l.o.headers.legacy(), l.o.headers.ietf()
	var p *policy
	if legacy || ietf {
		p = l.policies.get(d.Limit)
	}
	writeHeaders(h, d, p, legacy, ietf)
}

func writeHeaders(h http.Header, d core.Decision, p *policy, legacy, ietf bool) {
	// Format the per-request numbers into one buffer, each once: the
	// RateLimit value "name";r=R;t=T holds Remaining, and T is also Reset
	// when allowed and Retry-After when denied, so those values are
	// substrings of it. The text and the value slots then come from a slab
	// (see slab.go): no allocation on most requests.
	var arr [192]byte
	b := arr[:0]
	remaining := nonNeg(int64(d.Remaining))
	var rem, reset, rl, retry span
	if ietf {
		b = append(b, p.prefix...)
		rem.i = len(b)
		b = strconv.AppendInt(b, remaining, 10)
		rem.j = len(b)
		b = append(b, ";t="...)
		t := span{i: len(b)}
		b = strconv.AppendInt(b, resetSeconds(d), 10)
		t.j = len(b)
		rl = span{0, len(b)}
		switch {
		case d.Allowed:
			reset = t // t is ceil(ResetAfter)
		case d.RetryAfter > 0:
			retry = t // t is ceil(RetryAfter) >= 1
		}
	}
	n := 0
	if legacy {
		n += 3
		if !rem.set() {
			b, rem = appendInt(b, remaining)
		}
		if !reset.set() {
			b, reset = appendInt(b, ceilSeconds(d.ResetAfter))
		}
	}
	if ietf {
		n += 2
	}
	if !d.Allowed {
		n++
		if !retry.set() {
			b, retry = appendInt(b, retryAfterSeconds(d))
		}
	}
	vals, s := take(n, b)
	n = 0
	put := func(key, v string) {
		vals[n] = v
		h[key] = vals[n : n+1 : n+1]
		n++
	}
	if legacy {
		put(hdrLimit, p.limitVal)
		put(hdrRemaining, s[rem.i:rem.j])
		put(hdrReset, s[reset.i:reset.j])
	}
	if ietf {
		put(hdrPolicy, p.policy)
		put(hdrRateLimit, s[rl.i:rl.j])
	}
	if !d.Allowed {
		put(hdrRetryAfter, s[retry.i:retry.j])
	}
}

// span is where one value sits in the formatted text.
type span struct{ i, j int }

// set reports whether the span holds a value: every value is at least one
// byte long.
func (s span) set() bool { return s.j > s.i }

// appendInt appends n to b and says where. It takes and returns the slice
// rather than a pointer to it, which would move the caller's stack buffer to
// the heap.
func appendInt(b []byte, n int64) ([]byte, span) {
	i := len(b)
	b = strconv.AppendInt(b, n, 10)
	return b, span{i, len(b)}
}

// ProblemType is the RFC 9457 problem type URI of a [WithProblemDetails]
// denial: "quota-exceeded" as draft-ietf-httpapi-ratelimit-headers-10
// registers it.
const ProblemType = "https://iana.org/assignments/http-problem-types#quota-exceeded"

// problemTitle is the draft's title for the problem type.
const problemTitle = "Request cannot be satisfied as assigned quota has been exceeded"

// problem is an RFC 9457 problem details object of the quota-exceeded type.
// Members appear in this order in the body.
type problem struct {
	Type             string   `json:"type"`
	Title            string   `json:"title"`
	Status           int      `json:"status"`
	Detail           string   `json:"detail"`
	ViolatedPolicies []string `json:"violated-policies"`
}

// problemBody formats the problem+json body for a denial by l. It carries
// nothing that changes per request, so it is made once per policy; the wait
// is in Retry-After and RateLimit.
func problemBody(name string, l core.Limit) []byte {
	detail := "The quota of policy " + strconv.Quote(name) + " (" + strconv.FormatInt(nonNeg(int64(l.Events)), 10) +
		" per " + periodText(l.Period) + ") is exhausted; retry after the number of seconds in the Retry-After header."
	b, err := json.Marshal(problem{
		Type:             ProblemType,
		Title:            problemTitle,
		Status:           http.StatusTooManyRequests,
		Detail:           detail,
		ViolatedPolicies: []string{name},
	})
	if err != nil { // cannot happen: strings and an int always marshal
		panic(err)
	}
	return append(b, '\n')
}

// periodText writes a period as people say it: "second", "10s", "minute".
func periodText(d time.Duration) string {
	switch d {
	case time.Second:
		return "second"
	case time.Minute:
		return "minute"
	case time.Hour:
		return "hour"
	case 24 * time.Hour:
		return "day"
	}
	if d <= 0 || d > math.MaxInt64/2 {
		return "period"
	}
	return d.String()
}
