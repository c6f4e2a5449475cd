package httpmw

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/floodgate/floodgate/core"
)

// Option configures a [Limiter] made by [New] (and the shorthands built on
// it).
type Option func(*options)

type options struct {
	cost    CostFunc
	skip    func(*http.Request) bool
	deny    DenyHandler
	onError ErrorHandler
	headers HeaderStyle
	failure FailureMode
	problem bool
	errs    []error // options given invalid arguments; New reports them
}

// CostFunc says how many units a request spends. It returns an error
// wrapping [core.ErrInvalidCost] when the request itself is at fault (it is
// answered 400), any other error when the function could not decide (500).
type CostFunc func(*http.Request) (int, error)

// DenyHandler answers a request the limiter refused. When it runs, the
// rate-limit headers and Retry-After are already set on w.Header(); it
// writes the status (normally 429) and the body.
type DenyHandler func(w http.ResponseWriter, r *http.Request, d core.Decision)

// ErrorHandler answers a request for which no decision could be made: the
// key or cost function failed, the cost is invalid, the store failed (under
// [FailClosed]), or the request ended while it waited its turn. Tell the
// cases apart with errors.Is: [core.ErrKey], [core.ErrCost], [core.ErrInvalidCost],
// [core.ErrStore], [core.ErrWaitCanceled]. Never write err's text to the client:
// it can carry internal details.
type ErrorHandler func(w http.ResponseWriter, r *http.Request, err error)

// HeaderStyle selects which rate-limit headers a limited response carries.
// Retry-After is written on every denial whatever the style, because it is
// plain HTTP that every client understands.
type HeaderStyle int

const (
	// HeadersBoth, the default, writes the legacy and the IETF headers:
	// clients in the wild read the former, the draft is where they are
	// going.
	HeadersBoth HeaderStyle = iota
	// HeadersLegacy writes X-RateLimit-Limit, X-RateLimit-Remaining and
	// X-RateLimit-Reset (seconds from now until the quota is whole again).
	HeadersLegacy
	// HeadersIETF writes RateLimit-Policy and RateLimit as
	// draft-ietf-httpapi-ratelimit-headers-10 defines them.
	HeadersIETF
	// HeadersNone writes no rate-limit headers (Retry-After still goes out
	// on a denial).
	HeadersNone
)

func (s HeaderStyle) legacy() bool { return s == HeadersBoth || s == HeadersLegacy }
func (s HeaderStyle) ietf() bool   { return s == HeadersBoth || s == HeadersIETF }

// String returns the style's name.
func (s HeaderStyle) String() string {
	switch s {
	case HeadersBoth:
		return "both"
	case HeadersLegacy:
		return "legacy"
	case HeadersIETF:
		return "ietf"
	case HeadersNone:
		return "none"
	}
	return fmt.Sprintf("HeaderStyle(%d)", int(s))
}

// FailureMode says what a request gets when the store fails
// (errors.Is(err, core.ErrStore)). Key and cost failures are never admitted,
// whatever the mode: they are bugs or bad requests, not outages.
type FailureMode int

const (
	// FailClosed, the default, refuses the request through the error
	// handler; the default handler answers 429 with Retry-After: 1 (see
	// [Limiter.WriteError] for why 429 and not 503). It is the safe choice
	// when the limiter protects something that must not be overrun.
	FailClosed FailureMode = iota
	// FailOpen admits the request, without rate-limit headers since no
	// decision was made, and does not call the error handler. Choose it when
	// availability matters more than the limit.
	FailOpen
)

// String returns the mode's name.
func (m FailureMode) String() string {
	switch m {
	case FailClosed:
		return "fail-closed"
	case FailOpen:
		return "fail-open"
	}
	return fmt.Sprintf("FailureMode(%d)", int(m))
}

// WithCost sets how many units each request spends (default: 1 for every
// request, without calling any function).
func WithCost(f CostFunc) Option {
	return func(o *options) {
		if f == nil {
			o.errs = append(o.errs, errors.New("httpmw: WithCost(nil); leave the option out for a cost of 1"))
		}
		o.cost = f
	}
}

// WithHeaders selects the rate-limit header style (default [HeadersBoth]).
func WithHeaders(s HeaderStyle) Option {
	return func(o *options) {
		if s < HeadersBoth || s > HeadersNone {
			o.errs = append(o.errs, fmt.Errorf("httpmw: unknown header style %d; use HeadersBoth, HeadersLegacy, HeadersIETF or HeadersNone", int(s)))
		}
		o.headers = s
	}
}

// WithDenyHandler replaces the default answer to a refused request (429
// with a plain-text body, or problem+json with [WithProblemDetails]).
func WithDenyHandler(h DenyHandler) Option {
	return func(o *options) {
		if h == nil {
			o.errs = append(o.errs, errors.New("httpmw: WithDenyHandler(nil); leave the option out for the default 429"))
		}
		o.deny = h
	}
}

// WithErrorHandler replaces the default answer to a request for which no
// decision could be made (see [Limiter.WriteError] for the defaults).
func WithErrorHandler(h ErrorHandler) Option {
	return func(o *options) {
		if h == nil {
			o.errs = append(o.errs, errors.New("httpmw: WithErrorHandler(nil); leave the option out for the default answers"))
		}
		o.onError = h
	}
}

// WithSkip exempts requests for which f returns true (health checks, an
// allowlist): they are neither counted nor limited and get no rate-limit
// headers. Default: no request is skipped. f runs before the key function,
// on every request, so keep it cheap.
func WithSkip(f func(*http.Request) bool) Option {
	return func(o *options) {
		if f == nil {
			o.errs = append(o.errs, errors.New("httpmw: WithSkip(nil); leave the option out to limit every request"))
		}
		o.skip = f
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
		if m != FailClosed && m != FailOpen {
			o.errs = append(o.errs, fmt.Errorf("httpmw: unknown failure mode %d; use FailClosed or FailOpen", int(m)))
		}
		o.failure = m
	}
}
