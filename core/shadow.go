package core

import (
	"context"
	"errors"
)

// Shadow runs a limiter in shadow (dry-run) mode, to measure a new limit
// on real traffic before enforcing it. A Shadow never refuses, never asks
// for a wait and never fails, whoever calls it: an adapter, fallback,
// httpclient's LimitedTransport, [Reserve] or your own code. Each of its
// decisions is a shadow one ([Decision].Shadow): Allowed, with no
// RetryAfter or Delay, and Decision.Would and WouldWait say what enforcing
// Limiter would have done.
//
// Allow asks Limiter and charges what enforcing would charge, so that the
// shadow state is the one the enforced limit would have on the same
// traffic:
//   - an admission is charged as usual; its Lease (a concurrency limit) is
//     the caller's to release when the request ends, as ever, so that the
//     requests in flight are counted;
//   - a shaped admission keeps its units reserved, as enforcing would, but
//     nobody waits: Delay is 0, Would is OutcomeShaped and WouldWait the
//     Delay it had;
//   - a refusal charged nothing: Would is OutcomeDenied and WouldWait its
//     RetryAfter;
//   - an error (a store failure, an invalid cost) is an admission that
//     charged nothing, Would saying which kind of failure it was; the
//     error itself is dropped.
//
// Refund passes to Limiter: it gives back units that Allow charged. A
// shadow admission that enforcing would not have made (Would is neither
// OutcomeAllowed nor OutcomeShaped) charged nothing, and refunding it would
// give the limit units it never took, so that it would under-count the
// refusals it is meant to measure: Reserve's Cancel and the adapters'
// refunds skip such admissions, and code that calls Refund itself must do
// the same.
//
// Given to an adapter (httpmw, ginmw, echomw, grpcmw: as the limiter, or
// the one WithLimiterFunc chooses), a Shadow is known before any decision:
// the adapter asks Limiter itself, its Observer hears of every request
// with Event.Shadow set and Outcome what enforcing would have done
// (OutcomeDenied for a refusal, the limiter's own error for a failure),
// and a bad key or cost and a failing key or cost function never stop the
// request either, whatever the failure mode. A Shadow inside another
// limiter (fallback's primary, a wrapper of your own) is known to the
// adapter by its decisions: they are observed the same way, with a generic
// error for a failure, but a key or cost failure before the limiter is
// asked is answered as without shadow mode, and no rate-limit fields are
// sent.
//
// Without Headers the response carries none of the limiter's rate-limit
// fields, so clients see no sign of the shadow policy; with Headers it
// carries what enforcing would send, less Retry-After (the request was
// not refused). To enforce one limit and measure another, put two
// adapters in a chain, the shadow one outside.
//
// A Shadow is safe for concurrent use when Limiter is. Its fields must not
// change once it is in use.
type Shadow struct {
	// Limiter decides; it must not be nil.
	Limiter Limiter
	// Headers sends the shadow decisions' rate-limit fields.
	Headers bool
}

var _ PolicyLister = (*Shadow)(nil)

// Allow asks s.Limiter and returns its answer as a shadow decision: always
// allowed, never delayed, never an error.
func (s *Shadow) Allow(ctx context.Context, key string, cost int) (Decision, error) {
	d, err := s.Limiter.Allow(ctx, key, cost)
	if err != nil {
		return Decision{Allowed: true, Shadow: true, Would: failed(err)}, nil
	}
	return d.shadow(), nil
}

// Refund gives cost units back to key through s.Limiter. Call it only for
// an admission that charged them: see [Shadow].
func (s *Shadow) Refund(ctx context.Context, key string, cost int) error {
	return s.Limiter.Refund(ctx, key, cost)
}

// Policies returns s.Limiter's policies when it enforces several limits
// (a [PolicyLister]), and nil otherwise.
func (s *Shadow) Policies() []Limit {
	if pl, ok := s.Limiter.(PolicyLister); ok {
		return pl.Policies()
	}
	return nil
}

// shadow returns d as a shadow decision: admitted, with what enforcing
// would have done in Would and WouldWait. A shadow decision (a Shadow
// inside a Shadow) is returned as it is.
func (d Decision) shadow() Decision {
	if d.Shadow {
		return d
	}
	switch {
	case !d.Allowed:
		d.Would, d.WouldWait = OutcomeDenied, d.RetryAfter
	case d.Delay > 0:
		d.Would, d.WouldWait = OutcomeShaped, d.Delay
	}
	d.Allowed, d.Shadow, d.RetryAfter, d.Delay = true, true, 0, 0
	return d
}

// failed is the outcome a limiter's error stands for, as the adapters
// classify it.
func failed(err error) Outcome {
	switch {
	case errors.Is(err, ErrInvalidCost):
		return OutcomeBadCost
	case errors.Is(err, ErrStore):
		return OutcomeStoreError
	}
	return OutcomeError
}

// charged reports whether d charged its cost: an admission, except a
// shadow one that enforcing would not have made. Only a charged decision
// may be refunded.
func (d *Decision) charged() bool {
	return d.Allowed && (!d.Shadow || d.Would == OutcomeAllowed || d.Would == OutcomeShaped)
}
