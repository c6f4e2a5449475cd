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

// policy is what this package formats once per Limit: the fields' text.
type policy struct {
	fields.PolicyText
}

func newPolicy(l core.Limit) *policy {
	return &policy{PolicyText: fields.NewPolicyText(l)}
}

// writeHeaders sets the rate-limit headers for d on h, in the configured
// style, and Retry-After when d is a denial (whatever the style), with the
// values the package documentation lists: only values computed from d,
// never anything from the request. Each header gets a slice whose
// capacity equals its length, so a later h.Add copies rather than
// overwriting a neighbour. list is the RateLimit-Policy list of the
// limiter that decided ("" for a single limit).
func (l *Limiter) writeHeaders(h http.Header, d *core.Decision, list string) {
	var pt *fields.PolicyText
	if l.o.Headers != core.HeadersNone {
		pt = &l.policies.Get(d.Limit).PolicyText
	}
	// The values and their text come from a slab (see fields.Take): no
	// allocation on most requests, and the keys are already canonical.
	fields.Put(h, fields.HTTPKeys, d, pt, l.o.Headers, list)
}

// problemType is the RFC 9457 problem type URI of a [ProblemDetails]
// denial: "quota-exceeded" as draft-ietf-httpapi-ratelimit-headers-10
// registers it.
const problemType = "https://iana.org/assignments/http-problem-types#quota-exceeded"

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
		Type:             problemType,
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
