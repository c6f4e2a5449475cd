package core

import "fmt"

// FailureMode says what a request gets when the store fails (errors.Is(err,
// ErrStore)). Every adapter applies it the same way. Key and cost failures
// are never admitted, whatever the mode: they are bugs or bad requests, not
// outages.
type FailureMode uint8

const (
	// FailClosed, the default, refuses the request: HTTP 429 with
	// Retry-After: 1, gRPC ResourceExhausted with a one-second RetryInfo.
	// Not 503 or Unavailable: the server is up, it only cannot account for
	// the request, and clients back off on 429 and RetryInfo while many
	// retry a 503 at once and load balancers count it against the
	// instance's health. It is the safe choice when the limiter protects
	// something that must not be overrun.
	FailClosed FailureMode = iota
	// FailOpen admits the request, without rate-limit fields since no
	// decision was made, and reports the failure to the Observer and the
	// error hook. Choose it when availability matters more than the limit.
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

// Valid reports whether m is a known mode.
func (m FailureMode) Valid() bool { return m <= FailOpen }

// HeaderStyle selects which rate-limit fields a limited response carries,
// as HTTP headers or gRPC metadata alike. Retry-After is sent on every
// denial whatever the style, because every client understands it.
type HeaderStyle uint8

const (
	// HeadersBoth, the default, sends the legacy and the IETF fields:
	// clients in the wild read the former, the draft is where they are
	// going.
	HeadersBoth HeaderStyle = iota
	// HeadersLegacy sends X-RateLimit-Limit, X-RateLimit-Remaining and
	// X-RateLimit-Reset (seconds from now until the quota is whole again).
	HeadersLegacy
	// HeadersIETF sends RateLimit-Policy and RateLimit as
	// draft-ietf-httpapi-ratelimit-headers-10 defines them.
	HeadersIETF
	// HeadersNone sends no rate-limit fields (Retry-After still goes out on
	// a denial).
	HeadersNone
)

// Legacy reports whether s sends the X-RateLimit-* fields.
func (s HeaderStyle) Legacy() bool { return s == HeadersBoth || s == HeadersLegacy }

// IETF reports whether s sends RateLimit-Policy and RateLimit.
func (s HeaderStyle) IETF() bool { return s == HeadersBoth || s == HeadersIETF }

// Valid reports whether s is a known style.
func (s HeaderStyle) Valid() bool { return s <= HeadersNone }

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
