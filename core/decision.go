package core

import (
	"context"
	"time"
)

// Decision is what one check concluded. Adapters write headers and gRPC
// details from a Decision only, so every adapter answers alike.
type Decision struct {
	// (The flags come first, together, so that a Decision, which every
	// request copies a few times, spends no padding on them: 144 bytes.)

	// Allowed reports whether the request was admitted and its cost charged.
	// A shadow decision (Shadow) is always allowed, and charged only what
	// enforcing would have charged (see Would). Limiters make enforcing
	// decisions; shadow ones are made from them by an adapter in shadow
	// mode (httpmw.WithShadow, grpcmw.WithShadow) and reported to its
	// Observer.
	Allowed bool
	// Shadow marks a decision made in shadow (dry-run) mode by an
	// adapter: the request is admitted whatever the limit says
	// (Allowed is true, RetryAfter and Delay are zero), and Would and
	// WouldWait say what enforcing the limit would have done. Limit,
	// Remaining and ResetAfter are the limit's as usual. Adapters report
	// such a decision to their Observer as Event.Shadow, with the outcome
	// enforcing would have had.
	Shadow bool
	// Would is, on a shadow decision, what enforcing the limit would have
	// done: OutcomeAllowed; OutcomeShaped, a wait of WouldWait before the
	// request proceeds (its units are charged, as enforcing charges them);
	// OutcomeDenied, a refusal whose RetryAfter is WouldWait; OutcomeShed,
	// the same from an overload guard (Shed); or, when the
	// limiter failed and the adapter admitted all the same,
	// OutcomeBadCost, OutcomeStoreError or OutcomeError. Only the first
	// two charged anything: a caller that gives units back gives none
	// for the others (see [Limiter]). It is OutcomeAllowed, the zero
	// Outcome, on a decision that is not a shadow one.
	Would Outcome
	// Overflow reports that the key was decided against the limiter's
	// shared overflow state rather than its own: the in-memory table was
	// full, and every key that could have given up its place had spent
	// more than half its quota (see FullOverflow). Observers count it; a
	// steady rate of overflow decisions means the capacity is too small.
	Overflow bool
	// Shed reports a refusal by an overload guard (the overload package's
	// adaptive limits), not by a client's quota: the service is short of
	// capacity. Adapters answer it as unavailable (HTTP 503, gRPC
	// UNAVAILABLE) with the RetryAfter, unless told otherwise, and
	// observers see OutcomeShed.
	Shed bool
	// Leased reports a decision made in memory from a local quota lease
	// (redisstore's WithLocalQuota), with no round trip to the shared
	// store: its Remaining and ResetAfter, and a refusal's RetryAfter,
	// are approximate. Observers count it.
	Leased bool
	// Limit is the policy that decided: for stacked limits, the one that
	// denied, or the one with the least left.
	Limit Limit
	// Remaining is what can be spent right now: exactly Remaining more cost-1
	// requests at the same instant would be admitted, and the next would not.
	Remaining int
	// ResetAfter is the wait, with no further traffic, until the key's quota
	// is whole again.
	ResetAfter time.Duration
	// RetryAfter is zero when Allowed. When denied it is > 0 and exact:
	// retrying the same cost after exactly RetryAfter, with no other traffic,
	// is admitted.
	RetryAfter time.Duration
	// Delay is non-zero only for shaping limiters: the request is admitted
	// (its units are reserved) but must wait Delay before it proceeds.
	Delay time.Duration
	// WouldWait is, on a shadow decision, the wait enforcing would have
	// asked for: the Delay when Would is OutcomeShaped, the RetryAfter
	// when it is OutcomeDenied; zero otherwise.
	WouldWait time.Duration
	// Lease is non-zero only for an admission under a limit of requests
	// in flight: the request holds its slots until the Lease ends, which
	// the adapters do when the request ends. Ending the zero Lease is a
	// no-op.
	Lease Lease
}

// Limiter decides whether a key may spend cost units now. It is the one
// interface the adapters use; implementations are safe for concurrent use.
//
// Allow returns an error only when no decision could be made: an invalid
// request (errors.Is(err, ErrInvalidCost)), which charges nothing, or a store
// failure (errors.Is(err, ErrStore)). A denial is a Decision with Allowed
// false and a nil error.
//
// Refund gives back cost units that an earlier allowed Allow charged to key,
// for work that was reserved but not done (a cancelled shaped request, a
// stacked limit that another limit denied). Quota never rises above full.
// A limiter's decisions enforce: shadow (dry-run) mode belongs to the
// adapters, which never refund an admission that enforcing would not have
// made (Decision.Would), since it charged nothing.
type Limiter interface {
	Allow(ctx context.Context, key string, cost int) (Decision, error)
	Refund(ctx context.Context, key string, cost int) error
}
