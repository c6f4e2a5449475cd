package core

import "context"

// Shadow runs a limiter in shadow (dry-run) mode, to measure a new limit
// on real traffic before enforcing it. Give it to an adapter in place of
// the limiter: every request is decided and charged as usual, and the
// adapter's Observer hears of the decision (Event.Shadow is set, and
// Outcome is what enforcing would have done, OutcomeDenied for a refusal),
// but the request always goes on to its handler: a refusal is never
// answered, a shaping delay never waited, a denial never held, and a bad
// key or cost, a failing key or cost function and a store error never stop
// the request, whatever the failure mode. A concurrency limit's Lease is
// taken and released as usual, so that the in-flight count is measured.
//
// Without Headers the response carries none of the limiter's rate-limit
// fields, so clients see no sign of the shadow policy; with Headers it
// carries what enforcing would send, less Retry-After (the request was
// not refused). To enforce one limit and measure another, put two
// adapters in a chain, the shadow one outside.
//
// A Shadow passes Allow and Refund straight to Limiter; it is safe for
// concurrent use when Limiter is. Its fields must not change once it is
// in use.
type Shadow struct {
	// Limiter decides; it must not be nil.
	Limiter Limiter
	// Headers sends the shadow decisions' rate-limit fields.
	Headers bool
}

var _ PolicyLister = (*Shadow)(nil)

// Allow asks s.Limiter.
func (s *Shadow) Allow(ctx context.Context, key string, cost int) (Decision, error) {
	return s.Limiter.Allow(ctx, key, cost)
}

// Refund gives cost units back to key through s.Limiter.
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
