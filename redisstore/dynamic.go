package redisstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
)

// maxCachedLimits is how many distinct limits a Dynamic keeps the script
// arguments of. A limit beyond them is still enforced, its arguments
// formatted on each call (a few small allocations per decision); Redis
// holds nothing per limit, so there is no other bound.
const maxCachedLimits = 1024

// Dynamic is a Redis limiter whose limit is chosen per key, on every
// request, by a function of the key (tiers of API keys, limits from a
// database), the Redis counterpart of core.NewDynamic. A key's Redis key
// names the algorithm but not the limit, so a key whose limit changes keeps
// its state, read by the script under the new limit exactly as
// core.Keyed.SetLimit documents for each algorithm (the same decisions as
// core's Dynamic on the same clock). Decision.Limit is the key's limit.
//
// The first limit a Dynamic sees fixes the algorithm and its settings,
// which every later limit must share: a key's Redis key names them, so
// that the key keeps its state when its limit changes. A limit of another
// algorithm or other settings, and one under core.SlidingLog, sub-windows
// or core.Concurrency (whose per-key state is sized for one limit), fails
// its request with an error wrapping core.ErrSetLimitUnsupported.
//
// Keys of a Dynamic and of a Limiter never share state: a Limiter's keys
// name the limit's parameters, a Dynamic's do not (see Keys in the package
// documentation). Two Dynamic limiters with the same prefix and algorithm
// share state, whatever limits they choose.
//
// Everything else is a Limiter's: batching, the breaker, the deny cache
// (whose entries hold the limit they were refused under, so a key whose
// limit changed asks the server again), the options; WithFallback decides
// locally with a core.Dynamic of the same limit function (with
// WithLocalQuota, under this instance's share of each key's limit, as a
// Limiter's, asking the limit function once more per decision).
// WithLocalQuota leases hot keys as a Limiter does, each lease bound to the limit it was
// granted under: a key whose limit changes ends its lease at its next call
// (see WithLocalQuota for what becomes of the units left). A Dynamic is
// safe for concurrent use; the limit function is called once per Allow
// and Refund, and once per lease that ends holding units, and should be
// fast.
type Dynamic struct {
	client  redis.UniversalClient
	opts    options
	limitOf func(key string) core.Limit
	local   core.Limiter // WithFallback's core.Dynamic; nil without it

	l    atomic.Pointer[Limiter] // made for the first limit seen
	base core.Limit              // that limit without its rate: what all share

	cache atomic.Pointer[map[core.Limit]*policy]
	mu    sync.Mutex // adds to cache
}

var _ core.Limiter = (*Dynamic)(nil)

// NewDynamic returns a Dynamic enforcing limitOf(key) on each key, with
// the options New takes. It checks the options; limits are checked when
// first seen, and an invalid one (or one longer than Redis can hold) fails
// its request with the error New would give.
func NewDynamic(client redis.UniversalClient, limitOf func(key string) core.Limit, opts ...Option) (*Dynamic, error) {
	if client == nil {
		return nil, errNilClient
	}
	if limitOf == nil {
		return nil, errors.New("redisstore: NewDynamic: nil limit function; pass func(key string) core.Limit")
	}
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	if err := checkClient(client, o.timeout); err != nil {
		return nil, err
	}
	if o.clientWindows {
		return nil, errClientWindows
	}
	local, err := localLimiter(&o, func(opts ...core.Option) (*core.Dynamic, error) { return core.NewDynamic(limitOf, opts...) })
	if err != nil {
		return nil, err
	}
	d := &Dynamic{client: client, opts: o, limitOf: limitOf, local: local}
	d.cache.Store(&map[core.Limit]*policy{})
	return d, nil
}

// rateless is l without its rate and name: its algorithm and settings.
func rateless(l core.Limit) core.Limit {
	return core.Limit{Algorithm: l.Algorithm, Overdraft: l.Overdraft, MaxDelay: l.MaxDelay,
		WarmUp: l.WarmUp, ColdFactor: l.ColdFactor, SubWindows: l.SubWindows, MaxEntries: l.MaxEntries}
}

// limiter returns the Limiter that runs d's script, made for the first
// limit seen, which fixes the algorithm and settings every limit of d
// shares: a key's Redis key names them, not the limit, so that the key
// keeps its state when its limit changes. d.mu is held.
func (d *Dynamic) limiter(lim core.Limit) (*Limiter, error) {
	if l := d.l.Load(); l != nil {
		if rateless(lim) != d.base {
			return nil, fmt.Errorf("%w: redisstore: limit %s uses %v, and the limiter's first limit %v; a key keeps its state when its limit changes, so a Dynamic limiter's limits share one algorithm and its settings", core.ErrSetLimitUnsupported, lim, lim.Algorithm, d.base.Algorithm)
		}
		return l, nil
	}
	switch {
	case scripts[lim.Algorithm] == nil && lim.Algorithm != core.SlidingLog:
		return nil, fmt.Errorf("redisstore: unknown algorithm %d; use core.TokenBucket, core.GCRA, core.FixedWindow, core.SlidingWindow, core.LeakyBucket or core.WarmUp", int(lim.Algorithm))
	case lim.Algorithm == core.SlidingLog || lim.SubWindows != 0:
		return nil, fmt.Errorf("%w: redisstore: NewDynamic does not support %v%s, whose per-key logs are sized for one limit; use a Limiter per limit", core.ErrSetLimitUnsupported, lim.Algorithm, map[bool]string{true: " with sub-windows"}[lim.SubWindows != 0])
	case lim.Algorithm == core.Concurrency:
		return nil, fmt.Errorf("%w: redisstore: NewDynamic does not support core.Concurrency, as core.NewDynamic does not; use a Limiter per limit", core.ErrSetLimitUnsupported)
	}
	if d.opts.quota != nil {
		if err := quotaAlgorithm(lim.Algorithm, lim.Overdraft); err != nil {
			return nil, fmt.Errorf("%w: %w", core.ErrSetLimitUnsupported, err)
		}
	}
	o := d.opts
	o.setPolicy(lim)
	script, tag := scriptOf(&o)
	// The key names the algorithm and its settings, not the limit.
	l, err := newLimiter(d.client, o, script, "}:"+tag+o.settingsTag())
	if err != nil {
		return nil, err
	}
	l.local = d.local
	if o.quota != nil {
		l.quota = newQuotas(*o.quota, lim, nil)
		l.quota.policyOf = func(key string) (*policy, error) { return d.policy(d.limitOf(key)) }
	}
	l.share = l.sharesOf()
	d.base = rateless(lim)
	d.l.Store(l)
	return l, nil
}

// policy returns lim's script arguments, cached up to maxCachedLimits.
func (d *Dynamic) policy(lim core.Limit) (*policy, error) {
	if p := (*d.cache.Load())[lim]; p != nil {
		return p, nil
	}
	if err := lim.Validate(); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	l, err := d.limiter(lim)
	if err != nil {
		return nil, err
	}
	_, _, params, maxCost, err := compile(&l.opts, lim)
	if err != nil {
		return nil, err
	}
	if hasLead(l.opts.algorithm) {
		params[len(params)-1] = anyLead
	}
	p := l.newPolicy(lim, maxCost, params)
	if l.quota != nil {
		p.lease = l.quota.terms(lim, p)
	}
	old := *d.cache.Load()
	if q := old[lim]; q != nil {
		return q, nil
	}
	if len(old) >= maxCachedLimits {
		return p, nil
	}
	next := make(map[core.Limit]*policy, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[lim] = p
	d.cache.Store(&next)
	return p, nil
}

// Allow decides whether key may spend cost units now under limitOf(key)
// and, if so, charges them, as Limiter.Allow does.
func (d *Dynamic) Allow(ctx context.Context, key string, cost int) (core.Decision, error) {
	p, err := d.policy(d.limitOf(key))
	if err != nil {
		return core.Decision{}, err
	}
	l := d.l.Load()
	if l.quota != nil {
		return l.allowQuota(ctx, p, key, cost)
	}
	return l.allow(ctx, p, key, cost)
}

// Refund gives back cost units charged to key, under limitOf(key), never
// beyond a whole quota, as Limiter.Refund does.
func (d *Dynamic) Refund(ctx context.Context, key string, cost int) error {
	p, err := d.policy(d.limitOf(key))
	if err != nil {
		return err
	}
	return d.l.Load().refund(ctx, p, key, cost)
}
