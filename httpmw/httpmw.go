package httpmw

import (
	"context"
	"errors"
	"net/http"
	"time"

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
// [Limiter.Handler] is the net/http middleware and [Limiter.Admit] does the
// whole job for one request, so the Gin and Echo adapters are a few lines
// each. [Limiter.Decide] does it all but the answer, for adapters that
// render refusals their own way, with [Limiter.WriteDenied],
// [Limiter.WriteError] and [Limiter.WriteErrorHeaders] to answer as this
// package would.
//
// A Limiter is safe for concurrent use. Make it with [New].
type Limiter struct {
	limiter  core.Limiter
	p        *pipeline.Pipeline[*http.Request]
	o        options
	policies *fields.Cache[policy]
	badKey   answer
	// list is the default limiter's RateLimit-Policy list when it is a
	// stack (core.PolicyLister); lists holds those of WithLimiterFunc's.
	list  string
	lists fields.Lists
}

// New returns a Limiter that limits requests by key through lim. key is
// required, so every call site says what it limits by; package keyfunc has
// the usual ones, and any func(*http.Request) (string, error) will do.
// Options default to: cost 1 per request, both header styles, plain-text
// 429 denials, the default error answers described at [Limiter.WriteError],
// no skipped requests, [FailClosed], no observer.
func New(lim core.Limiter, key keyfunc.Func, opts ...Option) (*Limiter, error) {
	if lim == nil {
		return nil, errors.New("httpmw: nil core.Limiter; make one with core.New")
	}
	if key == nil {
		return nil, errors.New("httpmw: nil key function; pass one from package keyfunc, such as keyfunc.MustClientIP()")
	}
	l := &Limiter{limiter: lim}
	l.o.errs.Prefix = "httpmw: "
	l.o.badKey = http.StatusBadRequest
	if err := option.Apply(&l.o, &l.o.errs, opts); err != nil {
		return nil, err
	}
	l.p = pipeline.New(pipeline.Config[*http.Request]{
		Transport: "http",
		Key:       key,
		Cost:      l.o.cost,
		Skip:      l.o.skip,
		Failure:   l.o.failure,
		Observer:  l.o.observer,
		Select:    l.o.pick,
		Hold:      l.o.hold,
		Shadow:    l.o.shadow,
	})
	l.list = l.lists.Of(lim)
	problem := l.o.problem
	l.policies = fields.NewCache(func(lim core.Limit) *policy { return newPolicy(lim, problem) })
	l.badKey = newAnswer(l.o.badKey, "the request carries no usable rate-limit key")
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

// Middleware returns net/http middleware that limits every request it wraps
// by key through lim; see [New]. It suits routers' Use methods.
func Middleware(lim core.Limiter, key keyfunc.Func, opts ...Option) (func(http.Handler) http.Handler, error) {
	l, err := New(lim, key, opts...)
	if err != nil {
		return nil, err
	}
	return l.Handler, nil
}

// LimitByIP is the common case in one line: middleware that allows each
// client IP address requests per period, with a burst of requests, in
// memory. The client is the socket peer (no proxy header is believed; use
// [New] with keyfunc.ClientIP and keyfunc.WithTrustedProxies behind a
// proxy); IPv6 clients are grouped by /64. Everything else is [New]'s
// default, and opts are [New]'s options.
//
//	http.ListenAndServe(addr, httpmw.LimitByIP(100, time.Minute)(mux))
//
// It panics with a message saying what to fix when requests or period is
// not positive or an option is invalid: it is meant for set-up code.
func LimitByIP(requests int, period time.Duration, opts ...Option) func(http.Handler) http.Handler {
	lim, err := core.New(core.Limit{Events: requests, Period: period})
	if err != nil {
		panic("httpmw: LimitByIP: " + err.Error())
	}
	return MustNew(lim, keyfunc.MustClientIP(), opts...).Handler
}

// Wrap protects one handler with its own limiter: requests reach h only when
// lim admits them. See [New] for key and options.
//
//	login, err := httpmw.Wrap(loginLimiter, keyfunc.MustClientIP(), loginHandler)
func Wrap(lim core.Limiter, key keyfunc.Func, h http.Handler, opts ...Option) (http.Handler, error) {
	l, err := New(lim, key, opts...)
	if err != nil {
		return nil, err
	}
	return l.Handler(h), nil
}

// Handler returns next behind the limiter. The method value l.Handler is a
// func(http.Handler) http.Handler, the usual middleware shape. It runs
// [Limiter.Enter] and, when the request is admitted, next with
// [Admission.Request], then ends the admission however next ends (it
// returns or panics; a client that goes away cancels the request's
// context, which next is expected to heed).
func (l *Limiter) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var a Admission
		if !l.enter(w, r, &a) {
			return
		}
		if a.Decision.Lease == nil {
			// Nothing to end: no defer on the common path.
			next.ServeHTTP(w, a.request)
			return
		}
		defer a.End()
		next.ServeHTTP(w, a.request)
	})
}

// HandlerFunc is [Limiter.Handler] for a handler function: it decorates one
// endpoint.
func (l *Limiter) HandlerFunc(next func(http.ResponseWriter, *http.Request)) http.Handler {
	return l.Handler(http.HandlerFunc(next))
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
	// Decision when it was skipped, free or failed open; for a refused
	// one, the denial, or the zero Decision when no decision was made.
	Decision core.Decision
	request  *http.Request
	admitted bool
}

// Admitted reports whether the request may proceed.
func (a *Admission) Admitted() bool { return a.admitted }

// Request returns the request the rest of the chain must get: the one
// given, or under [WithRefundOnInnerRefusal] a copy whose context records
// this limiter's charge, so that a floodgate nested inside can give it
// back.
func (a *Admission) Request() *http.Request { return a.request }

// End finishes an admitted request: it gives back the concurrency slot of
// Decision.Lease, if any (see [core.Lease]). It is idempotent, and does
// nothing for a request without a lease, so adapters defer it
// unconditionally.
func (a *Admission) End() {
	if a.Decision.Lease != nil {
		pipeline.End(a.request.Context(), a.Decision.Lease)
	}
}

// Enter does the limiter's whole job for one request, as [Limiter.Admit]
// does, and returns the [Admission]. When it is not admitted, Enter has
// written the complete response (429, or an error answer) and the caller
// must not write more. When it is, the rate-limit headers are set on w
// (unless the request was skipped, free, or the store failed open), and the
// caller runs the next handler with a.Request() and then calls a.End(). A
// shaped request waits here for its turn, and a held denial
// ([WithDenialHold]) is held here.
func (l *Limiter) Enter(w http.ResponseWriter, r *http.Request) Admission {
	var a Admission
	l.enter(w, r, &a)
	return a
}

// Admit is [Limiter.Enter] for callers that cannot end the request: it
// reports whether the request may proceed. A concurrency slot it takes
// (Decision.Lease) is given back when the request's context ends, which
// net/http does when ServeHTTP returns; the charge is not recorded for
// floodgates nested inside ([WithRefundOnInnerRefusal] needs Enter's
// request). When it returns false it has written the complete response
// and the caller must not write more.
//
// An adapter is then:
//
//	if !l.Admit(w, r) { return }   // Gin: c.Abort()
//	next.ServeHTTP(w, r)           // Gin: c.Next()
func (l *Limiter) Admit(w http.ResponseWriter, r *http.Request) bool {
	a := l.Enter(w, r)
	if lease := a.Decision.Lease; a.admitted && lease != nil {
		ctx := r.Context()
		context.AfterFunc(ctx, func() { pipeline.End(ctx, lease) })
	}
	return a.admitted
}

// Check is [Limiter.Enter] without the answer, for adapters that render
// refusals their own way (echomw can return them as *echo.HTTPError). It
// runs the pipeline (skip, key, cost, limiter, failure mode, the shaping
// wait, the denial hold, the observer) and sets the rate-limit headers on
// h.
//
// When a.Admitted(), the caller goes on with a.Request() and calls a.End()
// when the request is done. Otherwise, either err is nil and a.Decision
// denied the request: Retry-After and the rate-limit headers are set on h,
// and the answer is [Limiter.WriteDenied]'s to give; or err says why no
// decision was made, h is untouched, and the answer is
// [Limiter.WriteError]'s (see also [Limiter.WriteErrorHeaders]).
func (l *Limiter) Check(h http.Header, r *http.Request) (a Admission, err error) {
	err = l.check(h, r, &a)
	return a, err
}

// Decide is [Limiter.Check] in the form it had before [Admission]: ok
// reports whether the request may proceed; d is then its decision (the
// zero Decision when skipped, free or failed open), and the caller must
// release d.Lease when the request is done (a nil Lease releases nothing).
// Otherwise, d and err are what [Limiter.Check] says. The charge is not
// recorded for nested floodgates.
func (l *Limiter) Decide(h http.Header, r *http.Request) (ok bool, d core.Decision, err error) {
	a, err := l.Check(h, r)
	return a.admitted, a.Decision, err
}
