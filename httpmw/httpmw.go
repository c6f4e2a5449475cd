package httpmw

import (
	"context"
	"net/http"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/fields"
	"github.com/floodgate/floodgate/internal/option"
	"github.com/floodgate/floodgate/internal/pipeline"
	"github.com/floodgate/floodgate/keyfunc"
)

// Limiter puts a core.Limiter in front of HTTP handlers: it extracts a key
// and a cost from each request, asks the core.Limiter, writes the rate-limit
// headers and answers refusals and errors.
//
// [Limiter.Handler] is the net/http middleware; [Limiter.Enter] does the
// whole job for one request and [Limiter.Check] all of it but the answer,
// for the adapters of other frameworks (ginmw, echomw) and your own.
//
// A Limiter is safe for concurrent use. Make it with [New].
type Limiter struct {
	limiter  core.Limiter
	p        *pipeline.Pipeline[*http.Request]
	o        options
	policies *fields.Cache[policy]
	badKey   answer
	// list is the limiter's RateLimit-Policy list when it is a stack
	// (core.PolicyLister); lists holds those of WithLimiterFunc's.
	list  string
	lists fields.Lists
}

// New returns a Limiter that limits requests by key through lim. key is
// required, so every call site says what it limits by; package keyfunc has
// the usual ones, and any func(*http.Request) (string, error) will do. lim
// is required too, unless [WithLimiterFunc] chooses the limiter per
// request: lim must then be nil. Options default to: cost 1 per request,
// both header styles, plain-text 429 denials, the default error answers
// described at [Limiter.Enter], no skipped requests, core.FailClosed, no
// observer.
func New(lim core.Limiter, key keyfunc.Func, opts ...Option) (*Limiter, error) {
	l := &Limiter{limiter: lim}
	l.o.Prefix = "httpmw: "
	if err := option.Apply(&l.o, &l.o.Errors, opts); err != nil {
		return nil, err
	}
	if err := l.o.Validate(lim, key != nil, "keyfunc.MustClientIP()"); err != nil {
		return nil, err
	}
	cfg := l.o.Pipeline
	cfg.Transport, cfg.Key = "http", key
	l.p = pipeline.New(cfg)
	if lim != nil {
		l.list = l.lists.Of(lim)
	}
	l.policies = fields.NewCache(newPolicy)
	l.badKey = newAnswer(http.StatusBadRequest, "the request carries no usable rate-limit key")
	// Format the configured policy now, so the first request pays nothing.
	if c, ok := lim.(interface{ Limit() core.Limit }); ok {
		l.policies.Get(c.Limit())
	}
	return l, nil
}

// MustNew is like [New] but panics on error. It is meant for package-level
// variables and for set-up code whose arguments are constants.
func MustNew(lim core.Limiter, key keyfunc.Func, opts ...Option) *Limiter {
	l, err := New(lim, key, opts...)
	if err != nil {
		panic(err)
	}
	return l
}

// LimitByIP is the common case in one line: middleware that limits each
// client IP address to limit, in memory. The client is the socket peer
// (no proxy header is believed; use [New] with keyfunc.ClientIP and
// keyfunc.WithTrustedProxies behind a proxy); IPv6 clients are grouped by
// /64. Everything else is [New]'s default, and opts are [New]'s options.
//
//	http.ListenAndServe(addr, httpmw.LimitByIP(core.PerMinute(100))(mux))
//
// ginmw.LimitByIP and echomw.LimitByIP are the same for Gin and Echo. It
// panics with a message saying what to fix when limit or an option is
// invalid: it is meant for set-up code.
func LimitByIP(limit core.Limit, opts ...Option) func(http.Handler) http.Handler {
	lim, err := core.New(limit)
	if err != nil {
		panic("httpmw: LimitByIP: " + err.Error())
	}
	return MustNew(lim, keyfunc.MustClientIP(), opts...).Handler
}

// Handler returns next behind the limiter: the method value l.Handler is
// a func(http.Handler) http.Handler, the usual middleware shape, and
// l.Handler(http.HandlerFunc(f)) decorates one endpoint. It runs
// [Limiter.Enter] and, when the request is admitted, next with
// [Admission.Request], then ends the admission however next ends (it
// returns or panics; a client that goes away cancels the request's
// context, which next is expected to heed).
func (l *Limiter) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var a Admission
		l.enter(&a, w, r)
		if !a.admitted {
			return
		}
		if a.Decision.Lease.IsZero() {
			// Nothing to end: no defer on the common path.
			next.ServeHTTP(w, a.request)
			return
		}
		defer a.End()
		next.ServeHTTP(w, a.request)
	})
}

// Admission is how [Limiter.Enter] or [Limiter.Check] found one request.
// An admitted request goes on with [Admission.Request] and must be ended
// with [Admission.End] when it is done, however it ends:
//
//	a := l.Enter(w, r)
//	if !a.Admitted() { return }  // the answer is written
//	defer a.End()
//	next.ServeHTTP(w, a.Request())
type Admission struct {
	// Decision is the limiter's answer: for an admitted request, the zero
	// Decision when it was skipped, free or failed open, and a shadow one
	// (core.Decision.Shadow) under WithShadow; for a refused one, the
	// denial, or the zero Decision when no decision was made.
	Decision core.Decision
	request  *http.Request
	admitted bool
	status   int
}

// Admitted reports whether the request may proceed.
func (a *Admission) Admitted() bool { return a.admitted }

// Status is the status of the default answer to a request that is not
// admitted: 429 for a refusal (503 for a shed, core.Decision.Shed), or
// the status [Limiter.Enter] describes for
// an error (its answer when WithErrorHandler is not given). It is 0 for an
// admitted request.
func (a *Admission) Status() int { return a.status }

// Request returns the request the rest of the chain must get: the one
// given, or under [WithRefundOnInnerRefusal] a copy whose context records
// this limiter's charge, so that a floodgate nested inside can give it
// back.
func (a *Admission) Request() *http.Request { return a.request }

// End finishes an admitted request: it gives back the concurrency slot of
// Decision.Lease, if any (see [core.Lease]), telling it how the request
// ended from its context: dropped past its deadline, served otherwise,
// the client gone included (its latency still tells a guard how slow the
// service was; core.Ending). It is
// idempotent, and does nothing for a request without a lease, so adapters
// defer it unconditionally.
func (a *Admission) End() {
	if !a.Decision.Lease.IsZero() {
		pipeline.End(a.request.Context(), a.Decision.Lease)
	}
}

// Enter does the limiter's whole job for one request and returns the
// [Admission]. When it is not admitted, Enter has written the complete
// response and the caller must not write more. When it is, the rate-limit
// headers are set on w (unless the request was skipped, free, or the store
// failed open), and the caller runs the next handler with a.Request() and
// then calls a.End(). A shaped request waits here for its turn, and a held
// denial ([WithDenialHold]) is held here.
//
// A refusal is answered by the [WithDenyHandler] handler, or with 429 and
// a plain-text body. A shed (core.Decision.Shed: an overload guard
// refused, the service, not the client's quota, is short) goes to the
// deny handler too, or gets 503 (grpcmw: Unavailable) with Retry-After
// and no rate-limit headers. A request for which no decision could be made is
// answered by the [WithErrorHandler] handler, or else by the kind of the
// error, the same on every transport (grpcmw's codes in brackets):
//
//   - the request carries no usable key ([core.ErrBadKey], such as a
//     missing API-key header): 400 (InvalidArgument). Key material too
//     large to read ([core.ErrKeyTooLarge]): 431.
//   - the key function failed otherwise ([core.ErrKey]): 500 (Internal). It
//     is a bug or a misconfiguration, not the client's doing, and its text
//     is not shown.
//   - the cost is invalid ([core.ErrInvalidCost], or a cost function error
//     that wraps it): 400 (InvalidArgument). A cost above what the limit
//     can ever admit ([core.ErrCostTooLarge]): 413, whose body says that
//     retrying will not help: a 429 would promise a retry that cannot work.
//   - the cost function failed or returned a negative cost ([core.ErrCost]):
//     500 (Internal).
//   - the store failed ([core.ErrStore], only reached under
//     core.FailClosed): 429 with Retry-After: 1 and the plain-text 429
//     body, but no rate-limit headers, since no quota was read (see
//     core.FailClosed for why not 503).
//   - the request ended while it waited its turn ([core.ErrWaitCanceled]):
//     503; the client has usually gone already.
//   - anything else: 500.
func (l *Limiter) Enter(w http.ResponseWriter, r *http.Request) Admission {
	var a Admission
	l.enter(&a, w, r)
	return a
}

// enter is Enter writing into *a, a zero Admission: Handler's own
// Admission stays in its frame, with no copy of the Decision on the way.
func (l *Limiter) enter(a *Admission, w http.ResponseWriter, r *http.Request) {
	err := l.check(a, w.Header(), r)
	switch {
	case a.admitted:
	case err != nil:
		a.status = l.errorAnswer(err).status
		l.writeError(w, r, err)
	default:
		a.status = refusedStatus(&a.Decision)
		l.writeDenied(w, r, a.Decision)
	}
}

// Check is [Limiter.Enter] without the answer, for adapters that render
// refusals their own way (echomw can return them as *echo.HTTPError). It
// runs the pipeline (skip, key, cost, limiter, failure mode, the shaping
// wait, the denial hold, the observer) and sets on h the headers Enter's
// answer would carry: the rate-limit headers, and Retry-After on a
// refusal or a store failure.
//
// When a.Admitted(), the caller goes on with a.Request() and calls a.End()
// when the request is done. Otherwise a.Status() is the status Enter would
// answer with, and either err is nil and a.Decision denied the request, or
// err says why no decision was made (the error an [ErrorHandler] gets).
func (l *Limiter) Check(h http.Header, r *http.Request) (a Admission, err error) {
	err = l.check(&a, h, r)
	switch {
	case a.admitted:
	case err != nil:
		a.status = l.writeErrorHeaders(h, err)
	default:
		a.status = refusedStatus(&a.Decision)
	}
	return a, err
}

// check runs the pipeline for r, sets the rate-limit headers on h and
// fills in *a, a zero Admission, but for its status; it returns why no
// decision was made, if none was.
func (l *Limiter) check(a *Admission, h http.Header, r *http.Request) error {
	var res pipeline.Result
	ctx := context.Context(requestContext{r})
	l.p.Run(ctx, r, l.limiter, 0, &res)
	a.request = r
	switch {
	case res.Skipped || res.FailedOpen:
		a.admitted = true
		return nil
	case res.Shadow:
		a.admitted, a.Decision = true, res.ShadowDecision()
		if l.o.HeadersSet && res.Err == nil {
			l.writeHeaders(h, &a.Decision, l.listOf(&res))
		}
		if l.o.RefundInner {
			a.request = r.WithContext(pipeline.Attach(r.Context(), l.limiter, &res))
		}
		return nil
	case res.Err != nil:
		return res.Err
	}
	l.writeHeaders(h, &res.Decision, l.listOf(&res))
	a.Decision, a.admitted = res.Decision, res.Decision.Allowed
	if a.admitted && l.o.RefundInner {
		a.request = r.WithContext(pipeline.Attach(r.Context(), l.limiter, &res))
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
