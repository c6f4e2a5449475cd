package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/floodgate/floodgate/core"
)

// ShadowDecision is the Decision whose fields a shadow request's response
// carries: a refusal's, less its RetryAfter (the request was not refused).
func (r *Result) ShadowDecision() core.Decision {
	d := r.Decision
	d.Allowed, d.RetryAfter = true, 0
	return d
}

// unshadow turns res.Decision, a shadow decision (Decision.Shadow: a
// core.Shadow decided, maybe inside another limiter), into the decision
// enforcing would have made, from which the request's outcome, its
// observer event and its response fields are made as for a
// *core.Shadow's own limiter, and marks res as a shadow request. A failure
// that the Shadow admitted fails res (admitted, as a shadow request is)
// with the generic error of its kind, since the limiter's own was not
// kept; unshadow reports false then.
func (p *Pipeline[R]) unshadow(ctx context.Context, res *Result) bool {
	d := &res.Decision
	res.Shadow = true
	switch d.Would {
	case core.OutcomeAllowed:
	case core.OutcomeShaped:
		d.Delay = d.WouldWait
	case core.OutcomeDenied:
		d.Allowed, d.RetryAfter = false, d.WouldWait
	default:
		p.fail(ctx, res, shadowErr(d.Would))
		return false
	}
	d.Shadow, d.Would, d.WouldWait = false, core.OutcomeAllowed, 0
	return true
}

// The errors that stand for those a core.Shadow inside another limiter
// admitted and dropped; Classify gives each the outcome it had.
var (
	errShadowCost   = fmt.Errorf("pipeline: a shadow limiter refused the cost (its error was not kept): %w", core.ErrInvalidCost)
	errShadowStore  = fmt.Errorf("pipeline: a shadow limiter's store failed (its error was not kept): %w", core.ErrStore)
	errShadowFailed = errors.New("pipeline: a shadow limiter failed (its error was not kept)")
)

func shadowErr(o core.Outcome) error {
	switch o {
	case core.OutcomeBadCost:
		return errShadowCost
	case core.OutcomeStoreError:
		return errShadowStore
	}
	return errShadowFailed
}
