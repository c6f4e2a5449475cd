package redisstore

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/breaker"
)

// counters are what a limiter counts for Health. Each is on a cache line
// of its own, apart from the fields every call reads, so that counting on
// one core does not evict them from the others.
type counters struct {
	_        [64]byte
	store    atomic.Uint64 // decisions Redis made (not the deny cache's)
	_        [56]byte
	local    atomic.Uint64 // decisions made by WithFallback's limiter
	_        [56]byte
	failures atomic.Uint64 // calls that failed, not those the breaker turned away
	_        [56]byte
}

// localLimiter returns the in-memory limiter WithFallback asks for, made by
// mk with its core options, or nil without WithFallback.
func localLimiter[T core.Limiter](o *options, mk func(opts ...core.Option) (T, error)) (core.Limiter, error) {
	if !o.fallback {
		return nil, nil
	}
	local, err := mk(o.local...)
	if err != nil {
		return nil, fmt.Errorf("redisstore: WithFallback: %w", err)
	}
	return local, nil
}

// allowLocal answers a call whose round trip to Redis failed with err:
// with err, or, when the limiter falls back, with the local limiter's
// decision (with local quota: under this instance's share of the key's
// limit, quota_fallback.go). It sits on the error path alone, so that a
// decision from Redis or the deny cache pays nothing for the fallback.
func (l *Limiter) allowLocal(ctx context.Context, key string, cost int, err error) (core.Decision, error) {
	if !l.failed(ctx, err) {
		return core.Decision{}, err
	}
	if l.share != nil {
		if d, ok := l.allowShare(key, cost); ok {
			l.count.local.Add(1)
			return d, nil
		}
	}
	d, err := l.local.Allow(ctx, key, cost)
	if err == nil {
		l.count.local.Add(1)
	}
	return d, err
}

// refundLocal answers a refund whose round trip to Redis failed with err,
// as allowLocal answers a decision. A refund is exact only if it goes where
// the charge was made, which the breaker's state at each call decides.
func (l *Limiter) refundLocal(ctx context.Context, key string, cost int, err error) error {
	if !l.failed(ctx, err) {
		return err
	}
	if l.share != nil && l.refundShare(key, cost) {
		return nil
	}
	return l.local.Refund(ctx, key, cost)
}

// failed counts a call that failed with err, if the failure is Redis's
// (neither the caller's, who gave up, nor the request's, such as an
// invalid cost, nor the open breaker's), and reports whether the call goes
// to the local limiter instead: a store error of a caller still waiting,
// on a limiter made WithFallback.
func (l *Limiter) failed(ctx context.Context, err error) bool {
	if ctx.Err() != nil || !errors.Is(err, core.ErrStore) {
		return false
	}
	if !errors.Is(err, errCircuitOpen) {
		l.count.failures.Add(1)
	}
	return l.local != nil
}

// Health reports the state of the limiter's circuit breaker (on a
// Cluster, the worst of its masters': open before half-open before
// closed) and its counters: decisions made by Redis (one per call that
// reached it; the deny cache's refusals, made in process, are not
// counted), decisions made locally (WithFallback), calls that failed and
// how often the breaker opened. Metrics read it at each scrape (promobs.WithHealth); it is cheap
// and safe for concurrent use.
func (l *Limiter) Health() core.Health {
	h := core.Health{
		Breaker:        l.breakerState().String(),
		StoreDecisions: l.count.store.Load(),
		LocalDecisions: l.count.local.Load(),
		Failures:       l.count.failures.Load(),
		LeaseDecisions: l.quotaCount.leased.Load(),
		Leases:         l.quotaCount.grants.Load(),
		Returned:       uint64(l.quotaCount.returned.Load()),
		Returns:        l.quotaCount.returns.Load(),
	}
	l.breakers(func(b *breaker.Breaker) { h.Opens += b.Opens() })
	return h
}

// Health reports the stack's health, as Limiter.Health does.
func (s *Stack) Health() core.Health { return s.l.Health() }

// Health reports the limiter's health, as Limiter.Health does; all zero,
// and closed, before its first call.
func (d *Dynamic) Health() core.Health {
	if l := d.l.Load(); l != nil {
		return l.Health()
	}
	return core.Health{Breaker: "closed"}
}
