package redisstore

import (
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/breaker"
)

// Waiting returns how many of l's calls wait for a round trip to its
// server (not a Cluster's).
func Waiting(l *Limiter) int {
	q := l.one.q
	if q == nil {
		return 0
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.waiting)
}

// Idle reports whether none of l's round trips to its server (not a
// Cluster's) is under way: a batch's answers reach their callers before
// the goroutine that sent it gives its slot back.
func Idle(l *Limiter) bool {
	q := l.one.q
	if q == nil {
		return true
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.inFlight == 0 && len(q.waiting) == 0
}

// WithAfterFunc replaces time.AfterFunc for the renewal of concurrency
// leases, so that tests fire renewals when they choose.
func WithAfterFunc(after func(d time.Duration, f func()) (stop func() bool)) Option {
	return func(o *options) { o.after = after }
}

// MustNew is New, panicking on error.
func MustNew(client redis.UniversalClient, l core.Limit, opts ...Option) *Limiter {
	lim, err := New(client, l, opts...)
	if err != nil {
		panic(err)
	}
	return lim
}

// Test hooks and the package's unexported values, for tests.
var (
	WithClock       = withClock
	WithScriptClock = withScriptClock
	WithTTLMargin   = withTTLMargin
	ErrCircuitOpen  = errCircuitOpen
)

const (
	DefaultTTLMargin     = defaultTTLMargin
	DefaultDenyCacheSize = defaultDenyCacheSize
	DefaultTimeout       = defaultTimeout
	DefaultPrefix        = defaultPrefix
)

// The breaker's defaults.
const (
	DefaultBreakerWindow   = breaker.DefaultWindow
	DefaultBreakerMinCalls = breaker.DefaultMinCalls
	DefaultBreakerOpenFor  = breaker.DefaultOpenFor
)

// Key returns the Redis key that holds key's state.
func (l *Limiter) Key(key string) string { return l.key(key) }

// Keys returns the Redis keys that hold key's state, one per layer.
func (s *Stack) Keys(key string) []string { return s.l.keys(s.l.key(key)) }

// Key returns the Redis key that holds key's state, whatever its limit;
// "" when key's limit is invalid or cannot join the limiter's.
func (d *Dynamic) Key(key string) string {
	if _, err := d.policy(d.limitOf(key)); err != nil {
		return ""
	}
	return d.l.Load().key(key)
}

// QuotaSettle waits for l's lease returns under way.
func QuotaSettle(l core.Limiter) { limiterOf(l).quota.giving.Wait() }

// limiterOf is the Limiter behind lim, a Limiter, a Stack or a Dynamic
// (after its first call).
func limiterOf(lim core.Limiter) *Limiter {
	switch l := lim.(type) {
	case *Stack:
		return l.l
	case *Dynamic:
		return l.l.Load()
	}
	return lim.(*Limiter)
}

// QuotaCounts returns the grants answered, the decisions made from leases
// (the calls that took them included) and the units given back.
func QuotaCounts(lim core.Limiter) (grants, leased uint64, returned int64) {
	l := limiterOf(lim)
	if l == nil { // a Dynamic before its first call
		return 0, 0, 0
	}
	return l.quotaCount.grants.Load(), l.quotaCount.leased.Load(), l.quotaCount.returned.Load()
}

// QuotaHeld returns the units l holds for key and the holders its last
// grant reported.
func QuotaHeld(lim core.Limiter, key string) (units, holders int64) {
	l := limiterOf(lim)
	q := l.quota.get(key, l.clock.Now())
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.units, q.holders
}

// LimiterOf returns the Limiter m's calls go through, for Waiting and Idle.
func LimiterOf(m *Multi) *Limiter { return m.l }

// MultiSettle waits for m's lease grants and returns under way; with lease
// ends on a fake timer (WithAfterFunc), which adds none meanwhile.
func MultiSettle(m *Multi) {
	m.quota.asking.Wait()
	m.quota.mu.RLock()
	defer m.quota.mu.RUnlock()
	for _, l := range m.quota.by {
		if l != nil {
			l.quota.giving.Wait()
		}
	}
}

// MultiHeld returns the units m's lease on key under limits holds.
func MultiHeld(m *Multi, key string, limits ...core.Limit) int64 {
	l := m.leasable(Item{Key: key, Limits: limits, Cost: 1})
	q := l.quota.get(key, l.clock.Now())
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.units
}

// Generic makes m send every call in the generic form, never the short
// form of fixed windows (lua/multi.lua), so that a test can compare them.
func Generic(m *Multi) { m.generic = true }

// WindowKey is the key m charges for key under l at now with
// WithClientClockWindows.
func WindowKey(m *Multi, key string, l core.Limit, now int64) string {
	k, _ := m.l.windowKey(key, l, now)
	return k
}

// MultiKey is the Redis key of key under l in m's calls.
func MultiKey(m *Multi, key string, l core.Limit) string {
	ly, err := m.layer(l)
	if err != nil {
		panic(err)
	}
	return m.l.keyEnd(key, ly.end)
}
