package rls

import (
	"context"
	"errors"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/pipeline"
)

// upstream decides a request as envoyproxy/ratelimit does, under
// Config.Charging ChargeAlways or ChargeStopWhenOver, and reports whether
// it is refused (see verdict). Every descriptor a rule limits is decided
// on its own, shadow and quota-mode ones alike, whatever the others say;
// then each one over its limit spends what it had left (upstream's count
// goes past the limit), and the others keep their charge, but for the
// checks (hits_addend 0), which never keep one, and, under
// ChargeStopWhenOver, all of them when one is over its limit.
//
// With a Multi, the descriptors are one call of it, all or nothing: a
// request they all admit (the common case) is decided in one round trip.
// When one refuses, the call charged nothing; under ChargeAlways those
// that admitted are then charged one limiter at a time.
func (s *Service) upstream(ctx context.Context, items []item) bool {
	s.recall(items, func(*item) bool { return true })
	for i := range items {
		it := &items[i]
		switch {
		case !it.limited():
		case it.back:
			s.giveBack(ctx, it, it.rule.Shadow)
		case it.rule.DenyAll:
			it.refused = true
		}
	}
	if s.c.Multi == nil || !s.upstreamMulti(ctx, items) {
		for i := range items {
			if it := &items[i]; it.limited() && !it.back && !it.rule.DenyAll && !it.cached {
				s.allow(ctx, it)
			}
		}
	}
	s.markPast(items)
	over := false
	for i := range items {
		over = over || items[i].over()
	}
	stop := over && s.c.Charging == ChargeStopWhenOver
	for i := range items {
		if it := &items[i]; it.over() {
			s.drain(ctx, it)
		}
	}
	if stop {
		for i := range items {
			it := &items[i]
			it.held = it.decided && !it.refused && !it.probe
		}
	}
	// Under ChargeStopWhenOver the descriptors over their limit keep their
	// charge (upstream increments them), the others give it back.
	s.giveBackCharges(ctx, items, func(it *item) bool { return it.probe || stop && !it.refused })
	for i := range items {
		if it := &items[i]; it.c != nil && it.c.past {
			// What upstream reports: the unit that stands for past
			// the limit is none of the limit's.
			it.d.Remaining, it.left = max(it.d.Remaining-1, 0), max(it.left-1, 0)
		}
	}
	refused := s.verdict(items)
	for i := range items {
		if it := &items[i]; it.limited() && !it.back {
			s.observe(ctx, it, !refused)
		}
	}
	return refused
}

// markPast refuses the descriptors whose limiter, counting one past the
// limit (compiled.past), admitted them with its last unit: their count
// went past the limit, which is upstream's OVER_LIMIT, and their charge
// is kept, as upstream counts refused hits. A check (hits_addend 0,
// probed at a cost of 1) takes nothing: it is over the limit only when its
// limiter refuses it, its count past the limit.
func (s *Service) markPast(items []item) {
	for i := range items {
		it := &items[i]
		if it.c != nil && it.c.past && it.decided && it.d.Allowed && !it.probe && !it.cached && it.left == it.cost {
			it.refused = true
		}
	}
}

// over reports whether it is over its limit, as envoyproxy/ratelimit's
// count past the limit says: its limiter refused it, its cost is more
// than the limit can ever admit, or its rule refuses every request. A
// store failure is not.
func (it *item) over() bool {
	switch {
	case !it.limited() || it.back || !it.refused:
		return false
	case it.decided, it.rule.DenyAll:
		return true
	}
	return errors.Is(it.err, core.ErrInvalidCost)
}

// upstreamMulti decides the descriptors upstream does with the Multi,
// and reports whether it could (else the limiters decide them).
func (s *Service) upstreamMulti(ctx context.Context, items []item) bool {
	var charges batch
	for i := range items {
		it := &items[i]
		if !it.limited() || it.back || it.rule.DenyAll || it.cached {
			continue
		}
		if it.c == nil {
			return false // not compiled: allow reports why
		}
		charges.add(items, i, s.c.LocalQuota)
	}
	if len(charges.charges) == 0 {
		return true
	}
	ds, err := s.c.Multi.AllowAll(ctx, charges.charges)
	if err != nil {
		if ctx.Err() == nil && (!errors.Is(err, core.ErrStore) || s.c.Failure == core.FailOpen && errors.Is(err, ErrPartial)) {
			return false
		}
		refused := pipeline.Classify(err) != core.OutcomeStoreError || s.c.Failure != core.FailOpen
		for _, i := range charges.at {
			items[i].err, items[i].refused = err, refused
		}
		return true
	}
	all := true
	for j := range ds {
		all = all && ds[j].Allowed
	}
	for j, i := range charges.at {
		it := &items[i]
		it.decide(ds[j])
		it.charged = all
		switch {
		case all || !ds[j].Allowed:
		case s.c.Charging == ChargeAlways && !it.probe:
			s.allow(ctx, it) // charged on its own, as upstream charges it
		default:
			it.d.Remaining = it.left // not charged
		}
	}
	return true
}

// drain spends what it's limiter had left for its key, when it is over
// its limit: upstream charges it past its limit, so that what was left
// is gone for the rest of the window; it then reports 0 left. A cost
// more than the limit can ever admit is drained in two calls (what is
// left is not known).
func (s *Service) drain(ctx context.Context, it *item) {
	if it.c == nil {
		return // a rule refusing every request: nothing to spend
	}
	left := it.d.Remaining
	if !it.decided { // a cost no limit admits
		d, err := it.c.lim.Allow(ctx, it.key, 1)
		if err != nil {
			return
		}
		it.d, it.left, left = d, d.Remaining, d.Remaining
		if d.Allowed {
			it.left++
		}
	}
	if left > 0 && !it.probe {
		if d, err := it.c.lim.Allow(ctx, it.key, left); err == nil && d.Allowed {
			it.d.ResetAfter = d.ResetAfter
		}
	}
	it.d.Allowed, it.d.Remaining, it.drained = false, 0, true
	if it.d.RetryAfter <= 0 {
		it.d.RetryAfter = it.d.ResetAfter // nothing is left until then
	}
}

// giveBackCharges gives back what the descriptors that took a charge and
// that give says were charged: with the Multi, in one call.
func (s *Service) giveBackCharges(ctx context.Context, items []item, give func(*item) bool) {
	n := 0
	for i := range items {
		if it := &items[i]; it.charged && give(it) {
			if s.c.Multi == nil {
				s.undo(ctx, it)
			}
			n++
		}
	}
	if n > 0 && s.c.Multi != nil {
		s.refundCharges(ctx, items, give)
	}
}

// refundCharges is giveBackCharges' call of the Multi (a function of its
// own, so that its batch is not made for requests that need none).
func (s *Service) refundCharges(ctx context.Context, items []item, give func(*item) bool) {
	var backs batch
	for i := range items {
		if it := &items[i]; it.charged && give(it) {
			backs.add(items, i, s.c.LocalQuota)
		}
	}
	err := s.c.Multi.RefundAll(ctx, backs.charges)
	for _, i := range backs.at {
		it := &items[i]
		if err != nil {
			it.err = err
		}
		it.charged, it.d.Remaining = false, it.left
	}
}
