package core

import (
	"context"
	"fmt"
	"time"
)

// Outcome is how one request through an adapter ended, as an [Observer]
// hears of it.
type Outcome uint8

const (
	// OutcomeAllowed: the limiter admitted the request and charged its cost.
	OutcomeAllowed Outcome = iota
	// OutcomeShaped: admitted with a Delay, which the request waited out.
	OutcomeShaped
	// OutcomeDenied: the limiter refused the request; nothing was charged.
	OutcomeDenied
	// OutcomeBadKey: the request carried no usable key (ErrBadKey): the
	// client's fault, answered 400 (431 for oversize key material) or
	// InvalidArgument.
	OutcomeBadKey
	// OutcomeBadCost: the request's cost can never be admitted, or the cost
	// function found the request malformed (ErrInvalidCost): the client's
	// fault, answered 400 or 413, or InvalidArgument.
	OutcomeBadCost
	// OutcomeError: a server-side fault before any decision: the key or
	// cost function failed, or the limiter failed in a way it does not
	// classify. Answered 500 or Internal.
	OutcomeError
	// OutcomeStoreError: the store failed (ErrStore); Event.Failure says
	// which failure mode was applied and Event.Admitted whether the request
	// went through.
	OutcomeStoreError
	// OutcomeCanceled: a shaped request's context ended while it waited;
	// its units were refunded (ErrWaitCanceled).
	OutcomeCanceled
	// OutcomeShed: an overload guard refused the request (Decision.Shed):
	// the service, not the client's quota, was short; nothing was charged.
	OutcomeShed
)

// String returns the outcome's name, fit for a metric label.
func (o Outcome) String() string {
	switch o {
	case OutcomeAllowed:
		return "allowed"
	case OutcomeShaped:
		return "shaped"
	case OutcomeDenied:
		return "denied"
	case OutcomeBadKey:
		return "bad_key"
	case OutcomeBadCost:
		return "bad_cost"
	case OutcomeError:
		return "error"
	case OutcomeStoreError:
		return "store_error"
	case OutcomeCanceled:
		return "canceled"
	case OutcomeShed:
		return "shed"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Event is one request's outcome, as the adapters report it to an
// [Observer]. It is passed by value and must not be kept past the call
// except by copying what is needed.
type Event struct {
	// Transport is the adapter family: "http" (net/http, Gin, Echo),
	// "grpc", or "envoy-rls" (the Envoy rate-limit service,
	// cmd/floodgate-ratelimit).
	Transport string
	// Outcome is how the request ended.
	Outcome Outcome
	// Admitted reports whether the request went on to the handler:
	// allowed, shaped, or a store error under FailOpen.
	Admitted bool
	// Failure is the failure mode applied to a store error.
	Failure FailureMode
	// Key is the request's rate-limit key ("" when none was found). It can
	// be personal data (an IP address, an API key): never use it as a
	// metric label, and redact it before it leaves the process.
	Key string
	// Cost is what the request was to spend (0 before the cost was known).
	Cost int
	// Latency is how long the limiter took to answer (Limiter.Allow, a
	// store round trip included), measured on a random sample of about one
	// request in 8, because reading the clock twice costs as much as an
	// in-memory decision; 0 on the others, and when no limiter was asked
	// (a bad key, a key or cost function that failed). It excludes the
	// shaping wait and the denial hold. A histogram of the non-zero values
	// has the shape of the whole traffic's.
	Latency time.Duration
	// Decision is the limiter's answer for allowed, shaped and denied
	// requests; Decision.Overflow tells that the shared overflow state
	// decided. It is the zero Decision otherwise.
	Decision Decision
	// Err is why no decision was made, for the error outcomes; nil
	// otherwise. Its text may hold internal details.
	Err error
	// Held is how long a denial was held before it was answered, when the
	// adapter holds denials (httpmw.WithDenialHold, grpcmw.WithDenialHold):
	// min(the hold, Decision.RetryAfter), or less if the request ended
	// first; 0 when the denial was answered at once (holding is off, or
	// too many denials were held already).
	Held time.Duration
	// Shadow reports that the adapter ran in shadow (dry-run) mode
	// (httpmw.WithShadow, grpcmw.WithShadow): the decision
	// was made and charged as enforcing would and Outcome says what
	// enforcing it would have done (OutcomeDenied for a refusal), but the
	// request went on to the handler all the same (Admitted is true).
	// Decision is then the decision enforcing would have made (Allowed
	// false for a refusal, with its RetryAfter; a shaped one's Delay), not
	// the shadow one the limiter returned.
	Shadow bool
}

// Observer hears of every request an adapter checks: admissions, denials,
// shaping, the shared overflow state in use, bad keys and costs, server
// faults and store failures with the failure mode applied. Metrics, logs
// and tracing hang on it.
//
// Observe runs on the request's goroutine, after the decision and before
// the answer is written, so it must be fast and safe for concurrent use;
// hand slow work to another goroutine. Adapters call no observer when none
// is configured, and so pay nothing for the feature.
type Observer interface {
	Observe(ctx context.Context, e Event)
}

// ObserverFunc adapts a function to an [Observer].
type ObserverFunc func(ctx context.Context, e Event)

// Observe calls f.
func (f ObserverFunc) Observe(ctx context.Context, e Event) { f(ctx, e) }

// JoinObservers returns an Observer that passes every event to each of
// obs in turn (metrics, logs and the debug page at once); nil ones are
// left out. It returns nil when none is left, so that adapters given the
// result still pay nothing, and the one Observer itself when one is.
func JoinObservers(obs ...Observer) Observer {
	var all []Observer
	for _, o := range obs {
		if o != nil {
			all = append(all, o)
		}
	}
	switch len(all) {
	case 0:
		return nil
	case 1:
		return all[0]
	}
	return ObserverFunc(func(ctx context.Context, e Event) {
		for _, o := range all {
			o.Observe(ctx, e)
		}
	})
}
