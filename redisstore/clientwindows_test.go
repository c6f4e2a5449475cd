package redisstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/redisstore"
)

// TestClientClockWindowsMixed plays random calls through a Multi made
// WithClientClockWindows, a Limiter per limit made with the same options,
// and core, on one fake clock: a call mixes plain fixed windows (the
// pipelined commands), a token bucket and a stack of fixed windows (the
// script), and a key may be charged by the Multi in one step and by its
// Limiter in the next. Every decision is core's, all or nothing by hand: so
// a Limiter and a Multi keep a key's state in one place, and a mixed call
// that one side refuses leaves the other side's keys as they were.
func TestClientClockWindowsMixed(t *testing.T) {
	onServers(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := context.Background()
		clk := coretest.NewClock(time.Unix(1_700_000_000, 100_000_000))
		opts := []redisstore.Option{redisstore.WithClientClockWindows(), redisstore.WithClock(clk), redisstore.WithScriptClock(clk),
			redisstore.WithPrefix(fmt.Sprintf("x%d:", rand.Uint64())), redisstore.WithTimeout(5 * time.Second), redisstore.WithDenyCache(0)}
		m := must(redisstore.NewMulti(c, opts...))
		fw := func(n int, p time.Duration) core.Limit {
			return core.Limit{Algorithm: core.FixedWindow, Events: n, Period: p}
		}
		rules := [][]core.Limit{
			{fw(3, time.Second)},
			{fw(5, 2*time.Second)},
			{core.PerSecond(4).WithBurst(3)},
			{fw(4, time.Second), fw(6, 3*time.Second)},
		}
		lims := make([]core.Limiter, len(rules))
		mems := make([]core.Limiter, len(rules))
		for i, ls := range rules {
			if len(ls) == 1 {
				o := opts
				if ls[0].Algorithm != core.FixedWindow {
					o = opts[1:] // the option is a fixed window's
				}
				lims[i] = must(redisstore.New(c, ls[0], o...))
				mems[i] = must(core.New(ls[0], core.WithClock(clk)))
			} else {
				lims[i] = must(redisstore.NewStack(c, ls, opts[1:]...))
				mems[i] = must(core.NewStack(ls, core.WithClock(clk)))
			}
		}
		r := rand.New(rand.NewPCG(5, 6))
		counts := map[string]int{}
		for step := range 1000 {
			type pick struct{ rule, key int }
			var picks []pick
			var items []redisstore.Item
			for range 1 + r.IntN(3) {
				p := pick{r.IntN(len(rules)), r.IntN(3)}
				picks = append(picks, p)
				items = append(items, redisstore.Item{Key: fmt.Sprintf("k%d", p.key), Limits: rules[p.rule], Cost: 1})
			}
			if r.IntN(4) == 0 {
				// One key through its Limiter.
				p := picks[0]
				want := must(mems[p.rule].Allow(ctx, items[0].Key, 1))
				got := must(lims[p.rule].Allow(ctx, items[0].Key, 1))
				if got.Allowed != want.Allowed || got.Remaining != want.Remaining {
					t.Fatalf("step %d: Limiter of %v on %s: Redis %+v, core %+v", step, rules[p.rule], items[0].Key, got, want)
				}
				counts["limiter"]++
			} else {
				want := make([]core.Decision, len(items))
				all := true
				for i, it := range items {
					want[i] = must(mems[picks[i].rule].Allow(ctx, it.Key, 1))
					all = all && want[i].Allowed
				}
				if !all {
					for i, it := range items {
						if want[i].Allowed {
							if err := mems[picks[i].rule].Refund(ctx, it.Key, 1); err != nil {
								t.Fatal(err)
							}
						}
					}
				}
				got, err := m.Allow(ctx, items)
				if err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				mixed := false
				for i := range want {
					mixed = mixed || len(rules[picks[i].rule]) > 1 || rules[picks[i].rule][0].Algorithm != core.FixedWindow
					if got[i].Allowed != want[i].Allowed || got[i].Remaining != want[i].Remaining {
						t.Fatalf("step %d, item %d of %+v: Redis %+v, core %+v", step, i, items, got[i], want[i])
					}
				}
				counts[fmt.Sprintf("multi mixed=%v admitted=%v", mixed, all)]++
			}
			clk.Advance(time.Duration(r.IntN(120)) * time.Millisecond)
		}
		for _, k := range []string{"limiter", "multi mixed=true admitted=true", "multi mixed=true admitted=false", "multi mixed=false admitted=false"} {
			if counts[k] < 20 {
				t.Fatalf("%v: the test wants %q many times", counts, k)
			}
		}
	})
}

// TestClientClockWindowsLimiterRefund: a Limiter made
// WithClientClockWindows refunds its window, never below zero, and keeps
// a refusal in its deny cache (cost 1) until the window ends, as the
// script's Limiter does.
func TestClientClockWindowsLimiterRefund(t *testing.T) {
	c := single(t)
	ctx := context.Background()
	clk := coretest.NewClock(time.Unix(1_699_999_980, 0)) // a minute's start
	l := core.Limit{Algorithm: core.FixedWindow, Events: 2, Period: time.Minute}
	lim := must(redisstore.New(c, l, redisstore.WithClientClockWindows(), redisstore.WithClock(clk),
		redisstore.WithPrefix(fmt.Sprintf("r%d:", rand.Uint64()))))
	for i, want := range []bool{true, true, false} {
		if d := must(lim.Allow(ctx, "k", 1)); d.Allowed != want || d.Limit != l {
			t.Fatalf("call %d: %+v, want allowed %v under %v", i, d, want, l)
		}
	}
	// The refusal is cached: Redis is not asked until the window ends.
	before := lim.Health().StoreDecisions
	if d := must(lim.Allow(ctx, "k", 1)); d.Allowed || d.RetryAfter != time.Minute {
		t.Fatalf("cached refusal: %+v, want refused for the minute", d)
	}
	if lim.Health().StoreDecisions != before {
		t.Fatal("a cached refusal went to Redis")
	}
	for range 3 { // more than was charged: the count stops at zero
		if err := lim.Refund(ctx, "k", 1); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range []bool{true, true, false} {
		if d := must(lim.Allow(ctx, "k", 1)); d.Allowed != want {
			t.Fatalf("after the refunds, call %d: %+v, want allowed %v", i, d, want)
		}
	}
	clk.Advance(time.Minute)
	if d := must(lim.Allow(ctx, "k", 2)); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("the next window: %+v, want admitted, 0 left", d)
	}
}
