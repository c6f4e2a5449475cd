package redisstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/redisstore"
)

// TestQuotaOutage: with local quota, a Redis outage behaves as without
// it. A lease already granted is spent until it ends (it was charged
// before the outage, and ends at L as always); every call that needs the
// server gets the store error, or with WithFallback a local decision;
// the failed return of a lease's units loses them, nothing more.
func TestQuotaOutage(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetryTimeout: deadDialPause})
	t.Cleanup(func() { c.Close() })
	lim := core.PerSecond(1000).WithAlgorithm(core.GCRA)
	r := newQuotaRig(t, c, lim, 1, time.Second, 2)
	fb, err := redisstore.New(c, lim, append(r.options(time.Second, 2), redisstore.WithFallback(core.WithClock(r.clk)))...)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Make "hot" hot and leased on both instances.
	leased := func(l core.Limiter) bool {
		for range 8 {
			d, err := l.Allow(ctx, "hot", 1)
			if err != nil {
				t.Fatal(err)
			}
			if d.Leased {
				return true
			}
		}
		return false
	}
	if !leased(r.lims[0]) || !leased(fb) {
		t.Fatalf("no lease before the outage: %s", counts(r.lims[0]))
	}
	srv.Kill()
	// The lease is spent while it lasts.
	if d := r.allow(0, "hot"); !d.Allowed || !d.Leased {
		t.Fatalf("a leased key during the outage: %+v", d)
	}
	// A call that needs the server fails as it would without local quota.
	if _, err := r.lims[0].Allow(ctx, "cold", 1); !errors.Is(err, core.ErrStore) {
		t.Fatalf("a cold key during the outage: %v, want a store error", err)
	}
	// With WithFallback it is decided in memory instead.
	if d, err := fb.Allow(ctx, "cold", 1); err != nil || !d.Allowed {
		t.Fatalf("a cold key with the fallback: %+v, %v", d, err)
	}
	// The lease ends at L; its return fails and loses the units (no
	// panic, no retry storm); the key then needs the server again.
	r.clk.Advance(time.Second)
	r.fire()
	redisstore.QuotaSettle(fb)
	if _, err := r.lims[0].Allow(ctx, "hot", 1); !errors.Is(err, core.ErrStore) {
		t.Fatalf("the hot key once its lease ended: %v, want a store error", err)
	}
	if d, err := fb.Allow(ctx, "hot", 1); err != nil || !d.Allowed || d.Leased {
		t.Fatalf("the hot key with the fallback once its lease ended: %+v, %v", d, err)
	}
	if h := r.lims[0].Health(); h.Failures == 0 {
		t.Fatalf("the failures were not reported: %+v", h)
	}
}
