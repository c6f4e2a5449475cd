package httpmw

import (
	"net/http"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/option"
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
	failure  FailureMode
	badKey   int
	problem  bool
	errs     option.Errors
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

// WithHeaders selects the rate-limit header style (default [HeadersBoth]).
func WithHeaders(s HeaderStyle) Option {
	return func(o *options) {
		if o.errs.Require(s.Valid(), "unknown header style %d; use HeadersBoth, HeadersLegacy, HeadersIETF or HeadersNone", int(s)) {
			o.headers = s
		}
	}
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
