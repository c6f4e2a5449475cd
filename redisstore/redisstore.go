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
	script  *script
	pol     *policy // the limit and its script arguments; nil for a Dynamic's
	alg     core.Algorithm
	opts    options    // what the Limiter was made with, for a Dynamic's policies
	suffix  string     // "}:" plus the algorithm, the limit's parameters and the algorithm's settings (a Dynamic's: no limit)
	prefix  string     // the key prefix plus "{"
	clock   core.Clock // the process's clock, for the deny cache
	testNow core.Clock // nil: the scripts read the server's TIME
	timeout time.Duration
	deny    *denyCache
	one     *route   // the server's breaker and queue; nil on a Cluster
	masters *masters // a Cluster's, one route per master; nil for other clients

	// A stack's: each layer's limit, and the end of its key after the
	// base key (prefix, {key}); nil for one limit.
	limits []core.Limit
	layers []string
	leased []bool // whether each layer is a concurrency limit; nil if none is

	leases *leases // core.Concurrency's lease ids and renewal; nil for the others
}

// policy is one limit's part of a call: the limit, the largest cost it
// admits and the script's arguments that never change (ARGV[5...]), made
// once. A Limiter has one; a Dynamic one per limit.
type policy struct {
	limit   core.Limit
	maxCost int
	fixed   []any
}

var errNilClient = errors.New("redisstore: nil client; pass a *redis.Client, *redis.ClusterClient or redis.NewUniversalClient(...)")

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
	o := defaultOptions()
	errs := option.Errors{Prefix: "redisstore: "}
	if err := option.Apply(&o, &errs, opts); err != nil {
		return nil, err
	}
	if err := o.validate(&errs); err != nil {
		return nil, err
	}
	o.setPolicy(l)
	script, tag, p, maxCost, err := compile(&o, l)
	if err != nil {
		return nil, err
	}
	lim, err := newLimiter(client, o, script, "}:"+keyTag(tag, l)+o.settingsTag())
	if err != nil {
		return nil, err
	}
	lim.pol = lim.newPolicy(l, maxCost, p)
	return lim, nil
}

// newPolicy returns l's policy on lim, whose script takes params for it.
func (lim *Limiter) newPolicy(l core.Limit, maxCost int, params []string) *policy {
	fixed := fixedArgs(lim.opts.margin, params)
	if lim.leases != nil {
		fixed = append(fixed, strconv.FormatInt(lim.leases.ttl.Microseconds(), 10))
	}
	return &policy{limit: l, maxCost: maxCost, fixed: fixed}
}

// compile returns the script that decides under o's algorithm and
// settings, the algorithm's tag in keys, the script's parameters for l
// (ARGV[6...]) and the largest cost l can ever admit, or an error saying
// what to change.
func compile(o *options, l core.Limit) (*script, string, []string, int, error) {
	p, maxCost, err := params(o.algorithm, l, o)
	if err != nil {
		return nil, "", nil, 0, err
	}
	if o.algorithm == core.SlidingLog || o.subWindows != 0 {
		extra, err := logParams(o, l)
		if err != nil {
			return nil, "", nil, 0, err
		}
		p = append(p, extra...)
	}
	script, tag := scriptOf(o)
	return script, tag, p, maxCost, nil
}

// scriptOf returns the script that decides under o's algorithm and
// settings, and the algorithm's tag in keys.
func scriptOf(o *options) (*script, string) {
	if o.subWindows != 0 {
		// Its own encoding: never the two-window counter's key.
		return subWindowsScript, fmt.Sprintf("sw%d", o.subWindows)
	}
	return scripts[o.algorithm], algTag(o.algorithm)
}

// sourceOf returns the files of lua/ whose script decides under o's
// algorithm and settings.
func sourceOf(o *options) []string {
	if o.subWindows != 0 {
		return subWindowsSource
	}
	return sources[o.algorithm]
}

// keyTag names an algorithm (its tag) and a limit in keys: the tag, then
// the limit's parameters.
func keyTag(tag string, l core.Limit) string {
	return fmt.Sprintf("%s:%d/%d:%d", tag, l.Events, int64(l.Period), l.EffectiveBurst())
}

// newLimiter returns a Limiter running script with o's settings, whose
// keys end in suffix, without its policy (the caller sets it, but for a
// Dynamic's).
func newLimiter(client redis.UniversalClient, o options, script *script, suffix string) (*Limiter, error) {
	if err := checkClient(client, o.timeout); err != nil {
		return nil, err
	}
	lim := &Limiter{
		client:  client,
		script:  script,
		alg:     o.algorithm,
		opts:    o,
		prefix:  o.prefix + "{",
		suffix:  suffix,
		clock:   o.clock,
		testNow: o.script,
		timeout: o.timeout,
	}
	if o.algorithm == core.Concurrency {
		// No deny cache: a refusal ends when any instance releases a
		// lease, at no instant the cache could know.
		o.denyCache = 0
		lim.leases = newLeases(o, o.ttl())
	}
	if o.denyCache > 0 {
		lim.deny = newDenyCache(o.denyCache)
	}
	rs := routes{batching: o.batching, inFlight: o.inFlight, size: o.batchSize}
	if o.breaker {
		rs.breaker = &breaker.Config{Rule: o.breakerRule(), Clock: o.clock}
	}
	var err error
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

// Limit returns the limit the Limiter enforces.
func (l *Limiter) Limit() core.Limit { return l.pol.limit }

// Allow decides whether key may spend cost units now and, if so, charges
// them, in one round trip (none when the deny cache answers). Under
// core.LeakyBucket an admission carries the Delay the request must wait for
// its turn. A server that
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
	var start int64
	if l.deny != nil {
		start = l.clock.Now()
		if cost == 1 {
			if d, layer, ok := l.deny.lookup(key, p, start); ok {
				d.Limit = l.limitAt(p, layer)
				return d, nil
			}
		}
	}
	member := ""
	if l.leases != nil {
		member = l.leases.member(cost)
	}
	v, err := l.call(ctx, p, "allow", 'a', key, cost, member)
	if err != nil {
		// A lease the script took all the same (a timeout after the
		// server answered) expires unrenewed within its TTL.
		return core.Decision{}, err
	}
	d := core.Decision{
		Allowed:    v[0] == 1,
		Limit:      l.limitAt(p, v[4]),
		Remaining:  int(v[1]),
		ResetAfter: time.Duration(v[3]),
	}
	// An admission has no RetryAfter: its slot carries the Delay of a
	// shaper (LeakyBucket's wait for its turn; 0 for the others).
	if d.Allowed {
		d.Delay = time.Duration(v[2])
		if l.leases != nil {
			d.Lease = l.hold(p, key, cost, member)
		}
	} else {
		d.RetryAfter = time.Duration(v[2])
	}
	if l.deny != nil && l.pol == nil && d.Allowed {
		// A Dynamic's key refused under another limit may hold an entry
		// that this admission, under this one, makes stale.
		l.deny.forget(key)
	}
	if l.deny != nil && cost == 1 && !d.Allowed && !l.leasedAt(v[4]) {
		// Counted from before the round trip: the entry never outlives the
		// server's own answer.
		l.deny.store(key, p, start+int64(d.RetryAfter), start+int64(d.ResetAfter), v[4])
	}
	return d, nil
}

// limitAt is the limit of the layer a reply names: p's unless the Limiter
// is a stack's.
func (l *Limiter) limitAt(p *policy, layer int64) core.Limit {
	if l.limits == nil {
		return p.limit
	}
	return l.limits[layer]
}

// keys returns the script's keys for the base key rkey: rkey itself, or a
// stack's key for each layer.
func (l *Limiter) keys(rkey string) []string {
	if l.layers == nil {
		return []string{rkey}
	}
	ks := make([]string, len(l.layers))
	for i, end := range l.layers {
		ks[i] = rkey + end
	}
	return ks
}

// Refund gives back cost units charged to key, never beyond a whole quota,
// in one round trip: under core.LeakyBucket, a cancelled wait's turn (the
// line drains cost intervals sooner, never before now). It fails as Allow
// does, ErrCircuitOpen included. Under core.Concurrency it lowers the
// units key holds, never below none, and leaves every lease as it is (see
// the package documentation).
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
	_, err := l.call(ctx, p, "refund", 'r', key, cost, "")
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
	argRelease, argRenew            any = "l", "n"
	smallCosts                          = func() (c [65]any) {
		for i := range c {
			c[i] = strconv.Itoa(i)
		}
		return c
	}()
)

// args returns the script's arguments for one call: ARGV[1...]; member,
// a concurrency lease's, goes last.
func (l *Limiter) args(p *policy, code byte, cost int, member string) []any {
	extra := 0
	if l.leases != nil {
		extra = 1
	}
	args := make([]any, 4, 4+len(p.fixed)+extra)
	switch code {
	case 'a':
		args[0] = argAllow
	case 'r':
		args[0] = argRefund
	case 'l':
		args[0] = argRelease
	case 'n':
		args[0] = argRenew
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
	args = append(args, p.fixed...)
	if l.leases != nil {
		args = append(args, member)
	}
	return args
}

// reply reads the script's numbers from cmd: four, and a stack's fifth,
// the layer its decision names.
func reply(op string, cmd *redis.Cmd) ([5]int64, error) {
	var out [5]int64
	res, err := cmd.Int64Slice()
	if err != nil {
		return out, &core.StoreError{Op: op, Err: err}
	}
	if len(res) != 4 && len(res) != 5 {
		return out, &core.StoreError{Op: op, Err: fmt.Errorf("redisstore: script answered %d numbers, want 4 or 5", len(res))}
	}
	copy(out[:], res)
	return out, nil
}
