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
// The service gives it, in one call, the enforced descriptors of a
// request (when rules in quota mode refuse, but not all of them, the
// others in one more: the request goes on without them); in one more each,
// the hits a request gives back (is_negative_hits) and, once the request
// is admitted, its shadow descriptors. A request that a rule refusing
// everything (requests_per_unit 0) names, or that the local cache
// refuses (Config.LocalCacheBytes), is refused without a call; the
// checks (hits_addend 0) are charged 1 and given back in one more call.
// Under upstream's charging (ChargeAlways, ChargeStopWhenOver) it gets
// every descriptor a rule limits, shadow ones included, in one call; when
// one refuses, Store's limiters finish the request. So a Multi must keep
// each key's state where the limiter Store makes for the same limits does.
type Multi interface {
	// AllowAll returns the decisions in the charges' order, each as the
	// limiter of the charge's limits would make it on that state (an
	// admission in a call another charge refuses reports the charge it
	// would have made). A store failure is an error matched by
	// errors.Is(err, core.ErrStore), which the failure mode answers; any
	// other error (a charge it cannot decide) sends the request to Store's
	// limiters, one at a time. So does a store failure that also matches
	// ErrPartial when the failure mode is open: the keys whose servers
	// answer are then still counted.
	AllowAll(ctx context.Context, charges []Charge) ([]core.Decision, error)
	// RefundAll gives every charge's cost back to its limits, never beyond
	// a whole quota. An error is every charge's.
	RefundAll(ctx context.Context, charges []Charge) error
}

// ErrPartial marks a Multi's store failure on keys of several servers,
// some of which may still answer (redisstore.ErrPartial, on a Cluster):
// under core.FailOpen the request is decided again one limiter at a time.
var ErrPartial = errors.New("rls: the Multi's keys are on several servers, and not every one answered")

// Charge is one key of a Multi's call: its limits (a rule's) and its cost.
type Charge struct {
	Key    string
	Limits []core.Limit
	Cost   int
	// Local says that the key's rule takes local quota (Config.LocalQuota
	// or Rule.LocalQuota): a Multi that leases may decide it in memory.
	Local bool
}

// charge is it as a Multi takes it: under the limits its limiter
// enforces, so that both keep the key's state alike; local is global
// local quota (Config.LocalQuota).
func (it *item) charge(local bool) Charge {
	return Charge{Key: it.key, Limits: it.c.limits, Cost: it.cost, Local: local || it.rule.LocalQuota}
}

// batch is the descriptors of one Multi call: their charges, and where
// they are among the request's items.
type batch struct {
	charges []Charge
	at      []int
	cbuf    [8]Charge
	abuf    [8]int
}

func (b *batch) add(items []item, i int, local bool) {
	if b.charges == nil {
		b.charges, b.at = b.cbuf[:0], b.abuf[:0]
	}
	b.charges = append(b.charges, items[i].charge(local))
	b.at = append(b.at, i)
}

// enforceMulti decides the enforced descriptors with the Multi, as
// enforce does a limiter at a time, and reports whether the request is
// refused; ok is false when it cannot (enforce decides the request).
func (s *Service) enforceMulti(ctx context.Context, items []item) (refused, ok bool) {
	known := s.recall(items, enforced) && s.verdict(items)
	var charges, backs batch
	for i := range items {
		it := &items[i]
		if !it.limited() || it.rule.Shadow || it.cached {
			continue
		}
		switch {
		case it.rule.DenyAll && s.quota(it.rule):
			return false, false // enforce counts it among quota refusals
		case it.rule.DenyAll:
		case it.c == nil:
			return false, false // not compiled: enforce reports why
		case it.back:
			backs.add(items, i, s.c.LocalQuota)
		default:
			charges.add(items, i, s.c.LocalQuota)
		}
	}
	if s.denyAll(ctx, items) || known {
		s.refundAll(ctx, items, &backs, false)
		s.observeCached(ctx, items, false)
		return true, true
	}
	if len(charges.charges) == 0 {
		s.refundAll(ctx, items, &backs, false)
		s.observeCached(ctx, items, true)
		return false, true
	}
	at := charges.at
	ds, err := s.c.Multi.AllowAll(ctx, charges.charges)
	if err != nil && ctx.Err() == nil && (!errors.Is(err, core.ErrStore) || s.c.Failure == core.FailOpen && errors.Is(err, ErrPartial)) {
		return false, false // before any refund: enforce makes them
	}
	s.refundAll(ctx, items, &backs, false)
	refused = s.decide(items, at, ds, err, true)
	if !refused && err == nil {
		// Rules in quota mode refused, not all of them, and nothing else
		// did: the request goes on without them, and the others are
		// decided again, all or nothing (any refusal now refuses it).
		var rest batch
		for _, i := range at {
			if !items[i].refused {
				rest.add(items, i, s.c.LocalQuota)
			}
		}
		if len(rest.at) < len(at) {
			at = rest.at
			ds, err = s.c.Multi.AllowAll(ctx, rest.charges)
			refused = s.decide(items, at, ds, err, false)
		}
	}
	for _, i := range at {
		items[i].charged = !refused && items[i].decided
	}
	for _, i := range charges.at {
		it := &items[i]
		if refused && it.decided {
			it.d.Remaining = it.left // as it was before the charge
		}
		s.observe(ctx, it, !refused)
	}
	s.observeCached(ctx, items, !refused)
	return refused, true
}

// decide sets the decisions of items[at...], a Multi call's answers ds or
// its error err, and reports whether they refuse the request: when first
// is set, as verdict says (rules in quota mode refuse it only all
// together); else any refusal does. A store error refuses it when the
// failure mode says so.
func (s *Service) decide(items []item, at []int, ds []core.Decision, err error, first bool) bool {
	if err != nil {
		refused := pipeline.Classify(err) != core.OutcomeStoreError || s.c.Failure != core.FailOpen
		for _, i := range at {
			items[i].err, items[i].refused = err, refused
		}
		return refused
	}
	refused := false
	for j, i := range at {
		items[i].decide(ds[j])
		refused = refused || !ds[j].Allowed
	}
	if first {
		return s.verdict(items)
	}
	return refused
}

// refundAll gives back the hits of backs, descriptors of a request with
// is_negative_hits, in one Multi call; shadow says whether they are shadow
// descriptors (whose request is admitted, whatever they say).
func (s *Service) refundAll(ctx context.Context, items []item, backs *batch, shadow bool) {
	if len(backs.charges) == 0 {
		return
	}
	err := s.c.Multi.RefundAll(ctx, backs.charges)
	for _, i := range backs.at {
		it := &items[i]
		it.err, it.multi = err, true
		s.observe(ctx, it, shadow || err == nil)
	}
}

// shadowMulti decides the shadow descriptors of an admitted request that
// it can with the Multi, as shadow does one at a time: those that give
// hits back in one call, and the others in one more. Each is to be
// charged if its own limits admit it; so when some refuse, the call
// charges none and those that admitted are left to shadow, one at a time.
// A store error is every descriptor's; any other error leaves them all to
// shadow.
func (s *Service) shadowMulti(ctx context.Context, items []item) {
	var charges, backs batch
	for i := range items {
		if it := &items[i]; it.limited() && it.rule.Shadow && it.c != nil && !it.cached {
			if it.back {
				backs.add(items, i, s.c.LocalQuota)
			} else {
				charges.add(items, i, s.c.LocalQuota)
			}
		}
	}
	s.refundAll(ctx, items, &backs, true)
	if len(charges.charges) == 0 {
		return
	}
	ds, err := s.c.Multi.AllowAll(ctx, charges.charges)
	if err != nil && !errors.Is(err, core.ErrStore) && ctx.Err() == nil {
		return
	}
	all := err == nil
	for j := range ds {
		all = all && ds[j].Allowed
	}
	for j, i := range charges.at {
		it := &items[i]
		switch {
		case err != nil:
			it.err = err
		case !all && ds[j].Allowed:
			continue // not charged: shadow decides it alone
		default:
			it.decide(ds[j])
			it.charged = ds[j].Allowed
		}
		it.multi = true
		s.observe(ctx, it, true)
	}
}
