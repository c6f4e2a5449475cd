package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/redisstore"
)

// TestMultiExactUnderLoad: 64 goroutines call with three keys, the first
// under a limit of n for the test's length: exactly n calls are admitted,
// and the other keys are charged by exactly those.
func TestMultiExactUnderLoad(t *testing.T) {
	t.Parallel()
	onServers(t, func(t *testing.T, c redis.UniversalClient) {
		const n = 200
		gate := core.Limit{Events: n, Period: 24 * time.Hour, Algorithm: core.GCRA}
		wide := core.Limit{Events: 1000, Period: 24 * time.Hour, Algorithm: core.SlidingLog}
		opts := []redisstore.Option{redisstore.WithTimeout(5 * time.Second), redisstore.WithPrefix("exact:")}
		m, err := redisstore.NewMulti(c, opts...)
		if err != nil {
			t.Fatal(err)
		}
		items := []redisstore.Item{
			{Key: "gate", Limits: []core.Limit{gate}, Cost: 1},
			{Key: "a", Limits: []core.Limit{wide, {Events: 10 * n, Period: time.Hour, Algorithm: core.FixedWindow}}, Cost: 1},
			{Key: "b", Limits: []core.Limit{wide}, Cost: 2},
		}
		var admitted atomic.Int64
		var wg sync.WaitGroup
		for range 64 {
			wg.Go(func() {
				for range 2 * n / 64 {
					ds, err := m.Allow(context.Background(), items)
					if err != nil {
						t.Error(err)
						return
					}
					if ds[0].Allowed && ds[1].Allowed && ds[2].Allowed {
						admitted.Add(1)
					}
				}
			})
		}
		wg.Wait()
		if got := admitted.Load(); got != n {
			t.Fatalf("%d calls admitted, want exactly %d", got, n)
		}
		lim := redisstore.MustNew(c, wide, opts...)
		for key, cost := range map[string]int{"a": 1, "b": 2} {
			d, err := lim.Allow(context.Background(), key, 1)
			if err != nil {
				t.Fatal(err)
			}
			if want := 1000 - n*cost - 1; d.Remaining != want {
				t.Fatalf("key %s: %d left after one more, want %d", key, d.Remaining, want)
			}
		}
	})
}

// TestMultiClusterRefund: on a Cluster, keys held by three masters; when
// the last refuses, the others, which admitted, are refunded: a limiter
// of their limits then finds them whole.
func TestMultiClusterRefund(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	clk := coretest.NewClock(time.Unix(1_700_000_000, 0))
	opts := []redisstore.Option{redisstore.WithScriptClock(clk), redisstore.WithTimeout(5 * time.Second), redisstore.WithPrefix("refund:")}
	m, err := redisstore.NewMulti(c, opts...)
	if err != nil {
		t.Fatal(err)
	}
	// Three keys on three masters.
	var keys []string
	owners := map[*redistest.Server]bool{}
	for i := 0; len(keys) < 3; i++ {
		k := string(rune('a' + i))
		if o := cl.NodeFor(k); !owners[o] {
			owners[o] = true
			keys = append(keys, k)
		}
	}
	fw := core.Limit{Events: 5, Period: time.Hour, Algorithm: core.FixedWindow}
	tb := core.Limit{Events: 6, Period: time.Hour}
	gate := core.Limit{Events: 1, Period: time.Hour, Algorithm: core.GCRA}
	items := []redisstore.Item{
		{Key: keys[0], Limits: []core.Limit{fw}, Cost: 1},
		{Key: keys[1], Limits: []core.Limit{tb, fw}, Cost: 2},
		{Key: keys[2], Limits: []core.Limit{gate}, Cost: 1},
	}
	for i, want := range []bool{true, false, false} {
		ds, err := m.Allow(context.Background(), items)
		if err != nil {
			t.Fatal(err)
		}
		if ds[2].Allowed != want || !ds[0].Allowed || !ds[1].Allowed {
			t.Fatalf("call %d: %+v; want the gate to admit only the first, the others to admit", i, ds)
		}
	}
	// Charged once each, by the first call; the refused calls' charges
	// were given back.
	for i, lim := range []core.Limiter{redisstore.MustNew(c, fw, opts...), must(redisstore.NewStack(c, []core.Limit{tb, fw}, opts...))} {
		d, err := lim.Allow(context.Background(), items[i].Key, 1)
		if err != nil {
			t.Fatal(err)
		}
		if want := 5 - items[i].Cost - 1; d.Remaining != want {
			t.Fatalf("item %d: %d left after one more, want %d (the refused calls refunded)", i, d.Remaining, want)
		}
	}
	// Refund gives the first call's charges back too: each key then
	// holds the limiter's one unit, and the call's.
	if err := m.Refund(context.Background(), items); err != nil {
		t.Fatal(err)
	}
	ds, err := m.Allow(context.Background(), items[:2])
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{5 - 1 - 1, 5 - 1 - 2} {
		if ds[i].Remaining != want {
			t.Fatalf("after Refund, item %d: %+v, want %d left", i, ds[i], want)
		}
	}
}

// TestMultiSameKeyTwice: a key named twice in one call sees its first
// charge, as two calls one after the other would.
func TestMultiSameKeyTwice(t *testing.T) {
	t.Parallel()
	c := single(t)
	l := core.Limit{Events: 3, Period: time.Hour, Algorithm: core.FixedWindow}
	m := must(redisstore.NewMulti(c, redisstore.WithPrefix("twice:")))
	items := []redisstore.Item{{Key: "k", Limits: []core.Limit{l}, Cost: 1}, {Key: "k", Limits: []core.Limit{l}, Cost: 1}}
	ds, err := m.Allow(context.Background(), items)
	if err != nil {
		t.Fatal(err)
	}
	if !ds[0].Allowed || !ds[1].Allowed || ds[0].Remaining != 2 || ds[1].Remaining != 1 {
		t.Fatalf("first call: %+v, want both admitted, 2 then 1 left", ds)
	}
	if ds, err = m.Allow(context.Background(), items); err != nil || ds[0].Allowed == ds[1].Allowed || ds[1].Allowed {
		t.Fatalf("second call: %+v, %v; want the first admitted, the second refused", ds, err)
	}
	d, err := redisstore.MustNew(c, l, redisstore.WithPrefix("twice:")).Allow(context.Background(), "k", 1)
	if err != nil || !d.Allowed || d.Remaining != 0 {
		t.Fatalf("a Limiter after them: %+v, %v; want the last unit left (the refused call charged nothing)", d, err)
	}
}

// TestMultiRefuses: what a Multi cannot decide is an error before any
// round trip, and a server that cannot be reached a *core.StoreError.
func TestMultiRefuses(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), ContextTimeoutEnabled: true, DialerRetryTimeout: deadDialPause})
	t.Cleanup(func() { c.Close() })
	if _, err := redisstore.NewMulti(c, redisstore.WithFallback()); err == nil {
		t.Errorf("NewMulti with fallback: no error")
	}
	m := must(redisstore.NewMulti(c, redisstore.WithTimeout(time.Second)))
	ok := core.PerMinute(10)
	log := core.Limit{Events: 5, Period: time.Minute, Algorithm: core.SlidingLog}
	for name, tc := range map[string]struct {
		items []redisstore.Item
		is    error
	}{
		"no limit":    {items: []redisstore.Item{{Key: "a", Cost: 1}}},
		"cost 0":      {items: []redisstore.Item{{Key: "a", Limits: []core.Limit{ok}}}, is: core.ErrInvalidCost},
		"cost 11":     {items: []redisstore.Item{{Key: "a", Limits: []core.Limit{ok}, Cost: 11}}, is: core.ErrCostTooLarge},
		"concurrency": {items: []redisstore.Item{{Key: "a", Limits: []core.Limit{{Events: 2, Period: time.Minute, Algorithm: core.Concurrency}}, Cost: 1}}},
		"leaky":       {items: []redisstore.Item{{Key: "a", Limits: []core.Limit{{Events: 2, Period: time.Minute, Algorithm: core.LeakyBucket}}, Cost: 1}}},
		"log twice":   {items: []redisstore.Item{{Key: "a", Limits: []core.Limit{log}, Cost: 1}, {Key: "a", Limits: []core.Limit{ok, log}, Cost: 1}}},
	} {
		_, err := m.Allow(context.Background(), tc.items)
		if err == nil || errors.Is(err, core.ErrStore) || tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("%s: err = %v, want an error of the call (%v)", name, err, tc.is)
		}
	}
	items := []redisstore.Item{{Key: "a", Limits: []core.Limit{ok}, Cost: 1}, {Key: "b", Limits: []core.Limit{ok, log}, Cost: 1}}
	if _, err := m.Allow(context.Background(), items); err != nil {
		t.Fatal(err)
	}
	s.Kill()
	_, err := m.Allow(context.Background(), items)
	storeErr(t, err)
	storeErr(t, m.Refund(context.Background(), items))
	if h := m.Health(); h.StoreDecisions != 1 || h.Failures != 2 {
		t.Fatalf("Health = %+v, want 1 decision and 2 failures", h)
	}
}

// TestMultiPartial: on a Cluster with a master down, a call whose keys are
// on it and on live masters fails with a store error that matches
// ErrPartial, before and after the dead master's breaker opens, and
// charges nothing; a call on the dead master alone fails without it; a
// call on the live masters alone is decided.
func TestMultiPartial(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, redistest.WithConfig("cluster-require-full-coverage no"))
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), ContextTimeoutEnabled: true, DialerRetryTimeout: deadDialPause})
	t.Cleanup(func() { c.Close() })
	m, err := redisstore.NewMulti(c, redisstore.WithPrefix("partial:"), redisstore.WithTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	nodes := cl.Nodes()
	on := func(i int) string { // a key the i-th master holds
		for n := 0; ; n++ {
			if k := fmt.Sprintf("k%d", n); cl.NodeFor(k) == nodes[i] {
				return k
			}
		}
	}
	limits := []core.Limit{{Events: 5, Period: time.Hour, Algorithm: core.FixedWindow}}
	items := func(keys ...string) []redisstore.Item {
		var its []redisstore.Item
		for _, k := range keys {
			its = append(its, redisstore.Item{Key: k, Limits: limits, Cost: 1})
		}
		return its
	}
	ctx := context.Background()
	k0, k1, k2 := on(0), on(1), on(2)
	if _, err := m.Allow(ctx, items(k0, k1, k2)); err != nil { // each master loads the library
		t.Fatal(err)
	}
	nodes[2].Kill()
	for i := range 10 {
		if _, err := m.Allow(ctx, items(k0, k2)); !errors.Is(err, core.ErrStore) || !errors.Is(err, redisstore.ErrPartial) {
			t.Fatalf("call %d on a live master and the dead one: %v, want a store error matching ErrPartial", i, err)
		}
	}
	if _, err := m.Allow(ctx, items(k2)); !errors.Is(err, core.ErrStore) || errors.Is(err, redisstore.ErrPartial) {
		t.Fatalf("a call on the dead master alone: %v, want a store error, not ErrPartial", err)
	}
	ds, err := m.Allow(ctx, items(k0, k1))
	if err != nil || !ds[0].Allowed || ds[0].Remaining != 3 || ds[1].Remaining != 3 {
		t.Fatalf("the live masters after the failed calls: %+v, %v; want 3 left each (the failed calls charged nothing)", ds, err)
	}
}
