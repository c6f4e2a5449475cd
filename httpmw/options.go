package httpmw

import (
	"net/http"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/option"
)

// Option configures a [Limiter] made by [New] (and the shorthands built on
// it). The options grpcmw has too (WithSkip, WithCost, WithFailureMode,
// WithHeaders, WithObserver, WithDenialHold, WithRefundOnInnerRefusal,
// WithLimiterFunc, WithShadow) have the same names and the same meaning
// there.
type Option func(*options)

type options struct {
	option.Adapter[*http.Request]
	deny    DenyHandler
	onError ErrorHandler
}

// DenyHandler answers a request the limiter refused. When it runs, the
// rate-limit headers and Retry-After are already set on w.Header(); it
// writes the status (normally 429) and the body. [ProblemDetails] is one.
type DenyHandler func(w http.ResponseWriter, r *http.Request, d core.Decision)

// ErrorHandler answers a request for which no decision could be made: the
// request carried no usable key, the key or cost function failed, the cost
// is invalid, the store failed (under core.FailClosed), or the request
// ended while it waited its turn. Tell the cases apart with errors.Is
// ([core.ErrBadKey], [core.ErrKey], [core.ErrCost], [core.ErrInvalidCost],
// [core.ErrStore], [core.ErrWaitCanceled]); [Admission.Status] is the
// default answer's status. Never write err's text to the client: it can
// carry internal details. A handler that answers a missing API key with
// 401 instead of 400:
//
//	httpmw.WithErrorHandler(func(w http.ResponseWriter, r *http.Request, err error) {
//		status := http.StatusInternalServerError
//		switch {
//		case errors.Is(err, core.ErrBadKey):
//			status = http.StatusUnauthorized
//		case errors.Is(err, core.ErrStore):
//			status = http.StatusServiceUnavailable
//		}
//		http.Error(w, http.StatusText(status), status)
//	})
type ErrorHandler func(w http.ResponseWriter, r *http.Request, err error)

// WithCost sets how many units each request spends (default: 1 for every
// request, without calling any function). 0 means the request is free: it
// passes, is not counted and gets no rate-limit headers. An error wrapping
// [core.ErrInvalidCost] means the request itself is at fault (answered
// 400); any other error, or a negative cost, means the function could not
// price it (500). [CostByContentLength] prices a request by its body.
func WithCost(f func(*http.Request) (int, error)) Option {
	return func(o *options) { o.Cost(f) }
}

// WithHeaders selects the rate-limit header style (default
// core.HeadersBoth; in shadow mode none unless this option is given).
// Retry-After is written on every denial whatever the style.
func WithHeaders(s core.HeaderStyle) Option {
	return func(o *options) { o.HeaderStyle(s) }
}

// WithShadow runs the limiter in shadow (dry-run) mode, to measure a new
// limit on real traffic before enforcing it: every request is decided,
// charged and observed as enforcing would (core.Event.Shadow), and goes on
// to the handler whatever the outcome, with no shaping wait and no held
// denial; neither a store error nor a bad key or cost stops it. The
// handler's [Admission].Decision is a shadow one (core.Decision.Shadow,
// Would, WouldWait). What enforcing would charge is charged: an admission
// as usual, a shaped one keeps its units reserved, a refusal and an error
// charge nothing, and [WithRefundOnInnerRefusal] records only the
// admissions enforcing would have made. Responses carry no rate-limit
// headers, so that clients see no sign of the shadow policy, unless
// [WithHeaders] is given too (never Retry-After). To enforce one limit and
// measure another, chain two middlewares, the shadow one outside.
func WithShadow() Option {
	return func(o *options) { o.Shadow() }
}

// WithDenyHandler replaces the default answer to a refused request (429
// with a plain-text body); [ProblemDetails] answers with an RFC 9457
// problem+json body instead.
func WithDenyHandler(h DenyHandler) Option {
	return func(o *options) {
		if o.Require(h != nil, "WithDenyHandler(nil); leave the option out for the default 429") {
			o.deny = h
		}
	}
}

// WithErrorHandler replaces the default answer to a request for which no
// decision could be made (see [Limiter.Enter] for the defaults).
func WithErrorHandler(h ErrorHandler) Option {
	return func(o *options) {
		if o.Require(h != nil, "WithErrorHandler(nil); leave the option out for the default answers") {
			o.onError = h
		}
	}
}

// WithSkip exempts requests for which f returns true (health checks, an
// allowlist): they are neither counted nor limited and get no rate-limit
// headers. f runs before anything else, on every request, so keep it
// cheap. A nil f skips nothing, which is the default here; it means the
// same in grpcmw.WithSkip and echomw.WithSkip.
func WithSkip(f func(*http.Request) bool) Option {
	return func(o *options) { o.Skip(f) }
}

// WithFailureMode sets what a request gets when the store fails
// (errors.Is(err, core.ErrStore)): core.FailClosed, the default, answers
// 429 with Retry-After: 1; core.FailOpen admits it and reports the failure
// to the observer.
func WithFailureMode(m core.FailureMode) Option {
	return func(o *options) { o.FailureMode(m) }
}

// WithObserver sets the observer every checked request is reported to,
// errors included (default: none, which costs nothing). See
// [core.Observer].
func WithObserver(obs core.Observer) Option {
	return func(o *options) { o.Observer(obs) }
}

// WithLimiterFunc chooses the limiter per request: f returns the limiter
// that decides r (a stricter policy for writes than for reads, a larger
// one for paid API keys), or nil when r is not limited. Give [New] a nil
// limiter with it. It runs after the skip function and before the key and
// cost functions, on every request, so keep it cheap: pick among limiters
// made once, never make one per request. Every limiter it returns gets the
// same key, cost, options and headers (a stack's policies are listed in
// RateLimit-Policy).
//
//	httpmw.WithLimiterFunc(func(r *http.Request) core.Limiter {
//		if r.Method == http.MethodGet || r.Method == http.MethodHead {
//			return reads
//		}
//		return writes
//	})
func WithLimiterFunc(f func(*http.Request) core.Limiter) Option {
	return func(o *options) { o.LimiterFunc(f) }
}

// WithDenialHold holds each refusal up to max before answering it, never
// longer than the refusal's RetryAfter, and less if the request's context
// ends first. Clients that retry as soon as they are refused (scripts,
// brute-force tools) then retry less often, without a wait ever keeping a
// client past the time its retry could succeed. At most concurrent
// refusals are held at once; beyond that they are answered at once, so
// that a flood of refused requests cannot tie up the server's goroutines
// and connections. Default: off (answered at once). The observer's
// [core.Event.Held] says how long a refusal was held.
//
// Only denials are held; errors and store failures are answered at once.
// max must be positive and concurrent at least 1.
func WithDenialHold(max time.Duration, concurrent int) Option {
	return func(o *options) { o.DenialHold(max, concurrent) }
}

// WithRefundOnInnerRefusal makes this limiter, when it sits outside
// another floodgate (a global limiter on the router, a stricter one on
// /login), give back what it charged a request that the inner one refuses:
// a client refused on /login then keeps its global quota. It records each
// admission's key, cost and limiter in the request's context; the inner
// floodgate, any of httpmw, ginmw, echomw or grpcmw, refunds every charge
// recorded there when it does not admit the request (a denial, a store
// failure under FailClosed, a bad key or cost), through core.Limiter.Refund,
// or by releasing the concurrency slot of a Decision.Lease. Default: off.
//
// Set it on the outer limiter; the inner needs nothing. It costs the
// admitted requests of the outer limiter one copy of the *http.Request and
// one small allocation (see the package documentation for the measured
// cost), which is why it is not the default. [Limiter.Handler],
// [Limiter.Enter] and [Limiter.Check] pass the recorded request on, as
// [Admission.Request]; ginmw and echomw do.
func WithRefundOnInnerRefusal() Option {
	return func(o *options) { o.RefundOnInnerRefusal() }
}
