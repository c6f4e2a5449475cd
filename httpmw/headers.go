package httpmw

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/fields"
)

// policy is what this package formats once per Limit: the fields' text,
// and the problem+json body when [WithProblemDetails] is on.
type policy struct {
	fields.PolicyText
	problem fixedBody
}

func newPolicy(l core.Limit, problem bool) *policy {
	p := &policy{PolicyText: fields.NewPolicyText(l)}
	if problem {
		p.problem = newFixedBody(problemBody(p.Name, l))
	}
	return p
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
// where name is d.Limit.Name, or "default" when empty. A name that
// core.Limit.Validate would refuse (a custom core.Limiter's) is sent as
// printable ASCII, other bytes as '_', and one longer than 72 bytes (fewer
// when it holds '"' or '\', which are escaped) is cut, so that no number
// is ever left out and no header grows with a name; the
// problem+json body names the policy the same way. When the limiter is
// a stack of limits (it implements [core.PolicyLister]), RateLimit-Policy
// lists every policy, in order, as a Structured Field List
// ("burst";q=10;w=1, "day";q=1000;w=86400), and the other headers describe
// d.Limit, the policy that decided (the one that refused, or the one with
// the least left). Negative numbers from
// a misbehaving core.Limiter are written as 0. grpcmw sends the same values
// as metadata.
//
// Call it before the response's WriteHeader: adapters call it before the
// next handler runs, so every limited response carries the headers whatever
// status it ends with. Each header gets a slice whose capacity equals its
// length, so a later h.Add copies rather than overwriting a neighbour.
//
// WriteHeaders lists the policies of the limiter given to [New]; for a
// request decided by a [WithLimiterFunc] limiter, [Limiter.Check] lists
// that limiter's.
func (l *Limiter) WriteHeaders(h http.Header, d core.Decision) {
	l.writeHeaders(h, &d, l.list)
}

// writeHeaders is WriteHeaders with list, the RateLimit-Policy list of the
// limiter that decided ("" for a single limit).
func (l *Limiter) writeHeaders(h http.Header, d *core.Decision, list string) {
	var pt *fields.PolicyText
	if l.o.headers != HeadersNone {
		pt = &l.policies.Get(d.Limit).PolicyText
	}
	// The values and their text come from a slab (see fields.Take): no
	// allocation on most requests, and the keys are already canonical.
	fields.Put(h, fields.HTTPKeys, d, pt, l.o.headers, list)
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
	detail := "The quota of policy " + strconv.Quote(name) + " (" + strconv.FormatInt(max(int64(l.Events), 0), 10) +
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
