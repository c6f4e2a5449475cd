package httpmw

import (
	"net/http"

	"github.com/floodgate/floodgate/internal/pipeline"
)

// The request path: Handler, Enter and Check run these, which fill an
// Admission in place rather than copying it (and its Decision) up through
// each call.

// enter is Enter into *a, which it reports admitted or not: the request
// path passes the Admission down rather than copying it up.
func (l *Limiter) enter(w http.ResponseWriter, r *http.Request, a *Admission) bool {
	err := l.check(w.Header(), r, a)
	switch {
	case a.admitted:
		return true
	case err != nil:
		l.WriteError(w, r, err)
	default:
		l.WriteDenied(w, r, a.Decision)
	}
	return false
}

// check is Check into *a, which is the zero Admission.
func (l *Limiter) check(h http.Header, r *http.Request, a *Admission) error {
	var res pipeline.Result
	ctx := r.Context()
	l.p.Run(ctx, r, l.limiter, 0, &res)
	a.request = r
	switch {
	case res.Skipped || res.FailedOpen:
		a.admitted = true
		return nil
	case res.Shadow:
		a.admitted, a.Decision = true, res.ShadowDecision()
		if l.o.headersSet && res.Err == nil {
			l.writeHeaders(h, &a.Decision, l.listOf(&res))
		}
		if l.o.refundInner {
			a.request = r.WithContext(pipeline.Attach(ctx, l.limiter, &res))
		}
		return nil
	case res.Err != nil:
		return res.Err
	}
	l.writeHeaders(h, &res.Decision, l.listOf(&res))
	a.Decision, a.admitted = res.Decision, res.Decision.Allowed
	if a.admitted && l.o.refundInner {
		a.request = r.WithContext(pipeline.Attach(ctx, l.limiter, &res))
	}
	return nil
}

// listOf is the RateLimit-Policy list of the limiter that decided res.
func (l *Limiter) listOf(res *pipeline.Result) string {
	if res.Limiter != nil {
		return l.lists.Of(res.Limiter)
	}
	return l.list
}
