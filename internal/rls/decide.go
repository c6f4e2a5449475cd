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
	rule  *Rule
	c     *compiled // nil: no limit (no rule, unlimited, or replaced)
	key   string
	cost  int  // what its limiter is asked for: its hits, 1 for a probe
	back  bool // is_negative_hits: give cost back
	probe bool // hits_addend 0: a check, decided at a cost of 1 and never left charged

	d       core.Decision
	left    int  // what d's limiter had left for it before this request (when decided)
	decided bool // d is the limiter's answer
	charged bool // the limiter admitted, and charged, the request
	refused bool // refused (or failed closed)
	drained bool // over its limit, it spent what was left (upstream's charging)
	held    bool // admitted but not charged, as another was over its limit (ChargeStopWhenOver)
	multi   bool // a shadow descriptor decided, or hits given back, by the Multi
	cached  bool // refused from the local cache (Config.LocalCacheBytes): no store asked
	err     error
}

// ShouldRateLimit decides a request's descriptors as Config.Charging says
// (all or nothing by default, see the package documentation) and answers
// with each one's status.
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
	var start int64 // before any store is asked: the local cache's entries count from it
	if s.cache != nil {
		start = s.c.Clock.Now()
	}
	var refused bool
	if s.c.Charging == ChargeAllOrNothing {
		ok := false
		if s.c.Multi != nil {
			refused, ok = s.enforceMulti(ctx, items)
		}
		if !ok {
			refused = s.enforce(ctx, items)
		}
		if !refused {
			s.shadow(ctx, items)
		}
		s.unprobe(ctx, items)
	} else {
		refused = s.upstream(ctx, items)
	}
	if s.cache != nil {
		s.remember(items, start)
	}
	if s.c.Stats != nil {
		s.count(req.GetDomain(), descs, items)
	}
	if s.c.FailCall {
		if err := storeFailure(items); err != nil {
			return nil, status.Errorf(codes.Unavailable, "rls: the store failed: %v", err)
		}
	}
	return s.answer(req, items, refused), nil
}

// storeFailure returns a descriptor's store error, if any.
func storeFailure(items []item) error {
	for i := range items {
		if err := items[i].err; err != nil && pipeline.Classify(err) == core.OutcomeStoreError {
			return err
		}
	}
	return nil
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
		case h != nil && h.GetValue() == 0:
			items[i].probe = true
		case h != nil:
			items[i].cost = int(min(h.GetValue(), uint64(maxCost)))
		case hits > 0:
			items[i].cost = int(min(uint64(hits), uint64(maxCost)))
		}
		items[i].back = d.GetIsNegativeHits() && !items[i].probe
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
// request is refused (see verdict). A refused request stays charged by
// none of them.
func (s *Service) enforce(ctx context.Context, items []item) bool {
	known := s.recall(items, enforced) && s.verdict(items)
	deny := s.denyAll(ctx, items) || known
	for i := range items {
		it := &items[i]
		if !it.limited() || it.rule.Shadow {
			continue
		}
		if it.back {
			s.giveBack(ctx, it, false)
			continue
		}
		if deny || it.cached {
			continue
		}
		s.allow(ctx, it)
	}
	if deny {
		s.observeCached(ctx, items, false)
		return true
	}
	refused := s.verdict(items)
	for i := range items {
		it := &items[i]
		if refused && it.charged {
			s.undo(ctx, it)
		}
		if it.limited() && !it.rule.Shadow && !it.back {
			s.observe(ctx, it, !refused)
		}
	}
	return refused
}

// verdict reports whether the descriptors' statuses refuse the request,
// as envoyproxy/ratelimit decides: one over the limit (not in shadow
// mode) refuses it, unless its rule is in quota mode; those in quota
// mode refuse it when all of them are over the limit. Under global quota
// mode a descriptor without a rule (or replaced) is one in quota mode
// that is within the limit, as upstream counts it.
func (s *Service) verdict(items []item) bool {
	rate, quota, quotaRefused := false, 0, 0
	for i := range items {
		it := &items[i]
		r := it.rule
		if r != nil && r.Unlimited || it.back {
			continue // no decision (hits given back are floodgate's own)
		}
		q := s.c.Quota || r != nil && r.Quota
		if q {
			quota++
		}
		if r != nil && !r.Shadow && it.refused {
			if q {
				quotaRefused++
			} else {
				rate = true
			}
		}
	}
	return rate || quota > 0 && quotaRefused == quota
}

// quota reports whether r is in quota mode, its own or global.
func (s *Service) quota(r *Rule) bool { return s.c.Quota || r.Quota }

// undo gives back what it was charged, and reports what it had left
// before, as if never charged.
func (s *Service) undo(ctx context.Context, it *item) {
	if err := pipeline.Undo(ctx, it.c.lim, it.key, it.cost, it.d.Lease); err != nil {
		it.err = err
	}
	it.charged = false
	it.d.Remaining = it.left
}

// giveBack refunds it's hits (is_negative_hits) and tells the observer:
// the request goes on when it is a shadow descriptor, or the refund is
// made.
func (s *Service) giveBack(ctx context.Context, it *item, shadow bool) {
	if it.c == nil {
		return
	}
	it.err = it.c.lim.Refund(ctx, it.key, it.cost)
	s.observe(ctx, it, shadow || it.err == nil)
}

// unprobe gives back what the checks (hits_addend 0) were charged when
// decided.
func (s *Service) unprobe(ctx context.Context, items []item) {
	s.giveBackCharges(ctx, items, func(it *item) bool { return it.probe })
}

// denyAll reports whether an enforced descriptor falls under a rule, not
// in quota mode, that refuses every request (requests_per_unit 0): the
// request is then refused as it stands, no store is asked and nothing is
// charged. Only those descriptors are decided (refused), and observed.
func (s *Service) denyAll(ctx context.Context, items []item) bool {
	deny := false
	for i := range items {
		it := &items[i]
		if it.limited() && !it.rule.Shadow && !s.quota(it.rule) && it.rule.DenyAll && !it.back {
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
	if it.c == nil { // DenyAll, or a rule that did not compile
		it.refused = true
		return
	}
	d, err := it.c.lim.Allow(ctx, it.key, it.cost)
	it.err = err
	switch {
	case err == nil:
		it.decide(d)
		it.charged = d.Allowed
	case errors.Is(err, core.ErrInvalidCost):
		it.refused = true // never admissible: no wait helps
	case pipeline.Classify(err) == core.OutcomeStoreError && s.c.Failure == core.FailOpen:
	default:
		it.refused = true
	}
}

// decide records d, its limiter's answer (an admission's d reports the
// charge made, or that would have been made).
func (it *item) decide(d core.Decision) {
	it.d, it.decided, it.refused = d, true, !d.Allowed
	it.left = d.Remaining
	if d.Allowed {
		it.left += it.cost
	}
}
