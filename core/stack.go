package core

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"time"
)

// Stack enforces several limits on every key at once — 5/s and 100,000/h,
// say — each with its own algorithm, all or nothing: a request is admitted
// only if every limit admits it, and when one refuses, none is charged.
//
// A denial names, in Decision.Limit, the limit whose wait is the longest,
// and RetryAfter is that wait, exact for the stack (retrying the same cost
// after it, with no other traffic, is admitted by every limit); an
// admission names the limit with the least left (the first such).
// Remaining is the least any limit has left (exactly that many more cost-1
// requests pass every limit), ResetAfter is the named limit's, as
// RateLimit's reset describes the policy it names, and Delay is the
// longest any shaping limit asks for. Refund gives the cost back to every
// limit. [Stack.Policies] lists every limit, which the
// adapters send in RateLimit-Policy.
//
// A layer may be a concurrency limit ([Concurrency]): an admission then
// carries a Lease that gives the layer's units back (every concurrency
// layer's, once). Refund gives units back to every layer, the concurrency
// layers' included, so release an admission's Lease or Refund it, not both;
// the adapters release the Lease. A sliding log's or sub-windows' layer is
// checked, and charged only when every layer admits, like the others.
//
// A key's states under every limit live in one table per limit, laid out
// alike, and a decision holds the key's lock in each of them, always in
// the same order, so that no other decision on that key sees a partial
// charge. A Stack is safe for concurrent use. Make one with [NewStack].
type Stack struct {
	layers  []*Keyed
	limits  []Limit
	seed    maphash.Seed
	clock   Clock
	maxCost int64
	bound   *Keyed // the layer that bounds the cost: its maxCost is maxCost
	cache   bool   // the layers' deny-cache slots answer repeated denials
	leases  bool   // a layer is a concurrency limit: admissions carry a Lease
	mask    uint64 // the layers' main tables' shard mask (all alike)
}

var _ Limiter = (*Stack)(nil)
var _ PolicyLister = (*Stack)(nil)

// NewStack returns a Stack of limits, in order (at least one), each a
// policy with its own algorithm; opts configure the store they share. A
// limit without a name is named after its rate ("5-per-s", "1000-per-h",
// "30-per-10s"), since RateLimit-Policy names each policy; names must be
// distinct.
func NewStack(layers []Limit, opts ...Option) (*Stack, error) {
	if len(layers) == 0 {
		return nil, errors.New("core: NewStack needs at least one limit")
	}
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	shards := o.shards
	if shards == 0 {
		shards = shardsFor(o.capacity)
	}
	seed := maphash.MakeSeed()
	if o.seed != nil {
		seed = *o.seed
	}
	s := &Stack{seed: seed, clock: o.clock, maxCost: 1 << 62, cache: o.denyCache}
	names := map[string]int{}
	lo := o
	lo.shards, lo.seed = shards, &seed
	for i, l := range layers {
		if l.Name == "" {
			l.Name = DefaultName(l)
		}
		if j, ok := names[l.Name]; ok {
			return nil, fmt.Errorf("core: stack limits %d and %d are both named %q; give each a distinct name with Limit.WithName", j, i, l.Name)
		}
		names[l.Name] = i
		k, err := newKeyed(l, &lo)
		if err != nil {
			return nil, fmt.Errorf("core: stack limit %d (%v): %w", i, l, err)
		}
		s.leases = s.leases || k.leases
		if k.ext == nil {
			s.mask = k.mask
		}
		// A layer's limit never changes (no SetLimit reaches it), so its
		// cost bound is read once here.
		if mc := k.pol.Load().maxCost; mc < s.maxCost {
			s.maxCost, s.bound = mc, k
		}
		s.layers = append(s.layers, k)
		s.limits = append(s.limits, l)
	}
	return s, nil
}

// Policies returns the stack's limits, in order, with the names they carry
// in decisions. The slice is shared and must not be modified.
func (s *Stack) Policies() []Limit { return s.limits }

func (s *Stack) now() int64 {
	if s.clock == nil {
		return systemNow()
	}
	return s.clock.Now()
}

// layerState is one layer's part of a decision in progress: where the key
// is, its state, and what the layer concluded.
type layerState struct {
	st       state
	ns       state
	v        verdict
	found    bool // the key is in the layer's table
	overflow bool // decided against the layer's overflow state (locked)

	// A sliding log's or sub-windows' layer: the key's log (new when not
	// found), and the instant an admission is logged at.
	x *xlog
	t int64
}

// maxLayers is how many layers a decision keeps on the stack, without
// allocating; a taller stack allocates its scratch space.
const maxLayers = 8

// Allow decides whether key may spend cost units now under every limit of
// the stack and, if so, charges them to every limit.
func (s *Stack) Allow(_ context.Context, key string, cost int) (Decision, error) {
	if cost < 1 || int64(cost) > s.maxCost {
		return Decision{}, s.checkCost(cost)
	}
	now := s.now()
	if uint64(now) > maxNow {
		return Decision{}, clockError(now)
	}
	h := maphash.String(s.seed, key)
	var buf [maxLayers]layerState
	ls := buf[:0]
	if len(s.layers) > maxLayers {
		ls = make([]layerState, 0, len(s.layers))
	}
	i := h & s.mask
	if s.cache && cost == 1 {
		// A cost-1 denial is cached in the slot of the layer it named,
		// with the stack's waits: while that layer refuses, nothing is
		// charged anywhere, so every wait ends at a fixed instant and the
		// layer with the longest stays the longest. Any change of a
		// layer's state (a refund) clears the slot.
		for j, k := range s.layers {
			if !k.cache {
				continue
			}
			if until, resetAt, ok := k.shards[i].slot(h).loadWaits(h, now); ok {
				return Decision{Limit: s.limits[j], RetryAfter: time.Duration(until - now), ResetAfter: time.Duration(resetAt - now)}, nil
			}
		}
	}
	c := int64(cost)
	for _, k := range s.layers {
		k.lockFor(h, i).Lock()
	}
	allowed := true
	for _, k := range s.layers {
		if k.ext != nil {
			l := k.ext.check(h, now, c)
			allowed = allowed && l.v.allowed
			ls = append(ls, l)
			continue
		}
		sh := &k.shards[i]
		// The layer's policy, read under its shard's lock as Keyed's
		// decisions read it.
		p := k.pol.Load()
		alg := p.alg
		var l layerState
		l.st, l.found = sh.lru.Peek(h)
		if !l.found {
			if k.makeRoom(p, sh, now) {
				l.st = alg.fresh(now)
			} else {
				l.overflow = true
				k.overflowMu.Lock()
				if !k.overflowSet {
					k.overflow, k.overflowSet = alg.fresh(now), true
				}
				l.st = k.overflow
			}
		}
		l.ns, l.v = alg.decide(l.st, now, c)
		allowed = allowed && l.v.allowed
		ls = append(ls, l)
	}
	d, pick := s.decision(ls, allowed)
	for j, k := range s.layers {
		l := &ls[j]
		if k.ext != nil {
			k.ext.settle(h, l, c, allowed)
			continue
		}
		sh := &k.shards[i]
		switch {
		case l.overflow:
			if allowed {
				k.overflow = l.ns
			}
			k.overflowMu.Unlock()
		case l.found:
			if allowed {
				sh.lru.Add(h, l.ns)
				sh.forget(h)
			}
		case allowed:
			sh.lru.Add(h, l.ns)
			sh.track(now+l.v.resetAfter, h)
			sh.rankIn(k.pol.Load(), l.ns, h)
		default:
			k.release(sh, 1) // the room made for the key goes back
		}
	}
	if !allowed && s.cache && cost == 1 && !d.Overflow {
		if j := pick; s.layers[j].cache {
			s.layers[j].shards[i].slot(h).store(h, ls[j].st, now+int64(d.RetryAfter), now+int64(d.ResetAfter))
		}
	}
	for j := len(s.layers) - 1; j >= 0; j-- {
		s.layers[j].lockFor(h, i).Unlock()
	}
	if allowed && s.leases {
		d.Lease = s.lease(ls, h, c)
	}
	return d, nil
}

func (s *Stack) checkCost(cost int) error {
	if cost < 1 {
		return fmt.Errorf("%w: cost must be >= 1, got %d", ErrInvalidCost, cost)
	}
	return fmt.Errorf("%w: cost %d, at most %d under %s", ErrCostTooLarge, cost, s.maxCost, s.bound.Limit())
}

// Refund gives cost units back to key under every limit of the stack,
// never beyond a whole quota.
func (s *Stack) Refund(ctx context.Context, key string, cost int) error {
	if cost < 1 || int64(cost) > s.maxCost {
		return s.checkCost(cost)
	}
	var errs []error
	for _, k := range s.layers {
		if err := k.Refund(ctx, key, cost); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
