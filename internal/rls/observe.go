package rls

import (
	"context"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/pipeline"
)

// observe tells the observer how a descriptor ended: admitted is the
// request's fate, which all its descriptors share.
func (s *Service) observe(ctx context.Context, it *item, admitted bool) {
	o := s.c.Observer
	if o == nil {
		return
	}
	cost := it.cost
	if it.probe {
		cost = 0
	}
	e := core.Event{
		Transport: Transport,
		Key:       it.key,
		Cost:      cost,
		Failure:   s.c.Failure,
		Decision:  it.d,
		Err:       it.err,
		Shadow:    it.rule.Shadow || s.c.Shadow,
		Admitted:  admitted || s.c.Shadow,
	}
	switch {
	case it.err != nil && !it.decided:
		e.Outcome = pipeline.Classify(it.err)
	case it.refused && !it.decided: // deny-all
		e.Outcome = core.OutcomeDenied
	case it.d.Allowed:
		e.Outcome = core.OutcomeAllowed
	default:
		e.Outcome = core.OutcomeDenied
	}
	o.Observe(ctx, e)
}
