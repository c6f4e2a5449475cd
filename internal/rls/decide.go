package rls

import (
	"context"
	"errors"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/pipeline"
)

// Transport names the service in observer events.
const Transport = "envoy-rls"

// item is one descriptor of a request on its way to an answer.
type item struct {
	rule *Rule
	c    *compiled // nil: no limit (no rule, unlimited, or replaced)
	key  string
	cost int  // 0: answered without a charge
	back bool // is_negative_hits: give cost back

	d       core.Decision
	decided bool // d is the limiter's answer
	charged bool // the limiter admitted, and charged, the request
	refused bool // enforced and refused (or failed closed)
	multi   bool // a shadow descriptor decided, or hits given back, by the Multi
	err     error
}

// ShouldRateLimit decides a request's descriptors all or nothing (see the
// package documentation) and answers with each one's status.
func (s *Service) ShouldRateLimit(ctx context.Context, req *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	if req.GetDomain() == "" {
		return nil, status.Error(codes.InvalidArgument, "rls: the request names no domain")
	}
	descs := req.GetDescriptors()
	if len(descs) == 0 {
		return nil, status.Error(codes.InvalidArgument, "rls: the request has no descriptor")
	}
	st := s.state.Load()
	if st == nil {
		return nil, status.Error(codes.Unavailable, "rls: no configuration loaded yet")
	}
	items := s.match(st, req.GetDomain(), descs, req.GetHitsAddend())
	refused, ok := false, false
	if s.c.Multi != nil {
		refused, ok = s.enforceMulti(ctx, items)
	}
	if !ok {
		refused = s.enforce(ctx, items)
	}
	if !refused {
		s.shadow(ctx, items)
	}
	return s.answer(items, refused), nil
}

// match finds each descriptor's rule, drops the rules another matching
// rule replaces, and prices each descriptor.
func (s *Service) match(st *state, domain string, descs []*rlcommon.RateLimitDescriptor, hits uint32) []item {
	items := make([]item, len(descs))
	var replaced map[string]bool
	for i, d := range descs {
		r, key := st.rules.Match(domain, d)
		items[i] = item{rule: r, key: key, cost: 1}
		if r == nil {
			continue
		}
		for _, name := range r.Replaces {
			if replaced == nil {
				replaced = make(map[string]bool)
			}
			replaced[name] = true
		}
		items[i].c = st.compiled[r] // nil when unlimited or deny-all
		if items[i].c == nil && !r.Unlimited && !r.DenyAll {
			items[i].c, items[i].err = s.later(st, r)
		}
		switch h := d.GetHitsAddend(); {
		case h != nil:
			items[i].cost = int(min(h.GetValue(), uint64(maxCost)))
		case hits > 0:
			items[i].cost = int(min(uint64(hits), uint64(maxCost)))
		}
		items[i].back = d.GetIsNegativeHits()
	}
	for i := range items {
		if r := items[i].rule; r != nil && r.Name != "" && replaced[r.Name] {
			items[i].rule, items[i].c = nil, nil // replaced: not limited
		}
	}
	return items
}

// maxCost bounds a cost: more than any limit admits at once (core's
// burst is an int32), so core refuses it as too large.
const maxCost = 1 << 31

// enforce decides the enforced descriptors and reports whether the
// request is refused: by a rule not in quota mode, or by every rule in
// quota mode. A refused request stays charged by none of them.
func (s *Service) enforce(ctx context.Context, items []item) bool {
	deny := s.denyAll(ctx, items)
	rate, quota, quotaRefused := false, 0, 0
	for i := range items {
		it := &items[i]
		if !it.limited() || it.rule.Shadow {
			continue
		}
		if it.back {
			if it.c != nil {
				it.err = it.c.lim.Refund(ctx, it.key, it.cost)
				s.observe(ctx, it, it.err == nil)
			}
			continue
		}
		if deny {
			continue
		}
		s.allow(ctx, it)
		if it.rule.Quota {
			quota++
		}
		if it.refused {
			if it.rule.Quota {
				quotaRefused++
			} else {
				rate = true
			}
		}
	}
	if deny {
		return true
	}
	refused := rate || quota > 0 && quotaRefused == quota
	for i := range items {
		it := &items[i]
		if refused && it.charged {
			if err := pipeline.Undo(ctx, it.c.lim, it.key, it.cost, it.d.Lease); err != nil {
				it.err = err
			}
			it.charged = false
			it.d.Remaining += it.cost // as it was before the charge
		}
		if it.limited() && !it.rule.Shadow && !it.back {
			s.observe(ctx, it, !refused)
		}
	}
	return refused
}

// denyAll reports whether an enforced descriptor falls under a rule, not
// in quota mode, that refuses every request (requests_per_unit 0): the
// request is then refused as it stands, no store is asked and nothing is
// charged. Only those descriptors are decided (refused), and observed.
func (s *Service) denyAll(ctx context.Context, items []item) bool {
	deny := false
	for i := range items {
		it := &items[i]
		if it.limited() && !it.rule.Shadow && !it.rule.Quota && it.rule.DenyAll && !it.back {
			it.refused, deny = true, true
			s.observe(ctx, it, false)
		}
	}
	return deny
}

// limited reports whether it is to be decided: it falls under a rule
// that limits it (not unlimited, not replaced) and costs something.
func (it *item) limited() bool {
	return it.rule != nil && !it.rule.Unlimited && it.cost > 0
}

// allow decides it: a deny-all rule refuses without a charge; a store
// error follows the failure mode; a cost no limit admits is refused.
func (s *Service) allow(ctx context.Context, it *item) {
	if it.c == nil { // DenyAll
		it.refused = true
		return
	}
	it.d, it.err = it.c.lim.Allow(ctx, it.key, it.cost)
	switch {
	case it.err == nil:
		it.decided = true
		it.charged = it.d.Allowed
		it.refused = !it.d.Allowed
	case errors.Is(it.err, core.ErrInvalidCost):
		it.refused = true // never admissible: no wait helps
	case pipeline.Classify(it.err) == core.OutcomeStoreError && s.c.Failure == core.FailOpen:
	default:
		it.refused = true
	}
}

// shadow decides the shadow descriptors of an admitted request, which
// enforcing them would have charged; their refusals refuse nothing.
func (s *Service) shadow(ctx context.Context, items []item) {
	if s.c.Multi != nil {
		s.shadowMulti(ctx, items)
	}
	for i := range items {
		it := &items[i]
		if !it.limited() || !it.rule.Shadow || it.multi {
			continue
		}
		if it.back {
			if it.c != nil {
				it.err = it.c.lim.Refund(ctx, it.key, it.cost)
			}
		} else {
			s.allow(ctx, it)
		}
		s.observe(ctx, it, true)
	}
}

// observe tells the observer how a descriptor ended: admitted is the
// request's fate, which all its descriptors share.
func (s *Service) observe(ctx context.Context, it *item, admitted bool) {
	o := s.c.Observer
	if o == nil {
		return
	}
	e := core.Event{
		Transport: Transport,
		Key:       it.key,
		Cost:      it.cost,
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
