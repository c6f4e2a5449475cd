package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
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
}

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
	store := func(limits []core.Limit) (core.Limiter, error) {
		if len(limits) == 1 {
			return redisstore.New(c, limits[0], opts...)
		}
		return redisstore.NewStack(c, limits, opts...)
	}
	m, err := redisstore.NewMulti(c, opts...) // the limiters' options: the same keys
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	return &redisBackend{t: t, c: c, store: store, multi: redisMulti{m}}, nil
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

// redisMulti is a redisstore.Multi as the service takes it.
type redisMulti struct{ m *redisstore.Multi }

func (r redisMulti) AllowAll(ctx context.Context, cs []rls.Charge) ([]core.Decision, error) {
	var buf [8]redisstore.Item
	ds, err := r.m.Allow(ctx, items(buf[:0], cs))
	if errors.Is(err, redisstore.ErrPartial) {
		err = fmt.Errorf("%w (%w)", err, rls.ErrPartial)
	}
	return ds, err
}

func (r redisMulti) RefundAll(ctx context.Context, cs []rls.Charge) error {
	var buf [8]redisstore.Item
	return r.m.Refund(ctx, items(buf[:0], cs))
}

// items appends the charges to buf as a Multi's items.
func items(buf []redisstore.Item, cs []rls.Charge) []redisstore.Item {
	for _, c := range cs {
		buf = append(buf, redisstore.Item{Key: c.Key, Limits: c.Limits, Cost: c.Cost})
	}
	return buf
}

// splitMulti is the Multi of two Redis: charges of per-second limits go
// to second, the others to other. A call whose charges are all on one
// goes there alone; a call on both is decided on both at once and stays
// all or nothing: when one side refuses (or fails) and the other
// admitted, what the other charged is refunded, as a Cluster's Multi
// refunds the slots that admitted. Between the charge and its refund
// another request may find those keys short of the refunded units.
type splitMulti struct{ other, second rls.Multi }

// half is one side's share of a split call: its charges and where they
// are in the call.
type half struct {
	charges []rls.Charge
	at      []int
	ds      []core.Decision
	err     error
}

func (h *half) admitted() bool {
	if h.err != nil {
		return false
	}
	for _, d := range h.ds {
		if !d.Allowed {
			return false
		}
	}
	return true
}

// split divides cs between the per-second side and the other; n is how
// many are per second.
func split(cs []rls.Charge) (sec, oth half, n int) {
	for _, c := range cs {
		if perSecond(c.Limits) {
			n++
		}
	}
	if n == 0 || n == len(cs) {
		return sec, oth, n
	}
	for i, c := range cs {
		h := &oth
		if perSecond(c.Limits) {
			h = &sec
		}
		h.charges, h.at = append(h.charges, c), append(h.at, i)
	}
	return sec, oth, n
}

func (m splitMulti) AllowAll(ctx context.Context, cs []rls.Charge) ([]core.Decision, error) {
	sec, oth, n := split(cs)
	switch n {
	case 0:
		return m.other.AllowAll(ctx, cs)
	case len(cs):
		return m.second.AllowAll(ctx, cs)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sec.ds, sec.err = m.second.AllowAll(ctx, sec.charges)
	}()
	oth.ds, oth.err = m.other.AllowAll(ctx, oth.charges)
	<-done
	secOK, othOK := sec.admitted(), oth.admitted()
	if secOK != othOK {
		// One side charged, the other did not: give the charged side's
		// units back, so that the call charges nothing, as refused calls
		// do. If that refund fails, the units stay charged until their
		// keys expire: the limits err towards refusing.
		if secOK {
			_ = m.second.RefundAll(ctx, sec.charges)
		} else {
			_ = m.other.RefundAll(ctx, oth.charges)
		}
	}
	switch {
	case sec.err != nil && oth.err != nil:
		return nil, errors.Join(sec.err, oth.err)
	case sec.err != nil || oth.err != nil:
		err := errors.Join(sec.err, oth.err)
		if errors.Is(err, core.ErrStore) {
			// One Redis answered: under FailOpen the service decides the
			// request again a limiter at a time, and the answering Redis
			// still counts it.
			err = fmt.Errorf("%w (%w)", err, rls.ErrPartial)
		}
		return nil, err
	}
	ds := make([]core.Decision, len(cs))
	for _, h := range []*half{&sec, &oth} {
		for j, i := range h.at {
			ds[i] = h.ds[j]
		}
	}
	return ds, nil
}

func (m splitMulti) RefundAll(ctx context.Context, cs []rls.Charge) error {
	sec, oth, n := split(cs)
	switch n {
	case 0:
		return m.other.RefundAll(ctx, cs)
	case len(cs):
		return m.second.RefundAll(ctx, cs)
	}
	return errors.Join(m.second.RefundAll(ctx, sec.charges), m.other.RefundAll(ctx, oth.charges))
}

// pingEvery is how often REDIS_HEALTH_CHECK_ACTIVE_CONNECTION checks that
// Redis answers.
const pingEvery = time.Second

// watchRedis tells health whether b answers: unhealthy until a PING does,
// tried again as s.startup says; an error on fatal when it has not
// answered within s.startup.maxElapsed. With s.redisHealthActive, it goes
// on pinging every pingEvery, and health follows.
func watchRedis(ctx context.Context, s *settings, b *redisBackend, component string, h *healthState, log *slog.Logger, fatal chan<- error) {
	ping := func() error {
		timeout := 5 * time.Second
		if b.t.timeout.set && b.t.timeout.v > 0 {
			timeout = b.t.timeout.v
		}
		pctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		cmd := redis.NewStatusCmd(pctx, "ping")
		_ = b.c.Process(pctx, pingOnce{cmd})
		return cmd.Err()
	}
	begin, wait := time.Now(), s.startup.initial
	for {
		err := ping()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return
		}
		elapsed := time.Since(begin)
		if s.startup.maxElapsed > 0 && elapsed >= s.startup.maxElapsed {
			fatal <- fmt.Errorf("%s did not answer within REDIS_STARTUP_MAX_ELAPSED_TIME (%v): %w", b.t, s.startup.maxElapsed, err)
			return
		}
		log.Warn("Redis does not answer; trying again", "redis", b.t.String(), "in", wait, "error", err)
		if !sleep(ctx, wait) {
			return
		}
		wait = min(2*wait, s.startup.max)
	}
	log.Info("Redis answers", "redis", b.t.String())
	h.set(component, true)
	if !s.redisHealthActive {
		return
	}
	up := true
	for sleep(ctx, pingEvery) {
		err := ping()
		if ctx.Err() != nil {
			return
		}
		if now := err == nil; now != up {
			up = now
			h.set(component, up)
			if up {
				log.Info("Redis answers again", "redis", b.t.String())
			} else {
				log.Error("Redis does not answer: unhealthy", "redis", b.t.String(), "error", err)
			}
		}
	}
}

// pingOnce is a PING go-redis sends once: a health check reports what
// one try finds, and the client's retries would only delay it.
type pingOnce struct{ *redis.StatusCmd }

// NoRetry tells go-redis not to send the command again after a failure.
func (pingOnce) NoRetry() bool { return true }

// sleep waits d or until ctx ends, and reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
