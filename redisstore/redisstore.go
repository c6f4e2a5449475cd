package redisstore

import (
	"context"
	"errors"
	"fmt"
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
	client    redis.UniversalClient
	script    *script
	functions bool    // FCALL is tried: see loadable
	pol       *policy // the limit and its script arguments; nil for a Dynamic's
	alg       core.Algorithm
	opts      options    // what the Limiter was made with, for a Dynamic's policies
	suffix    string     // "}:" plus the algorithm, the limit's parameters and the algorithm's settings (a Dynamic's: no limit)
	prefix    string     // the key prefix plus "{"
	clock     core.Clock // the process's clock, for the deny cache
	testNow   core.Clock // nil: the scripts read the server's TIME
	timeout   time.Duration
	margins   margins // the TTL margins a call draws from (see WithTTLJitter)
	deny      *denyCache
	one       *route   // the server's breaker and queue; nil on a Cluster
	masters   *masters // a Cluster's, one route per master; nil for other clients

	// A stack's: each layer's limit, and the end of its key after the
	// base key (prefix, {key}); nil for one limit.
	limits []core.Limit
	layers []string
	leased []bool // whether each layer is a concurrency limit; nil if none is

	leases *leases // core.Concurrency's lease ids and renewal; nil for the others

	local core.Limiter // WithFallback's in-memory limiter; nil without it
	share *shares      // WithFallback's shares of each key's limit, with local quota; nil otherwise
	count counters     // for Health

	quota      *quotas // the local quota's leases; nil without it
	quotaCount quotaCounts

	// WithClientClockWindows: the one fixed window, charged by pipelined
	// commands (windows.go); nil: the script decides.
	windows []core.Limit
}

var errNilClient = errors.New("redisstore: nil client; pass a *redis.Client, *redis.ClusterClient or redis.NewUniversalClient(...)")

// New returns a Limiter enforcing the policy l with client, which may be
// a single node, a Sentinel-backed failover client or a Cluster client. It
// checks the limit and the options; it does not contact the server (the
// first decision loads the script).
func New(client redis.UniversalClient, l core.Limit, opts ...Option) (*Limiter, error) {
	if client == nil {
		return nil, errNilClient
	}
	if err := l.Validate(); err != nil {
		return nil, err
	}
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	o.setPolicy(l)
	script, tag, p, maxCost, err := compile(&o, l)
	if err != nil {
		return nil, err
	}
	windows := o.clientWindows
	if windows && (l.Algorithm != core.FixedWindow || o.quota != nil) {
		return nil, errClientWindowsLimit(l, o.quota != nil)
	}
	o.clientWindows = false
	lim, err := newLimiter(client, o, script, "}:"+keyTag(tag, l)+o.settingsTag())
	if err != nil {
		return nil, err
	}
	lim.pol = lim.newPolicy(l, maxCost, p)
	if windows {
		lim.windows = []core.Limit{l}
	}
	if o.quota != nil {
		if err := quotaAlgorithm(l.Algorithm, l.Overdraft); err != nil {
			return nil, err
		}
		lim.quota = newQuotas(*o.quota, l, lim.pol)
	}
	if lim.local, err = localLimiter(&o, func(opts ...core.Option) (*core.Keyed, error) { return core.New(l, opts...) }); err != nil {
		return nil, err
	}
	lim.share = lim.sharesOf()
	return lim, nil
}

// newOptions returns the options opts set, checked.
func newOptions(opts []Option) (options, error) {
	o := defaultOptions()
	errs := option.Errors{Prefix: "redisstore: "}
	if err := option.Apply(&o, &errs, opts); err != nil {
		return o, err
	}
	return o, o.validate(&errs)
}

// newLimiter returns a Limiter running script with o's settings, whose
// keys end in suffix, without its policy (the caller sets it, but for a
// Dynamic's).
func newLimiter(client redis.UniversalClient, o options, script *script, suffix string) (*Limiter, error) {
	if err := checkClient(client, o.timeout); err != nil {
		return nil, err
	}
	if o.clientWindows {
		return nil, errClientWindows
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
		margins: marginsOf(o.margin, o.jitter),

		functions: loadable(client),
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
	rs := routes{batching: o.batching(), inFlight: o.inFlight, size: o.batchSize}
	if o.breaker != (BreakerConfig{}) {
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

// Limit returns the limit the Limiter enforces.
func (l *Limiter) Limit() core.Limit { return l.pol.limit }

// Allow decides whether key may spend cost units now and, if so, charges
// them, in one round trip (none when the deny cache answers). Under
// core.LeakyBucket an admission carries the Delay the request must wait for
// its turn. A server that cannot be reached or answers with an error gives
// a *core.StoreError (errors.Is(err, core.ErrStore)) and no decision: the
// caller's failure mode decides, never this package; while the circuit
// breaker is open, that error comes at once. A limiter made WithFallback
// decides such a call locally instead.
func (l *Limiter) Allow(ctx context.Context, key string, cost int) (core.Decision, error) {
	if l.quota != nil {
		return l.allowQuota(ctx, l.pol, key, cost)
	}
	return l.allow(ctx, l.pol, key, cost)
}

// allow is Allow under p.
func (l *Limiter) allow(ctx context.Context, p *policy, key string, cost int) (core.Decision, error) {
	if err := p.checkCost(cost); err != nil {
		return core.Decision{}, err
	}
	var start int64
	var mark uint64
	if l.deny != nil {
		start = l.clock.Now()
		if cost == 1 {
			if d, layer, ok := l.deny.lookup(key, p, start); ok {
				d.Limit = l.limitAt(p, layer)
				return d, nil
			}
		}
		// Read only on the way to the server: a cached refusal pays
		// nothing for it.
		mark = l.deny.since()
	}
	member := ""
	if l.leases != nil {
		member = l.leases.member(cost)
	}
	if l.windows != nil {
		return l.allowWindow(ctx, p, key, cost, start, mark)
	}
	v, err := l.call(ctx, p, "allow", 'a', key, cost, member)
	if err != nil {
		// A lease the script took all the same (a timeout after the
		// server answered) expires unrenewed within its TTL.
		return l.allowLocal(ctx, key, cost, err)
	}
	l.count.store.Add(1) // after a round trip: the deny cache's answers pay nothing
	if v[0] == 2 {
		// A token bucket's admission: the tokens it left.
		if v, err = p.bucket.admitted(v); err != nil {
			return l.allowLocal(ctx, key, cost, err)
		}
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
		l.deny.keep(mark, key, p, start+int64(d.RetryAfter), start+int64(d.ResetAfter), v[4])
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

// Refund gives back cost units charged to key, never beyond a whole quota,
// in one round trip: under core.LeakyBucket, a cancelled wait's turn (the
// line drains cost intervals sooner, never before now). It fails as Allow
// does, and falls back as Allow does. Under core.Concurrency it lowers the
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
	var err error
	if l.windows != nil {
		err = l.refundWindows(ctx, l.windowGroup(ctx, key), l.windowItem(key, cost))
	} else {
		_, err = l.call(ctx, p, "refund", 'r', key, cost, "")
	}
	if l.deny != nil {
		l.deny.refunded(key)
	}
	if err != nil {
		return l.refundLocal(ctx, key, cost, err)
	}
	return nil
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
