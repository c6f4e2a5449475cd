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
	limit   core.Limit
	alg     core.Algorithm
	maxCost int
	suffix  string     // "}:" plus the algorithm, the limit's parameters and the algorithm's settings
	prefix  string     // the key prefix plus "{"
	fixed   []any      // the TTL margin in ms, then the algorithm's parameters
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
		return nil, errors.New("redisstore: nil client; pass a *redis.Client, *redis.ClusterClient or redis.NewUniversalClient(...)")
	}
	if err := l.Validate(); err != nil {
		return nil, err
	}
	o := defaultOptions()
	errs := option.Errors{Prefix: "redisstore: "}
	if err := option.Apply(&o, &errs, opts); err != nil {
		return nil, err
	}
	if err := o.validate(&errs); err != nil {
		return nil, err
	}
	p, maxCost, err := params(o.algorithm, l, &o)
	if err != nil {
		return nil, err
	}
	lim := &Limiter{
		client:  client,
		script:  scripts[o.algorithm],
		limit:   l,
		alg:     o.algorithm,
		maxCost: maxCost,
		prefix:  o.prefix + "{",
		suffix:  fmt.Sprintf("}:%s:%d/%d:%d%s", algTag(o.algorithm), l.Events, int64(l.Period), l.EffectiveBurst(), o.settingsTag()),
		fixed:   fixedArgs(o.margin, p),
		clock:   o.clock,
		testNow: o.script,
		timeout: o.timeout,
	}
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
func (l *Limiter) Limit() core.Limit { return l.limit }

// Allow decides whether key may spend cost units now and, if so, charges
// them, in one round trip (none when the deny cache answers). Under
// core.LeakyBucket an admission carries the Delay the request must wait for
// its turn. A server that
// cannot be reached or answers with an error gives a *core.StoreError
// (errors.Is(err, core.ErrStore)) and no decision: the caller's failure mode
// decides, never this package. While the circuit breaker is open, that
// error comes at once, with cause ErrCircuitOpen.
func (l *Limiter) Allow(ctx context.Context, key string, cost int) (core.Decision, error) {
	if err := l.checkCost(cost); err != nil {
		return core.Decision{}, err
	}
	start := l.clock.Now()
	if l.deny != nil && cost == 1 {
		if d, ok := l.deny.lookup(key, start); ok {
			d.Limit = l.limit
			return d, nil
		}
	}
	v, err := l.call(ctx, "allow", 'a', key, cost)
	if err != nil {
		return core.Decision{}, err
	}
	d := core.Decision{
		Allowed:    v[0] == 1,
		Limit:      l.limit,
		Remaining:  int(v[1]),
		ResetAfter: time.Duration(v[3]),
	}
	// An admission has no RetryAfter: its slot carries the Delay of a
	// shaper (LeakyBucket's wait for its turn; 0 for the others).
	if d.Allowed {
		d.Delay = time.Duration(v[2])
	} else {
		d.RetryAfter = time.Duration(v[2])
	}
	if l.deny != nil && cost == 1 && !d.Allowed {
		// Counted from before the round trip: the entry never outlives the
		// server's own answer.
		l.deny.store(key, start+int64(d.RetryAfter), start+int64(d.ResetAfter))
	}
	return d, nil
}

// Refund gives back cost units charged to key, never beyond a whole quota,
// in one round trip: under core.LeakyBucket, a cancelled wait's turn (the
// line drains cost intervals sooner, never before now). It fails as Allow does, ErrCircuitOpen included.
func (l *Limiter) Refund(ctx context.Context, key string, cost int) error {
	if err := l.checkCost(cost); err != nil {
		return err
	}
	if l.deny != nil {
		l.deny.forget(key)
	}
	_, err := l.call(ctx, "refund", 'r', key, cost)
	return err
}

func (l *Limiter) checkCost(cost int) error {
	if cost < 1 {
		return fmt.Errorf("%w: cost must be >= 1, got %d", core.ErrInvalidCost, cost)
	}
	if cost > l.maxCost {
		return fmt.Errorf("%w: cost %d, at most %d under %s", core.ErrCostTooLarge, cost, l.maxCost, l.limit)
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
func (l *Limiter) args(code byte, cost int) []any {
	args := make([]any, 4, 4+len(l.fixed))
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
	return append(args, l.fixed...)
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
