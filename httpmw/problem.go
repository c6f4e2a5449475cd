package httpmw

import (
	"net/http"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/fields"
)

// ProblemDetails is a [DenyHandler] that answers a refusal with 429 and an
// RFC 9457 application/problem+json body of the
// draft-ietf-httpapi-ratelimit-headers-10 "quota-exceeded" problem type,
// naming the violated policy (d.Limit), instead of plain text:
//
//	httpmw.New(lim, key, httpmw.WithDenyHandler(httpmw.ProblemDetails))
//
// Retry-After and the rate-limit headers are set already. The body is
// made once per policy: a refusal allocates nothing more. A shed
// (core.Decision.Shed) gets 503 and a problem of no particular type
// saying the service is overloaded, with its Retry-After.
func ProblemDetails(w http.ResponseWriter, _ *http.Request, d core.Decision) {
	if d.Shed {
		writeBody(w, http.StatusServiceUnavailable, "application/problem+json", problemShed)
		return
	}
	writeBody(w, http.StatusTooManyRequests, "application/problem+json", *problems.Get(d.Limit))
}

// problemShed is ProblemDetails' body for a shed.
var problemShed = newFixedBody([]byte(`{"type":"about:blank","title":"Service Unavailable","status":503,"detail":"The service is overloaded; retry after the number of seconds in the Retry-After header."}`))

// problems holds the problem+json body of every policy ProblemDetails has
// answered for.
var problems = fields.NewCache(func(l core.Limit) *fixedBody {
	b := newFixedBody(problemBody(fields.NewPolicyText(l).Name, l))
	return &b
})
