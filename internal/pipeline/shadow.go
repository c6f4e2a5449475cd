package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/floodgate/floodgate/core"
)

// ShadowDecision is Decision as a shadow one, the Decision a shadow
// request's caller gets and whose rate-limit fields its response carries
// when asked to: admitted (Allowed, Shadow), with no RetryAfter or Delay,
// and Would and WouldWait saying what enforcing would have done (for a
// failure, the kind of failure it was, with the zero Decision otherwise).
func (r *Result) ShadowDecision() core.Decision {
	d := r.Decision
	switch {
	case r.Err != nil:
		d.Would = r.Outcome
	case !d.Allowed:
		d.Would, d.WouldWait = core.OutcomeDenied, d.RetryAfter
	case d.Delay > 0:
		d.Would, d.WouldWait = core.OutcomeShaped, d.Delay
	default:
		d.Would = core.OutcomeAllowed
	}
	d.Allowed, d.Shadow, d.RetryAfter, d.Delay = true, true, 0, 0
	return d
}

// unshadow turns res.Decision, a shadow decision the limiter returned
// (Decision.Shadow), into the decision enforcing would have made, from
// which the request's outcome, its observer event and its response fields
// are made as in shadow mode, and marks res as a shadow request. A failure
// that the limiter admitted fails res (admitted, as a shadow request is)
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

// The errors that stand for those a limiter returning shadow decisions
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
