package redisstore_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/redisstore"
)

// TestQuotaDynamicRefused: NewDynamic takes WithLocalQuota; a first limit
// whose algorithm cannot be leased fails its request with the error New
// gives, wrapping core.ErrSetLimitUnsupported as the Dynamic's other
// first-limit errors do. (The server is never reached.)
func TestQuotaDynamicRefused(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	defer c.Close()
	for _, tt := range []struct {
		limit core.Limit
		want  string
	}{
		{core.PerMinute(5).WithAlgorithm(core.SlidingWindow), "local quota leases GCRA, TokenBucket and FixedWindow limits, not sliding-window"},
		{core.PerMinute(5).WithMaxDelay(time.Second), "not leaky-bucket"},
		{core.PerMinute(5).WithOverdraft(), "local quota cannot lend"},
	} {
		d, err := redisstore.NewDynamic(c, func(string) core.Limit { return tt.limit }, redisstore.WithLocalQuota(redisstore.LocalQuota{}))
		if err != nil {
			t.Fatalf("NewDynamic with local quota: %v", err)
		}
		_, err = d.Allow(context.Background(), "k", 1)
		if !errors.Is(err, core.ErrSetLimitUnsupported) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v, want core.ErrSetLimitUnsupported saying %q", tt.limit, err, tt.want)
		}
	}
}

// TestQuotaDynamicNoAllocs: a Dynamic's decision from a lease allocates
// nothing: its limit's policy and lease terms are cached, and the lease
// is compared with the limit by pointer.
func TestQuotaDynamicNoAllocs(t *testing.T) {
	c := single(t)
	r := newRig(t)
	l := core.Limit{Events: 100000, Period: time.Hour}.WithAlgorithm(core.GCRA)
	d, err := redisstore.NewDynamic(c, func(string) core.Limit { return l }, r.options(time.Minute, 1)...)
	if err != nil {
		t.Fatal(err)
	}
	r.all = append(r.all, d)
	// On the frozen clock each lease is sized to the calls so far (a
	// quarter more) and taken when the last is spent: the 2,086th call
	// takes one of 2,608 units, which the 201 calls measured leave unspent.
	for range 2100 {
		r.allow(0, "k")
	}
	grants, _, _ := redisstore.QuotaCounts(d)
	allocs := testing.AllocsPerRun(200, func() {
		if d := r.allow(0, "k"); !d.Leased || d.Limit != l {
			t.Fatalf("%+v, want a decision from the lease under %v", d, l)
		}
	})
	if g, _, _ := redisstore.QuotaCounts(d); g != grants {
		t.Fatalf("%d grants while measuring: the runs were not all from one lease", g-grants)
	}
	if allocs != 0 {
		t.Errorf("%v allocations per decision from a lease, want 0", allocs)
	}
}

// TestQuotaDynamicChanging: 4 Dynamic instances × 8 goroutines hammer one
// key whose limit flips between 100 and 40 per window (the same period:
// the units of a lease ended by a change go back) while they call. A
// window's count only grows with admissions, each charged before it was
// spent, and never past the limit in force, so the window never admits
// more than 100; once every lease is back, it admits exactly 100.
func TestQuotaDynamicChanging(t *testing.T) {
	t.Parallel()
	c := single(t)
	r := newRig(t)
	big := core.Limit{Events: 100, Period: 500 * time.Minute}.WithAlgorithm(core.FixedWindow)
	small := core.Limit{Events: 40, Period: 500 * time.Minute}.WithAlgorithm(core.FixedWindow)
	var calls atomic.Int64
	var settled atomic.Bool
	limitOf := func(string) core.Limit {
		if !settled.Load() && calls.Add(1)%7 < 3 {
			return small
		}
		return big
	}
	for range 4 {
		d, err := redisstore.NewDynamic(c, limitOf, r.options(0, 2)...)
		if err != nil {
			t.Fatal(err)
		}
		r.all = append(r.all, d)
	}
	first := r.hammer("k", 8, 3) // 96 calls: leases hold units when they end
	if first > 100 {
		t.Fatalf("the window admitted %d, more than the larger limit 100", first)
	}
	settled.Store(true)
	r.clk.Advance(time.Second)
	r.fire()
	second := r.drain("k", 8, 10, time.Second)
	if first+second != 100 {
		t.Errorf("the window admitted %d while the limit flipped, then %d: want exactly 100 in all", first, second)
	}
	var back int64
	for _, d := range r.all {
		_, _, n := redisstore.QuotaCounts(d)
		back += n
	}
	t.Logf("%d admitted while the limit flipped, %d after; %d units given back", first, second, back)
}

// TestQuotaDynamicFallback: a Dynamic with local quota and WithFallback
// whose grants fail decides locally under each key's tier, as one without
// local quota does.
func TestQuotaDynamicFallback(t *testing.T) {
	t.Parallel()
	c, p := plugged(t)
	ctx := context.Background()
	tiers := map[string]core.Limit{"free": core.PerMinute(1).WithName("free"), "paid": core.PerMinute(3).WithName("paid")}
	dyn, err := redisstore.NewDynamic(c, func(key string) core.Limit { return tiers[key] },
		redisstore.WithFallback(), redisstore.WithLocalQuota(redisstore.LocalQuota{Hot: 1}))
	if err != nil {
		t.Fatal(err)
	}
	p.pulled.Store(true)
	for _, key := range []string{"free", "paid", "paid"} {
		d, err := dyn.Allow(ctx, key, 1)
		if err != nil || !d.Allowed || d.Leased || d.Limit != tiers[key] {
			t.Errorf("%s: %+v, %v; want a local admission under its tier", key, d, err)
		}
	}
	if d, err := dyn.Allow(ctx, "free", 1); err != nil || d.Allowed || d.Limit != tiers["free"] {
		t.Errorf("free again: %+v, %v; want a local refusal under its tier", d, err)
	}
	if h := dyn.Health(); h.LocalDecisions != 4 || h.Leases != 0 || h.LeaseDecisions != 0 {
		t.Errorf("%+v, want 4 local decisions and no lease", h)
	}
}
