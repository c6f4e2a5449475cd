package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
)

// Multi decides several keys at once, each under its own limits, all or
// nothing: a request that must pass several limiters (a client's limit,
// an endpoint's, a tenant's) is admitted only if every one admits it, and
// when one refuses, none is charged. It is what a service deciding many
// rate limits per request (cmd/floodgate-ratelimit) uses instead of one
// Limiter per rule called in turn.
//
// An item's state lives where a Limiter (one limit) or a Stack (several)
// made with the same limits and options keeps that key's, so a Multi and
// those limiters share it. Every algorithm a Stack takes is taken but
// core.Concurrency and core.LeakyBucket, whose admissions carry a lease or
// a wait that no all-or-nothing answer can hold.
//
// On a single server, or a Sentinel-backed one, a call is one script and
// one round trip, whatever its items and their algorithms. On a Cluster,
// items whose keys hash to different slots cannot share a script: a call
// sends one script per slot, all of them in one pipeline per master, the
// masters concurrently, so that it takes one round trip of wall time; when
// a slot's script refuses (or fails) while others admitted, the admitted
// ones are refunded in a second round trip. So a Cluster never admits over
// a limit, but between the charge and the refund another request may find
// those keys short of the refunded units and be refused.
//
// The circuit breaker, the timeout, the failure reporting, Health and
// batching (WithBatching) are a Limiter's: concurrent calls share each
// server's round trips, each call one script of a pipeline (a call on
// several Cluster masters goes at once, in a pipeline of its own, while
// none of them has other calls under way, and otherwise shares each one's
// round trips; it never waits on a master it does not name). A script is
// never sent twice for one call. There is no deny cache
// (a refusal is one item's, the answer every item's), and WithFallback is
// refused. WithLocalQuota decides a call in memory when every item's key
// holds a lease with enough units, with the bound it states (see
// multi_quota.go). A Multi is safe for concurrent use.
type Multi struct {
	l       *Limiter
	layers  sync.Map    // core.Limit, unnamed → *multiLayer
	quota   *multiQuota // WithLocalQuota's leases (multi_quota.go); nil without it
	generic bool        // tests only: never the short form of fixed windows
	windows bool        // WithClientClockWindows (multi_pipe.go)
}

// Item is one key of a Multi's call, the limits it must pass (all of
// them, as a Stack's) and what it costs.
type Item struct {
	// Key is the client key, as given to a Limiter's Allow.
	Key string
	// Limits are the policies the key must pass, at least one; each a
	// whole policy, its algorithm and settings included.
	Limits []core.Limit
	// Cost is the units charged to every limit, at least 1.
	Cost int
}

// multiLayer is what a Multi's script needs of one limit: the end of its
// key after the base key, its script arguments (the algorithm's function,
// the number of its parameters, then them) and the largest cost it admits.
// A plain fixed window (fw) also has the shorter arguments of a call of
// fixed windows only (lua/multi.lua): its period and events.
type multiLayer struct {
	end     string
	args    []any
	fwArgs  []any
	maxCost int
	log     bool // a sorted set (core.SlidingLog): one key at most once per call
	fw      bool
}

// NewMulti returns a Multi on client, which may be a single node, a
// Sentinel-backed failover client or a Cluster client. The options
// configure the store, as for New; WithFallback is refused, and
// WithDenyCache and WithLeaseTTL change nothing. With WithLocalQuota a
// call whose every key holds a lease (as a Limiter or a Stack of the
// item's limits made WithLocalQuota takes them) with enough units is
// decided in memory, all or nothing, and Decision.Leased is set on each
// of its decisions; any other call goes to Redis, and asks leases for its
// hot keys in the background. The bound is WithLocalQuota's: no more is
// admitted than by one shared Multi over the same interval widened by the
// leases' Length, and no fixed window admits more than its limit.
func NewMulti(client redis.UniversalClient, opts ...Option) (*Multi, error) {
	if client == nil {
		return nil, errNilClient
	}
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	if o.fallback {
		return nil, errors.New("redisstore: NewMulti: WithFallback decides one key in memory, but a Multi's call holds for every key of it; drop the option and let the caller's failure mode answer a store error")
	}
	var mq *multiQuota
	if o.quota != nil {
		// The leases are its leasers'; the Multi's own script has none.
		mq = &multiQuota{client: client, opts: opts, by: map[string]*Limiter{}, known: map[knownLimits]known{}}
		o.quota = nil
	}
	o.denyCache = 0
	windows := o.clientWindows
	if windows && mq != nil {
		return nil, errClientWindowsQuota("NewMulti")
	}
	o.clientWindows = false
	lim, err := newLimiter(client, o, multiScript, "}")
	if err != nil {
		return nil, err
	}
	return &Multi{l: lim, quota: mq, windows: windows}, nil
}

// layer returns l's part of a call, made on first use and kept: a Multi
// remembers each distinct limit it has decided.
func (m *Multi) layer(l core.Limit) (*multiLayer, error) {
	l.Name = "" // keys and arguments never hold it
	if v, ok := m.layers.Load(l); ok {
		return v.(*multiLayer), nil
	}
	if err := l.Validate(); err != nil {
		return nil, err
	}
	if l.Algorithm == core.Concurrency || l.Algorithm == core.LeakyBucket {
		return nil, fmt.Errorf("redisstore: Multi: %v cannot be decided with other keys all or nothing (its admissions carry a lease or a wait); use a Limiter", l.Algorithm)
	}
	o := m.l.opts
	o.setPolicy(l)
	_, tag, p, maxCost, err := compile(&o, l)
	if err != nil {
		return nil, err
	}
	args := make([]any, 0, 2+len(p))
	args = append(args, fnID(sourceOf(&o)), strconv.Itoa(len(p)))
	for _, v := range p {
		args = append(args, v)
	}
	ly := &multiLayer{end: ":" + keyTag(tag, l) + o.settingsTag(), args: args, maxCost: maxCost, log: l.Algorithm == core.SlidingLog && l.SubWindows == 0}
	if args[0] == fnID(sources[core.FixedWindow]) {
		ly.fw, ly.fwArgs = true, args[2:]
	}
	v, _ := m.layers.LoadOrStore(l, ly)
	return v.(*multiLayer), nil
}

// Allow decides every item now, all or nothing: if each item's limits all
// admit its cost, every item is charged, in one round trip (on a Cluster,
// see Multi); if any refuses, none is. The decisions are in the items'
// order, each as the item's own Limiter or Stack would make it on that
// state (its Limit the one its decision names, Remaining, RetryAfter,
// ResetAfter), an item after one that refuses seeing none of that one's
// charges; the call admitted the items only if every decision is Allowed. An item that admits in a call another item refuses reports the
// admission its charge would have been, though nothing was charged: its
// Remaining is then short of the truth by its cost.
//
// An item without limits, with an invalid cost or a cost above what one of
// its limits can ever admit, or under an algorithm a Multi does not take,
// is an error for the whole call (core.ErrInvalidCost for a cost), made
// before any round trip; so is a sliding log's key named twice. A store
// failure is a *core.StoreError, as for a Limiter, and no decision; on
// several Cluster masters it also matches ErrPartial.
func (m *Multi) Allow(ctx context.Context, items []Item) ([]core.Decision, error) {
	if m.quota != nil && len(items) > 0 {
		return m.allowQuota(ctx, items)
	}
	c, err := m.prepare(ctx, items)
	if err != nil || len(items) == 0 {
		return nil, err
	}
	if m.windows {
		if win, scr := splitWindows(c, items); len(win) > 0 {
			return m.allowMixed(ctx, c, items, win, scr)
		}
	}
	return m.allow(ctx, c, items)
}

// Refund gives each item's cost back to each of its limits, never beyond a
// whole quota, in one round trip (on a Cluster, one of wall time). It
// fails as Allow does; on a Cluster, a failed slot's refund may be lost
// while the others are made.
func (m *Multi) Refund(ctx context.Context, items []Item) error {
	c, err := m.prepare(ctx, items)
	if err != nil || len(items) == 0 {
		return err
	}
	if m.windows {
		if win, scr := splitWindows(c, items); len(win) > 0 {
			return m.refundMixed(ctx, c, items, win, scr)
		}
	}
	return m.refund(ctx, c, nil)
}

// Health reports the breaker's state and counters, as Limiter.Health does:
// a call that reached Redis counts one decision, whatever its items, and
// with WithLocalQuota a call decided from leases one LeaseDecisions; Leases
// and Returned are its leases' grants and units given back.
func (m *Multi) Health() core.Health {
	if m.quota != nil {
		return m.quotaHealth(m.l.Health())
	}
	return m.l.Health()
}
