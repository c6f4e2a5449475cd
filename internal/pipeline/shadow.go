package pipeline

import "github.com/floodgate/floodgate/core"

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
	case d.Shed:
		d.Would, d.WouldWait = core.OutcomeShed, d.RetryAfter
	case !d.Allowed:
		d.Would, d.WouldWait = core.OutcomeDenied, d.RetryAfter
	case d.Delay > 0:
		d.Would, d.WouldWait = core.OutcomeShaped, d.Delay
	default:
		d.Would = core.OutcomeAllowed
	}
	d.Allowed, d.Shadow, d.Shed, d.RetryAfter, d.Delay = true, true, false, 0, 0
	return d
}
