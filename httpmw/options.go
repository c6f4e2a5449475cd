package httpmw

import (
	"net/http"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/option"
	"github.com/floodgate/floodgate/internal/pipeline"
)

// Option configures a [Limiter] made by [New] (and the shorthands built on
// it).
type Option func(*options)

type options struct {
	cost     CostFunc
	skip     func(*http.Request) bool
	deny     DenyHandler
	onError  ErrorHandler
	observer core.Observer
	headers  HeaderStyle
	// headersSet reports WithHeaders given, which shadow mode needs to
	// send the rate-limit headers at all.
	headersSet bool
	shadow     bool
	failure    FailureMode
	badKey     int
	problem    bool
	pick       func(*http.Request) core.Limiter
	hold       pipeline.Hold
	// refundInner records each admission's charge in the request's
	// context (WithRefundOnInnerRefusal).
	refundInner bool
	errs        option.Errors
}

// CostFunc says how many units a request spends. 0 means the request is
// free: it passes, is not counted and gets no rate-limit headers. An error
// wrapping [core.ErrInvalidCost] means the request itself is at fault
// (answered 400); any other error, or a negative cost, means the function
// could not price it (500).
type CostFunc func(*http.Request) (int, error)

// DenyHandler answers a request the limiter refused. When it runs, the
// rate-limit headers and Retry-After are already set on w.Header(); it
// writes the status (normally 429) and the body.
type DenyHandler func(w http.ResponseWriter, r *http.Request, d core.Decision)

// ErrorHandler answers a request for which no decision could be made: the
// request carried no usable key, the key or cost function failed, the cost
// is invalid, the store failed (under [FailClosed]), or the request ended
// while it waited its turn. Tell the cases apart with errors.Is
// ([core.ErrBadKey], [core.ErrKey], [core.ErrCost], [core.ErrInvalidCost],
// [core.ErrStore], [core.ErrWaitCanceled]) or with [Limiter.WriteErrorHeaders],
// which returns the default answer's status. Never write err's text to the
// client: it can carry internal details.
type ErrorHandler func(w http.ResponseWriter, r *http.Request, err error)

// HeaderStyle selects which rate-limit headers a limited response carries;
// it is [core.HeaderStyle], shared with grpcmw. Retry-After is written on
// every denial whatever the style.
type HeaderStyle = core.HeaderStyle

// The header styles (see core.HeaderStyle).
const (
	HeadersBoth   = core.HeadersBoth   // legacy and IETF headers (the default)
	HeadersLegacy = core.HeadersLegacy // X-RateLimit-Limit, -Remaining, -Reset
	HeadersIETF   = core.HeadersIETF   // RateLimit-Policy and RateLimit
	HeadersNone   = core.HeadersNone   // none (Retry-After still on denials)
)

// FailureMode says what a request gets when the store fails
// (errors.Is(err, core.ErrStore)); it is [core.FailureMode], shared with
// grpcmw.
type FailureMode = core.FailureMode

// The failure modes (see core.FailureMode).
const (
	FailClosed = core.FailClosed // 429 with Retry-After: 1 (the default)
	FailOpen   = core.FailOpen   // admit, report to the observer
)

// WithCost sets how many units each request spends (default: 1 for every
// request, without calling any function).
func WithCost(f CostFunc) Option {
	return func(o *options) {
		if o.errs.Require(f != nil, "WithCost(nil); leave the option out for a cost of 1") {
			o.cost = f
		}
	}
}

// WithHeaders selects the rate-limit header style (default [HeadersBoth];
// in shadow mode none unless this option is given).
func WithHeaders(s HeaderStyle) Option {
	return func(o *options) {
		if o.errs.Require(s.Valid(), "unknown header style %d; use HeadersBoth, HeadersLegacy, HeadersIETF or HeadersNone", int(s)) {
			o.headers, o.headersSet = s, true
		}
	}
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
	return func(o *options) { o.shadow = true }
}

// WithDenyHandler replaces the default answer to a refused request (429
// with a plain-text body, or problem+json with [WithProblemDetails]).
func WithDenyHandler(h DenyHandler) Option {
	return func(o *options) {
		if o.errs.Require(h != nil, "WithDenyHandler(nil); leave the option out for the default 429") {
			o.deny = h
		}
	}
}

// WithErrorHandler replaces the default answer to a request for which no
// decision could be made (see [Limiter.WriteError] for the defaults).
func WithErrorHandler(h ErrorHandler) Option {
	return func(o *options) {
		if o.errs.Require(h != nil, "WithErrorHandler(nil); leave the option out for the default answers") {
			o.onError = h
		}
	}
}

// WithSkip exempts requests for which f returns true (health checks, an
// allowlist): they are neither counted nor limited and get no rate-limit
// headers. Default: no request is skipped. f runs before the key function,
// on every request, so keep it cheap.
func WithSkip(f func(*http.Request) bool) Option {
	return func(o *options) {
		if o.errs.Require(f != nil, "WithSkip(nil); leave the option out to limit every request") {
			o.skip = f
		}
	}
}

// WithProblemDetails makes the default denial an RFC 9457
// application/problem+json body of the draft's "quota-exceeded" problem type,
// naming the violated policy, instead of plain text. A [WithDenyHandler]
// handler replaces both.
func WithProblemDetails() Option {
	return func(o *options) { o.problem = true }
}

// WithFailureMode sets what a request gets when the store fails (default
// [FailClosed]).
func WithFailureMode(m FailureMode) Option {
	return func(o *options) {
		if o.errs.Require(m.Valid(), "unknown failure mode %d; use FailClosed or FailOpen", int(m)) {
			o.failure = m
		}
	}
}

// WithObserver sets the observer every checked request is reported to
// (default: none, which costs nothing). See [core.Observer].
func WithObserver(obs core.Observer) Option {
	return func(o *options) {
		if o.errs.Require(obs != nil, "WithObserver(nil); leave the option out for no observer") {
			o.observer = obs
		}
	}
}

// WithBadKeyStatus sets the status of the default answer to a request that
// carries no usable key (a missing API-key header: [core.ErrBadKey]),
// 400 by default; 401 suits an API key that authenticates. It must be a
// 4xx status. Oversize key material ([core.ErrKeyTooLarge]) is always 431.
func WithBadKeyStatus(status int) Option {
	return func(o *options) {
		if o.errs.Require(status >= 400 && status <= 499 && http.StatusText(status) != "",
			"WithBadKeyStatus(%d): use a 4xx status such as 400 or 401", status) {
			o.badKey = status
		}
	}
}

// WithLimiterFunc chooses the limiter per request: f returns the limiter
// that decides r (a stricter policy for writes than for reads, a larger
// one for paid API keys), or nil for the one given to [New]. It runs after
// the key and cost functions, only for requests that are charged, so keep
// it cheap: pick among limiters made once, never make one per request.
// Every limiter it returns gets the same key, cost, options and headers
// (a stack's policies are listed in RateLimit-Policy).
//
//	httpmw.WithLimiterFunc(func(r *http.Request) core.Limiter {
//		if r.Method == http.MethodGet || r.Method == http.MethodHead {
//			return reads
//		}
//		return nil // writes: the limiter given to New
//	})
func WithLimiterFunc(f func(*http.Request) core.Limiter) Option {
	return func(o *options) {
		if o.errs.Require(f != nil, "WithLimiterFunc(nil); leave the option out to use the limiter given to New for every request") {
			o.pick = f
		}
	}
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
	return func(o *options) {
		h := pipeline.Hold{Max: max, Concurrent: concurrent}
		if p := h.Problem(); o.errs.Require(p == "", "WithDenialHold(%v, %d): %s", max, concurrent, p) {
			o.hold = h
		}
	}
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
// cost), which is why it is not the default. [Limiter.Admit] and
// [Limiter.Decide] cannot pass the recorded request on; [Limiter.Handler],
// [Limiter.Enter], ginmw and echomw do.
func WithRefundOnInnerRefusal() Option {
	return func(o *options) { o.refundInner = true }
}
