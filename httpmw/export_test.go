package httpmw

import (
	"net/http"

	"github.com/floodgate/floodgate/core"
)

// WriteHeaders sets the rate-limit headers for d on h as the middleware
// does, for the header tests and benchmarks.
func (l *Limiter) WriteHeaders(h http.Header, d core.Decision) { l.writeHeaders(h, &d, l.list) }

// WriteErrorHeaders sets on h the headers of the default answer to err and
// returns its status.
func (l *Limiter) WriteErrorHeaders(h http.Header, err error) int { return l.writeErrorHeaders(h, err) }
