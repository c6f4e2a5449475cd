package rls

import (
	"context"
	"errors"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/pipeline"
)

// Multi decides several keys, each under its own limits, all or nothing:
// every charge's limits admit it and every charge is made, or none is.
// cmd/floodgate-ratelimit makes one of redisstore.Multi.
//
// The service gives it the enforced descriptors of a request whose rules
// are neither in quota mode nor deny all, none of them giving hits back
// (is_negative_hits); the others, and shadow rules, are decided by Store's
// limiters as without a Multi. So it must keep each key's state where the
// limiter Store makes for the same limits does.
type Multi interface {
	// AllowAll returns the decisions in the charges' order, each as the
	// limiter of the charge's limits would make it on that state (an
	// admission in a call another charge refuses reports the charge it
	// would have made). A store failure is an error matched by
	// errors.Is(err, core.ErrStore), which the failure mode answers; any
	// other error (a charge it cannot decide) sends the request to Store's
	// limiters, one at a time.
	AllowAll(ctx context.Context, charges []Charge) ([]core.Decision, error)
}

// Charge is one key of a Multi's call: its limits (a rule's) and its cost.
type Charge struct {
	Key    string
	Limits []core.Limit
	Cost   int
}

// enforceMulti decides the enforced descriptors with the Multi, as
// enforce does a limiter at a time, and reports whether the request is
// refused; ok is false when it cannot (enforce decides the request).
func (s *Service) enforceMulti(ctx context.Context, items []item) (refused, ok bool) {
	var buf [8]Charge
	charges, at := buf[:0], make([]int, 0, len(items))
	for i := range items {
		it := &items[i]
		if !it.limited() || it.rule.Shadow {
			continue
		}
		if it.c == nil || it.rule.Quota || it.back {
			return false, false
		}
		charges = append(charges, Charge{Key: it.key, Limits: it.rule.Limits, Cost: it.cost})
		at = append(at, i)
	}
	if len(charges) == 0 {
		return false, true
	}
	ds, err := s.c.Multi.AllowAll(ctx, charges)
	if err != nil && !errors.Is(err, core.ErrStore) && ctx.Err() == nil {
		return false, false
	}
	if err != nil {
		refused = pipeline.Classify(err) != core.OutcomeStoreError || s.c.Failure != core.FailOpen
		for _, i := range at {
			items[i].err, items[i].refused = err, refused
		}
	} else {
		for j, i := range at {
			it := &items[i]
			it.d, it.decided, it.refused = ds[j], true, !ds[j].Allowed
			refused = refused || it.refused
		}
		for _, i := range at {
			it := &items[i]
			it.charged = !refused
			if refused && it.d.Allowed {
				it.d.Remaining += it.cost // as it was before the charge
			}
		}
	}
	for _, i := range at {
		s.observe(ctx, &items[i], !refused)
	}
	return refused, true
}
