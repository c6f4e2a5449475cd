package httpmw

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/keyfunc"
)

// Limiter puts a core.Limiter in front of HTTP handlers: it extracts a key
// and a cost from each request, asks the core.Limiter, writes the rate-limit
// headers and answers refusals and errors.
//
// [Limiter.Handler] is the net/http middleware and [Limiter.Admit] does the
// whole job for one request, so the Gin and Echo adapters are a few lines
// each. [Limiter.Decide] does it all but the answer, and the steps are also
// callable one by one ([Limiter.Check], [Limiter.WriteHeaders],
// [Limiter.WriteDenied], [Limiter.Wait], [Limiter.WriteError],
// [Limiter.WriteErrorHeaders]) for adapters that answer refusals their own
// way.
//
// A Limiter is safe for concurrent use. Make it with [New].
type Limiter struct {
	limiter  core.Limiter
	key      keyfunc.Func
	o        options
	policies policyCache
}

// New returns a Limiter that limits requests by key through lim. key is
// required, so every call site says what it limits by; package keyfunc has
// the usual ones, and any func(*http.Request) (string, error) will do. A
// key function's error, or an empty key, is answered by the error handler:
// a request that cannot be keyed is never "unlimited". Options default to:
// cost 1 per request, both header styles, plain-text 429 denials, the
// default error answers described at [Limiter.WriteError], no skipped
// requests, [FailClosed].
func New(lim core.Limiter, key keyfunc.Func, opts ...Option) (*Limiter, error) {
	if lim == nil {
		return nil, errors.New("httpmw: nil core.Limiter; make one with core.New")
	}
	if key == nil {
		return nil, errors.New("httpmw: nil key function; pass one from package keyfunc, such as keyfunc.MustClientIP()")
	}
	l := &Limiter{limiter: lim, key: key}
	for _, opt := range opts {
		if opt == nil {
			return nil, errors.New("httpmw: nil Option")
		}
		opt(&l.o)
	}
	if err := errors.Join(l.o.errs...); err != nil {
		return nil, err
	}
	l.o.errs = nil
	l.policies.problem = l.o.problem
	// Format the configured policy now, so the first request pays nothing.
	if c, ok := lim.(interface{ Limit() core.Limit }); ok {
		l.policies.get(c.Limit())
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
// func(http.Handler) http.Handler, the usual middleware shape.
func (l *Limiter) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if l.Admit(w, r) {
			next.ServeHTTP(w, r)
		}
	})
}

// HandlerFunc is [Limiter.Handler] for a handler function: it decorates one
// endpoint.
func (l *Limiter) HandlerFunc(next func(http.ResponseWriter, *http.Request)) http.Handler {
	return l.Handler(http.HandlerFunc(next))
}

// Admit does the limiter's whole job for one request and reports whether the
// request may proceed. When it returns false it has written the complete
// response (429, or an error answer) and the caller must not write more.
// When it returns true the rate-limit headers are set on w (unless the
// request was skipped or the store failed open) and the caller runs the
// next handler. A shaped request waits here for its turn.
//
// An adapter is then:
//
//	if !l.Admit(w, r) { return }   // Gin: c.Abort()
//	next.ServeHTTP(w, r)           // Gin: c.Next()
func (l *Limiter) Admit(w http.ResponseWriter, r *http.Request) bool {
	ok, d, err := l.Decide(w.Header(), r)
	switch {
	case ok:
		return true
	case err != nil:
		l.WriteError(w, r, err)
	default:
		l.WriteDenied(w, r, d)
	}
	return false
}

// Decide is [Limiter.Admit] without the answer, for adapters that render
// refusals their own way (echomw can return them as *echo.HTTPError). It
// runs [Limiter.Check], admits a store failure under [FailOpen], holds a
// shaped request until its turn, and sets the rate-limit headers on h.
//
// ok reports whether the request may proceed; d is then its decision (the
// zero Decision when skipped or failed open). Otherwise, either err is nil
// and d denied the request: Retry-After and the rate-limit headers are set
// on h, and the answer is [Limiter.WriteDenied]'s to give; or err says why
// no decision was made, h is untouched, and the answer is
// [Limiter.WriteError]'s (see also [Limiter.WriteErrorHeaders]).
func (l *Limiter) Decide(h http.Header, r *http.Request) (ok bool, d core.Decision, err error) {
	res, err := l.Check(r)
	if err != nil {
		if l.FailsOpen(err) {
			return true, core.Decision{}, nil
		}
		return false, core.Decision{}, err
	}
	if res.Skipped {
		return true, core.Decision{}, nil
	}
	if !res.Decision.Allowed {
		l.WriteHeaders(h, res.Decision)
		return false, res.Decision, nil
	}
	if res.Decision.Delay > 0 {
		if err := l.Wait(r.Context(), res); err != nil {
			return false, core.Decision{}, err
		}
	}
	l.WriteHeaders(h, res.Decision)
	return true, res.Decision, nil
}

// Result is what [Limiter.Check] concluded for one request. Key and Cost are
// kept so that a shaped request that gives up can be refunded.
type Result struct {
	// Decision is the core.Limiter's answer; the zero Decision when Skipped.
	Decision core.Decision
	// Key and Cost are what the limiter was asked about.
	Key  string
	Cost int
	// Skipped reports that the skip function exempted the request: it was
	// not counted and gets no headers.
	Skipped bool
}

// Check runs the skip, key and cost functions and asks the core.Limiter. It
// writes nothing. A denial is a Result with Decision.Allowed false and a nil
// error; an error means no decision was made (see [ErrorHandler] for the
// kinds).
func (l *Limiter) Check(r *http.Request) (Result, error) {
	if l.o.skip != nil && l.o.skip(r) {
		return Result{Skipped: true}, nil
	}
	key, err := l.key(r)
	if err != nil {
		return Result{}, fmt.Errorf("%w: %w", core.ErrKey, err)
	}
	if key == "" {
		return Result{}, core.ErrEmptyKey
	}
	cost := 1
	if l.o.cost != nil {
		if cost, err = l.o.cost(r); err != nil {
			return Result{Key: key}, fmt.Errorf("%w: %w", core.ErrCost, err)
		}
	}
	d, err := l.limiter.Allow(r.Context(), key, cost)
	if err != nil {
		return Result{Key: key, Cost: cost}, err
	}
	return Result{Decision: d, Key: key, Cost: cost}, nil
}

// FailsOpen reports whether a request whose check failed with err is
// admitted anyway: a store failure under [FailOpen]. Adapters that do not
// use [Limiter.Admit] call it before [Limiter.WriteError].
func (l *Limiter) FailsOpen(err error) bool {
	return l.o.failure == FailOpen && errors.Is(err, core.ErrStore) && !errors.Is(err, core.ErrKey) && !errors.Is(err, core.ErrCost)
}

// Wait holds a shaped request (res.Decision.Delay > 0) until its turn, and
// returns at once otherwise. If ctx ends first it refunds the reserved units
// and returns an error wrapping [core.ErrWaitCanceled] and the context's cause;
// a failed refund is joined to it.
func (l *Limiter) Wait(ctx context.Context, res Result) error {
	if res.Decision.Delay <= 0 {
		return nil
	}
	t := time.NewTimer(res.Decision.Delay)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		// The request's context is done, so refund under one that is not,
		// or a store that honours contexts would refuse the refund.
		rerr := l.limiter.Refund(context.WithoutCancel(ctx), res.Key, res.Cost)
		return errors.Join(fmt.Errorf("%w: %w", core.ErrWaitCanceled, context.Cause(ctx)), rerr)
	}
}

// Fixed answer bodies. They never carry error text, which can hold internal
// details (addresses, store names); the error handler sees the error.
var (
	bodyTooMany     = newFixedBody([]byte("Too Many Requests\n"))
	bodyBadRequest  = newFixedBody([]byte("Bad Request: the request's rate-limit cost can never be admitted\n"))
	bodyInternal    = newFixedBody([]byte("Internal Server Error\n"))
	bodyUnavailable = newFixedBody([]byte("Service Unavailable\n"))
)

// WriteDenied answers a refused request: the deny handler if one is set,
// otherwise status 429 with a plain-text body, or with an RFC 9457
// application/problem+json body under [WithProblemDetails]. Call
// [Limiter.WriteHeaders] first: WriteDenied does not set Retry-After or the
// rate-limit headers itself, so adapters that render denials their own way
// still get them from one place.
func (l *Limiter) WriteDenied(w http.ResponseWriter, r *http.Request, d core.Decision) {
	if l.o.deny != nil {
		l.o.deny(w, r, d)
		return
	}
	if l.o.problem {
		if p := l.policies.get(d.Limit); p.problem.bytes != nil {
			writeBody(w, http.StatusTooManyRequests, "application/problem+json", p.problem)
			return
		}
	}
	writeBody(w, http.StatusTooManyRequests, "text/plain; charset=utf-8", bodyTooMany)
}

// WriteError answers a request for which no decision could be made: the
// error handler if one is set, otherwise, by the first kind err matches:
//
//   - [core.ErrKey]: 500 "Internal Server Error". The key function failing is a
//     server bug or misconfiguration (say, an untrusted proxy header setup),
//     and its text can hold internals, so it is not shown.
//   - [core.ErrInvalidCost]: 400. The cost comes from the request (its size,
//     its weight), and a cost that can never be admitted will never succeed
//     however long the client waits: a 429 would promise a retry that
//     cannot work, and a 5xx would invite retries. 400 says "change the
//     request". A cost function that returns 0 or less for a request is a
//     bug that this answer surfaces quickly in tests.
//   - [core.ErrCost]: 500, as for the key function.
//   - [core.ErrStore] (only reached under [FailClosed]): 429 with
//     Retry-After: 1 and the plain-text 429 body, but no rate-limit headers,
//     since no quota was read. Not 503: the server is up, it only cannot
//     account for the request, and clients and SDKs back off on 429 +
//     Retry-After while many retry a 503 at once and load balancers count
//     it against the instance's health.
//   - [core.ErrWaitCanceled]: 503 "Service Unavailable"; the client has usually
//     gone already.
//   - anything else: 500.
func (l *Limiter) WriteError(w http.ResponseWriter, r *http.Request, err error) {
	if l.o.onError != nil {
		l.o.onError(w, r, err)
		return
	}
	status := l.WriteErrorHeaders(w.Header(), err)
	body := bodyInternal
	switch status {
	case http.StatusBadRequest:
		body = bodyBadRequest
	case http.StatusTooManyRequests:
		body = bodyTooMany
	case http.StatusServiceUnavailable:
		body = bodyUnavailable
	}
	writeBody(w, status, "text/plain; charset=utf-8", body)
}

// WriteErrorHeaders returns the status of [Limiter.WriteError]'s default
// answer to err and sets on h the headers that answer carries besides its
// body (Retry-After: 1 for a store failure). Adapters that render errors
// their own way call it, so that they answer with the same status and
// headers.
func (l *Limiter) WriteErrorHeaders(h http.Header, err error) (status int) {
	switch {
	case errors.Is(err, core.ErrKey):
		return http.StatusInternalServerError
	case errors.Is(err, core.ErrInvalidCost):
		return http.StatusBadRequest
	case errors.Is(err, core.ErrCost):
		return http.StatusInternalServerError
	case errors.Is(err, core.ErrStore):
		h[hdrRetryAfter] = []string{"1"}
		return http.StatusTooManyRequests
	case errors.Is(err, core.ErrWaitCanceled):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// writeBody writes a complete fixed response, as http.Error does, but with
// an exact Content-Length and the given type. Its header values come from a
// slab too: denials are the hot path when a client floods.
func writeBody(w http.ResponseWriter, status int, contentType string, body fixedBody) {
	h := w.Header()
	vals, _ := take(3, nil)
	vals[0], vals[1], vals[2] = contentType, body.length, "nosniff"
	h["Content-Type"] = vals[0:1:1]
	h["Content-Length"] = vals[1:2:2]
	h["X-Content-Type-Options"] = vals[2:3:3]
	w.WriteHeader(status)
	_, _ = w.Write(body.bytes)
}

// fixedBody is a response body with its Content-Length formatted once.
type fixedBody struct {
	bytes  []byte
	length string
}

func newFixedBody(b []byte) fixedBody { return fixedBody{b, strconv.Itoa(len(b))} }
