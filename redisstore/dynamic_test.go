package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/redisstore"
)

// tiers is a limit function whose answers the test sets per key.
type tiers struct {
	mu sync.Mutex
	of map[string]core.Limit
}

func (t *tiers) limitOf(key string) core.Limit {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.of[key]
}

func (t *tiers) set(key string, l core.Limit) {
	t.mu.Lock()
	t.of[key] = l
	t.mu.Unlock()
}

// TestDynamicMatchesMemory plays random traffic on keys whose limits change
// at random (between tiers of other rates, bursts and periods) on core's
// Dynamic and on Redis's at the same fake instants: a key's state carries
// over every change alike, and every decision is the same.
func TestDynamicMatchesMemory(t *testing.T) {
	t.Parallel()
	c := single(t)
	limits := []core.Limit{
		core.PerSecond(10).WithBurst(3).WithName("free"),
		core.PerSecond(40).WithBurst(20).WithName("paid"),
		{Events: 7, Period: 500 * time.Millisecond, Burst: 11},
		{Events: 5, Period: 250 * time.Millisecond, Burst: 2},
		core.PerSecond(3),
	}
	algs := []core.Algorithm{core.TokenBucket, core.GCRA, core.FixedWindow, core.SlidingWindow, core.LeakyBucket, core.WarmUp}
	r := rand.New(rand.NewPCG(10, 11))
	for _, alg := range algs {
		t.Run(alg.String(), func(t *testing.T) {
			// Every tier shares the algorithm and its settings.
			policy := func(l core.Limit) core.Limit {
				if alg == core.WarmUp {
					return l.WithWarmUp(2*time.Second, 3)
				}
				return l.WithAlgorithm(alg)
			}
			clk := coretest.NewClock(coretest.T0.Add(time.Duration(r.Int64N(int64(time.Hour)))))
			tr := &tiers{of: map[string]core.Limit{}}
			keys := []string{"a", "b", "c"}
			for _, k := range keys {
				tr.set(k, policy(limits[0]))
			}
			mem, err := core.NewDynamic(tr.limitOf, core.WithClock(clk))
			if err != nil {
				t.Fatal(err)
			}
			red, err := redisstore.NewDynamic(c, tr.limitOf, redisstore.WithClock(clk),
				redisstore.WithScriptClock(clk), redisstore.WithPrefix(fmt.Sprintf("t%d:", rand.Uint64())))
			if err != nil {
				t.Fatal(err)
			}
			var hist []string
			for i := 0; i < 600; i++ {
				switch r.IntN(3) {
				case 0:
					clk.Advance(time.Duration(r.Int64N(1000)))
				case 1:
					clk.Advance(time.Duration(r.Int64N(40)) * time.Millisecond)
				}
				key := keys[r.IntN(len(keys))]
				if r.IntN(8) == 0 {
					tr.set(key, policy(limits[r.IntN(len(limits))]))
				}
				l := tr.limitOf(key)
				maxCost := l.EffectiveBurst()
				if alg == core.FixedWindow || alg == core.SlidingWindow {
					maxCost = l.Events
				}
				cost := 1 + r.IntN(min(maxCost, 3))
				if r.IntN(10) == 0 {
					hist = append(hist, fmt.Sprintf("%d %s refund %d under %v at %v", i, key, cost, l, clk.Time().Sub(coretest.T0)))
					refundBoth(t, mem, red, key, cost)
					continue
				}
				got, want := allowBoth(t, mem, red, key, cost)
				hist = append(hist, fmt.Sprintf("%d %s cost %d under %v at %v: %+v", i, key, cost, l, clk.Time().Sub(coretest.T0), want))
				if got != want {
					for _, h := range hist {
						if strings.Contains(h, " "+key+" ") {
							t.Log(h)
						}
					}
					t.Fatalf("step %d, %s cost %d under %v at %v:\nredis  %+v\nmemory %+v", i, key, cost, l, clk.Time().Sub(coretest.T0), got, want)
				}
			}
		})
	}
}

// TestDynamicDowngrade: a paid key drained, then moved to the free tier,
// keeps its state on Redis past the time to live its last write set under
// the paid tier (a refusal under the free tier extends it), as in memory.
func TestDynamicDowngrade(t *testing.T) {
	t.Parallel()
	c := single(t)
	clk := coretest.NewClock(coretest.T0)
	fast, slow := core.PerSecond(100).WithBurst(10), core.PerSecond(1).WithBurst(10)
	tr := &tiers{of: map[string]core.Limit{"k": fast}}
	red, err := redisstore.NewDynamic(c, tr.limitOf, redisstore.WithClock(clk), redisstore.WithScriptClock(clk),
		redisstore.WithTTLMargin(time.Millisecond), redisstore.WithDenyCache(0), redisstore.WithPrefix(fmt.Sprintf("t%d:", rand.Uint64())))
	if err != nil {
		t.Fatal(err)
	}
	mem := must(core.NewDynamic(tr.limitOf, core.WithClock(clk)))
	if !strings.HasSuffix(red.Key("k"), ":{k}:tb") {
		t.Fatalf("key %q names more than the algorithm", red.Key("k"))
	}
	ctx := context.Background()
	same := func(cost int, allowed bool) {
		t.Helper()
		want, _ := mem.Allow(ctx, "k", cost)
		got, err := red.Allow(ctx, "k", cost)
		if err != nil || got != want || got.Allowed != allowed {
			t.Fatalf("redis %+v %v\nmemory %+v", got, err, want)
		}
	}
	same(10, true) // whole again in 100ms at the fast rate
	tr.set("k", slow)
	same(1, false) // a second at the slow rate: the refusal extends the TTL
	// Wait for real past the fast tier's time to live (101ms); the fake
	// clock decides: at 500ms, half a token.
	time.Sleep(150 * time.Millisecond)
	clk.Advance(500 * time.Millisecond)
	same(1, false)
	clk.Advance(500 * time.Millisecond)
	same(1, true)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestDynamicErrors(t *testing.T) {
	t.Parallel()
	c := single(t)
	if _, err := redisstore.NewDynamic(nil, func(string) core.Limit { return core.PerSecond(1) }); err == nil {
		t.Error("nil client accepted")
	}
	if _, err := redisstore.NewDynamic(c, nil); err == nil {
		t.Error("nil limit function accepted")
	}
	if _, err := redisstore.NewDynamic(c, func(string) core.Limit { return core.PerSecond(1) }, redisstore.WithTimeout(-1)); err == nil {
		t.Error("bad option accepted")
	}
	d, err := redisstore.NewDynamic(c, func(key string) core.Limit {
		if key == "bad" {
			return core.Limit{Events: 1}
		}
		return core.Limit{Events: 1, Period: 100 * 24 * time.Hour}
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Allow(context.Background(), "bad", 1); err == nil {
		t.Error("invalid limit decided")
	}
	if _, err := d.Allow(context.Background(), "long", 1); err == nil || errors.Is(err, core.ErrStore) {
		t.Errorf("a limit too long for Redis: %v", err)
	}
	if err := d.Refund(context.Background(), "bad", 1); err == nil {
		t.Error("invalid limit refunded")
	}
}

// TestDynamicUnsupported: the algorithms core's Dynamic refuses are
// refused here too, when first seen, with the same sentinel error, and
// so is a limit whose algorithm or settings differ from the first limit's:
// on Allow, Refund and Key alike, without contacting the server.
func TestDynamicUnsupported(t *testing.T) {
	t.Parallel()
	c := single(t)
	ctx := context.Background()
	for name, l := range map[string]core.Limit{
		"sliding-log": core.PerSecond(2).WithAlgorithm(core.SlidingLog),
		"sub-windows": core.PerSecond(2).WithSubWindows(2),
		"concurrency": core.InFlight(2),
	} {
		d := must(redisstore.NewDynamic(c, func(string) core.Limit { return l }))
		if _, err := d.Allow(ctx, "k", 1); !errors.Is(err, core.ErrSetLimitUnsupported) || errors.Is(err, core.ErrStore) {
			t.Errorf("%s: %v, want ErrSetLimitUnsupported", name, err)
		}
		if err := d.Refund(ctx, "k", 1); !errors.Is(err, core.ErrSetLimitUnsupported) {
			t.Errorf("%s: refund %v, want ErrSetLimitUnsupported", name, err)
		}
		if k := d.Key("k"); k != "" {
			t.Errorf("%s: key %q, want none", name, k)
		}
	}
	d := must(redisstore.NewDynamic(c, func(string) core.Limit { return core.PerSecond(2).WithAlgorithm(core.Algorithm(99)) }))
	if _, err := d.Allow(ctx, "k", 1); err == nil || !strings.Contains(err.Error(), "unknown algorithm") {
		t.Errorf("unknown algorithm: %v", err)
	}

	// The first limit fixes the algorithm and its settings; the same
	// algorithm at another rate joins it.
	tr := &tiers{of: map[string]core.Limit{
		"first": core.PerSecond(2).WithAlgorithm(core.GCRA),
		"rate":  core.PerMinute(7).WithBurst(3).WithName("other").WithAlgorithm(core.GCRA),
		"alg":   core.PerSecond(2),
		"log":   core.PerSecond(2).WithAlgorithm(core.SlidingLog),
		"cc":    core.InFlight(2),
		"leaky": core.PerSecond(2).WithMaxDelay(time.Second),
	}}
	d = must(redisstore.NewDynamic(c, tr.limitOf, redisstore.WithPrefix(fmt.Sprintf("t%d:", rand.Uint64()))))
	for _, key := range []string{"first", "rate"} {
		if dec, err := d.Allow(ctx, key, 1); err != nil || !dec.Allowed || dec.Limit != tr.limitOf(key) {
			t.Fatalf("%s: %+v %v, want an admission under its limit", key, dec, err)
		}
	}
	for _, key := range []string{"alg", "log", "cc", "leaky"} {
		if _, err := d.Allow(ctx, key, 1); !errors.Is(err, core.ErrSetLimitUnsupported) || !strings.Contains(err.Error(), "first limit") {
			t.Errorf("%s: %v, want ErrSetLimitUnsupported naming the first limit", key, err)
		}
		if err := d.Refund(ctx, key, 1); !errors.Is(err, core.ErrSetLimitUnsupported) {
			t.Errorf("%s: refund %v, want ErrSetLimitUnsupported", key, err)
		}
	}
	// WithMaxDelay's LeakyBucket at another longest wait differs in
	// its settings alone.
	tr.set("first", core.PerSecond(2).WithMaxDelay(time.Second))
	tr.set("other", core.PerSecond(2).WithMaxDelay(2*time.Second))
	d = must(redisstore.NewDynamic(c, tr.limitOf, redisstore.WithPrefix(fmt.Sprintf("t%d:", rand.Uint64()))))
	if _, err := d.Allow(ctx, "first", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Allow(ctx, "other", 1); !errors.Is(err, core.ErrSetLimitUnsupported) {
		t.Errorf("another MaxDelay: %v, want ErrSetLimitUnsupported", err)
	}
}

// TestDynamicDenyCache: a denial cached under one limit does not answer
// for the key under another, and an admission under the new limit drops
// it, so that going back asks the server again.
func TestDynamicDenyCache(t *testing.T) {
	t.Parallel()
	c := single(t)
	clk := coretest.NewClock(coretest.T0)
	free := core.PerMinute(1).WithName("free").WithAlgorithm(core.GCRA)
	paid := core.PerMinute(5).WithName("paid").WithAlgorithm(core.GCRA)
	tr := &tiers{of: map[string]core.Limit{"k": free}}
	red, err := redisstore.NewDynamic(c, tr.limitOf, redisstore.WithClock(clk),
		redisstore.WithScriptClock(clk), redisstore.WithPrefix(fmt.Sprintf("t%d:", rand.Uint64())))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if d, err := red.Allow(ctx, "k", 1); err != nil || !d.Allowed {
		t.Fatalf("first: %+v %v", d, err)
	}
	if d, err := red.Allow(ctx, "k", 1); err != nil || d.Allowed || d.Limit != free {
		t.Fatalf("second under free: %+v %v", d, err)
	}
	// Cached now: the server is not asked (the key is gone there, and the
	// cache still refuses under free).
	if err := c.Del(ctx, red.Key("k")).Err(); err != nil {
		t.Fatal(err)
	}
	if d, _ := red.Allow(ctx, "k", 1); d.Allowed || d.Limit != free {
		t.Fatalf("cached under free: %+v", d)
	}
	tr.set("k", paid)
	if d, err := red.Allow(ctx, "k", 1); err != nil || !d.Allowed || d.Limit != paid {
		t.Fatalf("under paid: %+v %v", d, err)
	}
	tr.set("k", free)
	// The admission dropped the entry: the server answers, from the
	// state paid left (12s owed; the cached entry would say 60s).
	if d, err := red.Allow(ctx, "k", 1); err != nil || d.Allowed || d.Limit != free || d.RetryAfter != 12*time.Second {
		t.Fatalf("back under free: %+v %v", d, err)
	}
}
