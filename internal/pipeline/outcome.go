package pipeline

import (
	"context"
	"errors"

	"github.com/floodgate/floodgate/core"
)

// fail finishes a request for which no decision was made. A store error
// under FailOpen is admitted.
func (p *Pipeline[R]) fail(ctx context.Context, res *Result, err error) {
	res.Decision = core.Decision{}
	res.Outcome = Classify(err)
	res.Err = err
	res.FailedOpen = res.Outcome == core.OutcomeStoreError && p.c.Failure == core.FailOpen
	p.observe(ctx, res, res.FailedOpen || res.Shadow, err)
}

func (p *Pipeline[R]) observe(ctx context.Context, res *Result, admitted bool, err error) {
	if p.c.Observer == nil {
		return
	}
	p.c.Observer.Observe(ctx, core.Event{
		Transport: p.c.Transport,
		Outcome:   res.Outcome,
		Admitted:  admitted && (res.Shadow || res.Outcome != core.OutcomeDenied && res.Outcome != core.OutcomeShed),
		Failure:   p.c.Failure,
		Key:       res.Key,
		Cost:      res.Cost,
		Latency:   res.Latency,
		Decision:  res.Decision,
		Err:       err,
		Held:      res.Held,
		Shadow:    res.Shadow,
	})
}

// Classify says which outcome an error of the pipeline, or one a
// core.Limiter returned, stands for. Errors an adapter's error handler
// receives classify the same way, so a custom handler can call it too:
//
//   - core.ErrWaitCanceled: OutcomeCanceled;
//   - core.ErrKey: OutcomeBadKey if it also matches core.ErrBadKey (the
//     request carries no usable key), else OutcomeError (the key function
//     failed: the server's fault);
//   - core.ErrCost: OutcomeBadCost if it also matches core.ErrInvalidCost
//     (the cost function found the request malformed), else OutcomeError;
//   - core.ErrInvalidCost: OutcomeBadCost (core.ErrCostTooLarge: no wait
//     can help);
//   - core.ErrStore: OutcomeStoreError;
//   - anything else: OutcomeError.
func Classify(err error) core.Outcome {
	switch {
	case errors.Is(err, core.ErrWaitCanceled):
		return core.OutcomeCanceled
	case errors.Is(err, core.ErrKey):
		if errors.Is(err, core.ErrBadKey) {
			return core.OutcomeBadKey
		}
		return core.OutcomeError
	case errors.Is(err, core.ErrCost):
		if errors.Is(err, core.ErrInvalidCost) {
			return core.OutcomeBadCost
		}
		return core.OutcomeError
	case errors.Is(err, core.ErrInvalidCost):
		return core.OutcomeBadCost
	case errors.Is(err, core.ErrStore):
		return core.OutcomeStoreError
	}
	return core.OutcomeError
}
