package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/breaker"
	"github.com/floodgate/floodgate/internal/option"
)

// Limiter is a core.Limiter whose per-key state lives in Redis, shared by
// every process that uses the same server, prefix and limit. It is safe for
// concurrent use.
type Limiter struct {
	client  redis.UniversalClient
	script  *redis.Script
	pol     *policy // nil for a Dynamic's
	alg     core.Algorithm
	margin  time.Duration
	suffix  string     // "}:" plus the algorithm and the limit's parameters (a Dynamic's: the algorithm only)
	prefix  string     // the key prefix plus "{"
	clock   core.Clock // the process's clock, for the deny cache
	testNow core.Clock // nil: the scripts read the server's TIME
	timeout time.Duration
	deny    *denyCache
	one     *route   // the server's breaker and queue; nil on a Cluster
	masters *masters // a Cluster's, one route per master; nil for other clients
}

// New returns a Limiter enforcing l with client, which may be a single
// node, a Sentinel-backed failover client or a Cluster client. It checks
// the limit and the options; it does not contact the server (the first
// decision loads the script).
func New(client redis.UniversalClient, l core.Limit, opts ...Option) (*Limiter, error) {
	if client == nil {
		return nil, errNilClient
	}
	if err := l.Validate(); err != nil {
		return nil, err
	}
	lim, err := newLimiter(client, opts)
	if err != nil {
		return nil, err
	}
	if lim.pol, err = newPolicy(lim.alg, lim.margin, l); err != nil {
		return nil, err
	}
	lim.suffix = fmt.Sprintf("}:%s:%d/%d:%d", algTag(lim.alg), l.Events, int64(l.Period), l.EffectiveBurst())
	return lim, nil
}

var errNilClient = errors.New("redisstore: nil client; pass a *redis.Client, *redis.ClusterClient or redis.NewUniversalClient(...)")

// policy is one limit's part of the script's arguments, made once.
type policy struct {
	limit   core.Limit
	maxCost int
	fixed   []any // the TTL margin in ms, then the algorithm's parameters
}

func newPolicy(alg core.Algorithm, margin time.Duration, l core.Limit) (*policy, error) {
	p, maxCost, err := params(alg, l)
	if err != nil {
		return nil, err
	}
	return &policy{limit: l, maxCost: maxCost, fixed: fixedArgs(margin, p)}, nil
}

// newLimiter returns a Limiter for opts without its limit.
func newLimiter(client redis.UniversalClient, opts []Option) (*Limiter, error) {
	o := defaultOptions()
	errs := option.Errors{Prefix: "redisstore: "}
	if err := option.Apply(&o, &errs, opts); err != nil {
		return nil, err
	}
	if err := o.validate(&errs); err != nil {
		return nil, err
	}
	if _, ok := scripts[o.algorithm]; !ok {
		return nil, fmt.Errorf("redisstore: unknown algorithm %d; use core.TokenBucket, core.GCRA, core.FixedWindow or core.SlidingWindow", int(o.algorithm))
	}
	lim := &Limiter{
		client:  client,
		script:  scripts[o.algorithm],
		alg:     o.algorithm,
		margin:  o.margin,
		prefix:  o.prefix + "{",
		clock:   o.clock,
		testNow: o.script,
		timeout: o.timeout,
	}
	var err error
	if o.denyCache > 0 {
		lim.deny = newDenyCache(o.denyCache)
	}
	rs := routes{batching: o.batching, inFlight: o.inFlight, size: o.batchSize}
	if o.breaker {
		rs.breaker = &breaker.Config{Threshold: o.threshold, OpenFor: o.openFor, MaxOpenFor: o.maxOpenFor, Clock: o.clock}
	}
	if cc, ok := client.(*redis.ClusterClient); ok {
		lim.masters, err = newMasters(cc, rs)
	} else {
		lim.one, err = rs.make()
	}
	if err != nil { // validate has checked every field
		return nil, fmt.Errorf("redisstore: %w", err)
	}
	return lim, nil
}

// fixedArgs returns the script arguments that never change: ARGV[5...].
func fixedArgs(margin time.Duration, params []string) []any {
	a := []any{strconv.FormatInt(margin.Milliseconds(), 10)}
	for _, p := range params {
		a = append(a, p)
	}
	return a
}

// MustNew is New, panicking on error; for limits and options fixed in code.
func MustNew(client redis.UniversalClient, l core.Limit, opts ...Option) *Limiter {
	lim, err := New(client, l, opts...)
	if err != nil {
		panic(err)
	}
	return lim
}

// Key returns the Redis key that holds key's state (see the package
// documentation for the layout).
func (l *Limiter) Key(key string) string { return l.prefix + key + l.suffix }

// Limit returns the limit the Limiter enforces.
func (l *Limiter) Limit() core.Limit { return l.pol.limit }

// Allow decides whether key may spend cost units now and, if so, charges
// them, in one round trip (none when the deny cache answers). A server that
// cannot be reached or answers with an error gives a *core.StoreError
// (errors.Is(err, core.ErrStore)) and no decision: the caller's failure mode
// decides, never this package. While the circuit breaker is open, that
// error comes at once, with cause ErrCircuitOpen.
func (l *Limiter) Allow(ctx context.Context, key string, cost int) (core.Decision, error) {
	return l.allow(ctx, l.pol, key, cost)
}

// allow is Allow under p.
func (l *Limiter) allow(ctx context.Context, p *policy, key string, cost int) (core.Decision, error) {
	if err := p.checkCost(cost); err != nil {
		return core.Decision{}, err
	}
	start := l.clock.Now()
	if l.deny != nil && cost == 1 {
		if d, ok := l.deny.lookup(key, p, start); ok {
			d.Limit = p.limit
			return d, nil
		}
	}
	v, err := l.call(ctx, p, "allow", 'a', key, cost)
	if err != nil {
		return core.Decision{}, err
	}
	d := core.Decision{
		Allowed:    v[0] == 1,
		Limit:      p.limit,
		Remaining:  int(v[1]),
		RetryAfter: time.Duration(v[2]),
		ResetAfter: time.Duration(v[3]),
	}
	if l.deny != nil && l.pol == nil && d.Allowed {
		// A Dynamic's key refused under another limit may hold an entry
		// that this admission, under this one, makes stale.
		l.deny.forget(key)
	}
	if l.deny != nil && cost == 1 && !d.Allowed {
		// Counted from before the round trip: the entry never outlives the
		// server's own answer.
		l.deny.store(key, p, start+int64(d.RetryAfter), start+int64(d.ResetAfter))
	}
	return d, nil
}

// Refund gives back cost units charged to key, never beyond a whole quota,
// in one round trip. It fails as Allow does, ErrCircuitOpen included.
func (l *Limiter) Refund(ctx context.Context, key string, cost int) error {
	return l.refund(ctx, l.pol, key, cost)
}

// refund is Refund under p.
func (l *Limiter) refund(ctx context.Context, p *policy, key string, cost int) error {
	if err := p.checkCost(cost); err != nil {
		return err
	}
	if l.deny != nil {
		l.deny.forget(key)
	}
	_, err := l.call(ctx, p, "refund", 'r', key, cost)
	return err
}

func (p *policy) checkCost(cost int) error {
	if cost < 1 {
		return fmt.Errorf("%w: cost must be >= 1, got %d", core.ErrInvalidCost, cost)
	}
	if cost > p.maxCost {
		return fmt.Errorf("%w: cost %d, at most %d under %s", core.ErrCostTooLarge, cost, p.maxCost, p.limit)
	}
	return nil
}

// Script arguments boxed once: converting a string to any allocates.
var (
	argAllow, argRefund, argNoClock any = "a", "r", ""
	smallCosts                          = func() (c [65]any) {
		for i := range c {
			c[i] = strconv.Itoa(i)
		}
		return c
	}()
)

// args returns the script's arguments for one call: ARGV[1...].
func (l *Limiter) args(p *policy, code byte, cost int) []any {
	args := make([]any, 4, 4+len(p.fixed))
	args[0] = argAllow
	if code == 'r' {
		args[0] = argRefund
	}
	if cost < len(smallCosts) {
		args[1] = smallCosts[cost]
	} else {
		args[1] = strconv.Itoa(cost)
	}
	args[2], args[3] = argNoClock, argNoClock
	if l.testNow != nil {
		t := l.testNow.Now()
		args[2], args[3] = strconv.FormatInt(t/int64(time.Second), 10), strconv.FormatInt(t%int64(time.Second), 10)
	}
	return append(args, p.fixed...)
}

// reply reads the script's four numbers from cmd.
func reply(op string, cmd *redis.Cmd) ([4]int64, error) {
	var out [4]int64
	res, err := cmd.Int64Slice()
	if err != nil {
		return out, &core.StoreError{Op: op, Err: err}
	}
	if len(res) != len(out) {
		return out, &core.StoreError{Op: op, Err: fmt.Errorf("redisstore: script answered %d numbers, want %d", len(res), len(out))}
	}
	copy(out[:], res)
	return out, nil
}
