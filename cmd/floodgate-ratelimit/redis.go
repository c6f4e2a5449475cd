package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/rls"
	"github.com/floodgate/floodgate/redisstore"
)

// redisTarget is one Redis the store uses and how to reach it.
type redisTarget struct {
	kind    string   // "single", "sentinel" or "cluster"
	network string   // "tcp", or "unix" for a single server's socket
	addrs   []string // the server, the Sentinels, or the Cluster's nodes
	master  string   // a Sentinel master's name
	db      int

	user, password                 string
	sentinelUser, sentinelPassword string
	tls                            *tls.Config // nil: plain

	poolSize  int                // 0: go-redis's default
	timeout   opt[time.Duration] // unset: redisstore's
	batchSize int                // 0: redisstore's
	source    string             // the flag or variable that named it
	urlAuth   string             // credentials the URL carried
	urlTLS    bool               // a rediss:// URL
}

// storeOptions are the Redis store's options both Redis share.
type storeOptions struct {
	prefix opt[string] // CACHE_KEY_PREFIX; unset: redisstore's
	// localCache is LOCAL_CACHE_SIZE_IN_BYTES: the bytes of the service's
	// cache of refused keys (rls.Config.LocalCacheBytes); 0: none.
	localCache int
	// denyCache is the limiters' own deny cache: set to 0 (none) when
	// LOCAL_CACHE_SIZE_IN_BYTES is set, which sizes the service's
	// instead; unset: redisstore's.
	denyCache opt[int]
	// jitter is EXPIRATION_JITTER_MAX_SECONDS; unset: none (upstream's
	// default is 300 s).
	jitter opt[time.Duration]
	// windows is -client-clock-windows: the Multi and the limiters of a
	// plain fixed window made redisstore.WithClientClockWindows, and no
	// leases (they are the script's).
	windows bool
}

// maxJitterSeconds is the longest EXPIRATION_JITTER_MAX_SECONDS, the
// longest jitter redisstore.WithTTLJitter takes.
const maxJitterSeconds = 24 * 60 * 60

// backoff is how a Redis unreachable at start is tried again: after
// initial, doubling up to max, and for maxElapsed at most (0: forever).
type backoff struct{ initial, max, maxElapsed time.Duration }

// client returns a go-redis client for t.
func (t *redisTarget) client() redis.UniversalClient {
	var dial time.Duration
	if t.timeout.set {
		dial = t.timeout.v
	}
	switch t.kind {
	case "sentinel":
		return redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName: t.master, SentinelAddrs: t.addrs,
			SentinelUsername: t.sentinelUser, SentinelPassword: t.sentinelPassword,
			Username: t.user, Password: t.password, DB: t.db, TLSConfig: t.tls,
			PoolSize: t.poolSize, DialTimeout: dial, ContextTimeoutEnabled: true,
		})
	case "cluster":
		return redis.NewClusterClient(&redis.ClusterOptions{
			Addrs: t.addrs, Username: t.user, Password: t.password, TLSConfig: t.tls,
			PoolSize: t.poolSize, DialTimeout: dial, ContextTimeoutEnabled: true,
		})
	default:
		return redis.NewClient(&redis.Options{
			Network: t.network, Addr: t.addrs[0], Username: t.user, Password: t.password, DB: t.db, TLSConfig: t.tls,
			PoolSize: t.poolSize, DialTimeout: dial, ContextTimeoutEnabled: true,
		})
	}
}

// options are redisstore's options for t's limiters.
func (t *redisTarget) options(o storeOptions) []redisstore.Option {
	var opts []redisstore.Option
	if o.prefix.set {
		opts = append(opts, redisstore.WithPrefix(o.prefix.v))
	}
	if t.timeout.set {
		opts = append(opts, redisstore.WithTimeout(t.timeout.v))
	}
	if t.batchSize > 0 {
		opts = append(opts, redisstore.WithBatching(2, t.batchSize))
	}
	if o.denyCache.set {
		opts = append(opts, redisstore.WithDenyCache(o.denyCache.v))
	}
	if o.jitter.set {
		opts = append(opts, redisstore.WithTTLJitter(o.jitter.v))
	}
	return opts
}

// String names t for the log, without credentials.
func (t *redisTarget) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "redis %s", t.kind)
	if t.master != "" {
		fmt.Fprintf(&b, " %s", t.master)
	}
	if t.network == "unix" {
		b.WriteString(" unix:")
	} else {
		b.WriteString(" at ")
	}
	b.WriteString(strings.Join(t.addrs, ","))
	if t.tls != nil {
		b.WriteString(" (TLS)")
	}
	return b.String()
}

// redisBackend is one Redis the store uses: its client, limiters and
// Multi.
type redisBackend struct {
	t     *redisTarget
	c     redis.UniversalClient
	store rls.Store
	multi redisMulti
}

func newBackend(t *redisTarget, o storeOptions) (*redisBackend, error) {
	c := t.client()
	opts := t.options(o)
	var windows []redisstore.Option
	if o.windows {
		windows = append(slices.Clip(opts), redisstore.WithClientClockWindows())
	}
	store := func(limits []core.Limit) (core.Limiter, error) {
		if len(limits) == 1 && limits[0].Algorithm == core.FixedWindow && windows != nil {
			return redisstore.New(c, limits[0], windows...)
		}
		if len(limits) == 1 {
			return redisstore.New(c, limits[0], opts...)
		}
		return redisstore.NewStack(c, limits, opts...)
	}
	mopts := opts
	if windows != nil {
		mopts = windows
	}
	m, err := redisstore.NewMulti(c, mopts...) // the limiters' options: the same keys
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	multi := redisMulti{m: m}
	if !o.windows {
		// The calls whose every charge takes local quota: leases, which
		// are made (and asked) only once such a call comes.
		multi.leased, err = redisstore.NewMulti(c, append(opts, redisstore.WithLocalQuota(redisstore.LocalQuota{}))...)
		if err != nil {
			_ = c.Close()
			return nil, err
		}
	}
	return &redisBackend{t: t, c: c, store: store, multi: multi}, nil
}

// newStore returns the store the settings ask for, the Multi that decides
// a request's descriptors in one round trip on it (nil in memory), the
// Redis backends (none in memory; the main one first) and what closes
// them. With a per-second Redis, a rule whose own limit's period is one
// second (unit: second) is kept there, every other rule on the main one.
func newStore(s *settings) (rls.Store, rls.Multi, []*redisBackend, func(), error) {
	if s.redis == nil {
		return rls.Memory(), nil, nil, func() {}, nil
	}
	main, err := newBackend(s.redis, s.store)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if s.perSecond == nil {
		return main.store, main.multi, []*redisBackend{main}, func() { _ = main.c.Close() }, nil
	}
	sec, err := newBackend(s.perSecond, s.store)
	if err != nil {
		_ = main.c.Close()
		return nil, nil, nil, nil, err
	}
	closeBoth := func() { _ = main.c.Close(); _ = sec.c.Close() }
	store := func(limits []core.Limit) (core.Limiter, error) {
		if perSecond(limits) {
			return sec.store(limits)
		}
		return main.store(limits)
	}
	return store, splitMulti{other: main.multi, second: sec.multi}, []*redisBackend{main, sec}, closeBoth, nil
}

// perSecond reports whether a rule of these limits belongs on the
// per-second Redis: its own limit (the first) is per second, as
// upstream's unit: second.
func perSecond(limits []core.Limit) bool {
	return len(limits) > 0 && limits[0].Period == time.Second
}

// redisMulti is a redisstore.Multi as the service takes it: m decides
// the calls, but those whose every charge takes local quota (rls's
// Charge.Local), which leased, made WithLocalQuota on the same keys,
// decides. Both charge the same state; refunds go to Redis, as a
// Limiter's do.
type redisMulti struct{ m, leased *redisstore.Multi }

func (r redisMulti) AllowAll(ctx context.Context, cs []rls.Charge) ([]core.Decision, error) {
	var buf [8]redisstore.Item
	m := r.m
	if r.leased != nil && local(cs) {
		m = r.leased
	}
	ds, err := m.Allow(ctx, items(buf[:0], cs))
	if errors.Is(err, redisstore.ErrPartial) {
		err = fmt.Errorf("%w (%w)", err, rls.ErrPartial)
	}
	return ds, err
}

func (r redisMulti) RefundAll(ctx context.Context, cs []rls.Charge) error {
	var buf [8]redisstore.Item
	return r.m.Refund(ctx, items(buf[:0], cs))
}

// local reports whether every charge of cs takes local quota.
func local(cs []rls.Charge) bool {
	for _, c := range cs {
		if !c.Local {
			return false
		}
	}
	return true
}

// items appends the charges to buf as a Multi's items.
func items(buf []redisstore.Item, cs []rls.Charge) []redisstore.Item {
	for _, c := range cs {
		buf = append(buf, redisstore.Item{Key: c.Key, Limits: c.Limits, Cost: c.Cost})
	}
	return buf
}
