package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
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

// TestClientClockWindowsMatchesCore plays random calls of plain fixed
// windows on a fake clock through a Multi made WithClientClockWindows and
// through core's fixed window, all or nothing by hand (the admitted items
// of a refused call given back), and wants the same decisions, Refund's
// effect included; a call may name a key twice under one rule. After each
// call every window key has a TTL, and a refused call leaves every key's
// count as it was.
func TestClientClockWindowsMatchesCore(t *testing.T) {
	onServers(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := context.Background()
		clk := coretest.NewClock(time.Unix(1_700_000_000, 300_000_000))
		m := must(redisstore.NewMulti(c, redisstore.WithClientClockWindows(), redisstore.WithClock(clk),
			redisstore.WithPrefix(fmt.Sprintf("p%d:", rand.Uint64())), redisstore.WithTimeout(5*time.Second)))
		r := rand.New(rand.NewPCG(3, 4))
		var rules []core.Limit
		mems := map[core.Limit]*core.Keyed{} // equal rules share keys
		for i := range 6 {
			l := core.Limit{Algorithm: core.FixedWindow, Events: 2 + r.IntN(6), Period: time.Duration(1+r.IntN(4)) * time.Second}
			if i == 5 {
				l.Period = 1_234_567_891 // windows not on whole seconds
			}
			rules = append(rules, l)
			if mems[l] == nil {
				mems[l] = must(core.New(l, core.WithClock(clk)))
			}
		}
		counts := map[string]int{}
		for step := range 400 {
			now := clk.Now()
			type pick struct {
				key  int
				rule core.Limit
			}
			var picks []pick
			var items []redisstore.Item
			for range 1 + r.IntN(3) {
				p := pick{r.IntN(4), rules[r.IntN(len(rules))]}
				for _, q := range picks {
					if q == p {
						counts["twice"]++
					}
				}
				picks = append(picks, p)
				items = append(items, redisstore.Item{Key: fmt.Sprintf("k%d", p.key), Limits: []core.Limit{p.rule}, Cost: 1 + r.IntN(2)})
			}
			keys := make([]string, len(items))
			before := make([]string, len(items))
			for i, it := range items {
				keys[i] = redisstore.WindowKey(m, it.Key, it.Limits[0], now)
				before[i], _ = c.Get(ctx, keys[i]).Result()
			}
			if r.IntN(6) == 0 {
				for i, it := range items {
					if err := mems[picks[i].rule].Refund(ctx, it.Key, it.Cost); err != nil {
						t.Fatal(err)
					}
				}
				if err := m.Refund(ctx, items); err != nil {
					t.Fatalf("step %d: Refund: %v", step, err)
				}
				counts["refund"]++
			} else {
				want := make([]core.Decision, len(items))
				all := true
				for i, it := range items {
					want[i] = must(mems[picks[i].rule].Allow(ctx, it.Key, it.Cost))
					all = all && want[i].Allowed
				}
				if !all {
					for i, it := range items {
						if want[i].Allowed {
							if err := mems[picks[i].rule].Refund(ctx, it.Key, it.Cost); err != nil {
								t.Fatal(err)
							}
						}
					}
				}
				got, err := m.Allow(ctx, items)
				if err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("step %d, item %d of %+v: Redis %+v, core %+v", step, i, items, got[i], want[i])
					}
				}
				if all {
					counts["admitted"]++
				} else {
					counts["refused"]++
					for i, k := range keys {
						after, _ := c.Get(ctx, k).Result()
						if after != before[i] && !(before[i] == "" && after == "0") {
							t.Fatalf("step %d: refused call left %s at %q, was %q", step, k, after, before[i])
						}
					}
				}
			}
			for _, k := range keys {
				if ttl := c.PTTL(ctx, k).Val(); ttl == -1 {
					t.Fatalf("step %d: %s has no TTL", step, k)
				}
			}
			clk.Advance(time.Duration(r.IntN(300)) * time.Millisecond)
		}
		if counts["admitted"] < 20 || counts["refused"] < 20 || counts["refund"] < 20 || counts["twice"] < 5 {
			t.Fatalf("%v: the test wants each case many times", counts)
		}
	})
}

// TestClientClockWindowsConcurrent: goroutines charge one key (and a
// second, larger one, in the same call) on a frozen clock; exactly the
// first key's events are admitted, and the second key is charged only for
// the admitted calls.
func TestClientClockWindowsConcurrent(t *testing.T) {
	c := single(t)
	ctx := context.Background()
	clk := coretest.NewClock(time.Unix(1_700_000_000, 0))
	m := must(redisstore.NewMulti(c, redisstore.WithClientClockWindows(), redisstore.WithClock(clk),
		redisstore.WithPrefix(fmt.Sprintf("c%d:", rand.Uint64()))))
	hot := core.Limit{Algorithm: core.FixedWindow, Events: 50, Period: time.Hour}
	big := core.Limit{Algorithm: core.FixedWindow, Events: 1000, Period: time.Hour}
	items := []redisstore.Item{{Key: "big", Limits: []core.Limit{big}, Cost: 1}, {Key: "hot", Limits: []core.Limit{hot}, Cost: 1}}
	var admitted atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				ds, err := m.Allow(ctx, items)
				if err != nil {
					errs <- err
					return
				}
				if ds[0].Allowed && ds[1].Allowed {
					admitted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := admitted.Load(); n != 50 {
		t.Fatalf("%d calls admitted, want exactly 50", n)
	}
	if v := c.Get(ctx, redisstore.WindowKey(m, "big", big, clk.Now())).Val(); v != "50" {
		t.Fatalf("the second key counts %q, want 50 (the admitted calls only)", v)
	}
}

// TestClientClockWindowsOptions: the option is a Multi's and a plain fixed
// window Limiter's, never with local quota; an item it cannot pipeline
// goes to the script, on the script's key.
func TestClientClockWindowsOptions(t *testing.T) {
	c := single(t)
	ctx := context.Background()
	l := core.Limit{Algorithm: core.FixedWindow, Events: 2, Period: time.Hour}
	win := redisstore.WithClientClockWindows()
	refused := map[string]error{}
	_, refused["New, token bucket"] = redisstore.New(c, core.PerSecond(2), win)
	_, refused["New, fixed window, local quota"] = redisstore.New(c, l, win, redisstore.WithLocalQuota(redisstore.LocalQuota{}))
	_, refused["NewStack"] = redisstore.NewStack(c, []core.Limit{l, {Algorithm: core.FixedWindow, Events: 3, Period: 2 * time.Hour}}, win)
	_, refused["NewDynamic"] = redisstore.NewDynamic(c, func(string) core.Limit { return l }, win)
	_, refused["NewMulti, local quota"] = redisstore.NewMulti(c, win, redisstore.WithLocalQuota(redisstore.LocalQuota{}))
	for what, err := range refused {
		if err == nil || !strings.Contains(err.Error(), "WithClientClockWindows") {
			t.Errorf("%s took WithClientClockWindows, or did not say why not: %v", what, err)
		}
	}
	if _, err := redisstore.New(c, l, win); err != nil {
		t.Fatalf("New of a plain fixed window: %v", err)
	}
	m := must(redisstore.NewMulti(c, redisstore.WithClientClockWindows(), redisstore.WithPrefix(fmt.Sprintf("o%d:", rand.Uint64()))))
	tb := core.Limit{Events: 2, Period: time.Hour, Burst: 2}
	for _, ls := range [][]core.Limit{{tb}, {l, {Algorithm: core.FixedWindow, Events: 3, Period: 2 * time.Hour}}} {
		if _, err := m.Allow(ctx, []redisstore.Item{{Key: "k", Limits: ls, Cost: 1}}); err != nil {
			t.Fatal(err)
		}
		if n := c.Exists(ctx, redisstore.MultiKey(m, "k", ls[0])).Val(); n != 1 {
			t.Fatalf("%v: the script's key is missing; want the call decided by the script", ls)
		}
	}
	_, err := m.Allow(ctx, []redisstore.Item{{Key: "k", Limits: []core.Limit{l}, Cost: 3}})
	if !errors.Is(err, core.ErrCostTooLarge) {
		t.Fatalf("cost above events: %v, want core.ErrCostTooLarge", err)
	}
}

// TestClientClockWindowsBreaker: on the pipelined path a dead server is a
// store error that Health counts and that opens the breaker, which then
// keeps calls from the server; once it is back and the open period has
// passed, the probe's call decides again.
func TestClientClockWindowsBreaker(t *testing.T) {
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	clk := coretest.NewClock(time.Unix(1_700_000_000, 0))
	m := must(redisstore.NewMulti(c, redisstore.WithClientClockWindows(), redisstore.WithClock(clk),
		redisstore.WithBreaker(redisstore.BreakerConfig{MinCalls: 2, FailureRate: 50, OpenFor: time.Second})))
	items := []redisstore.Item{{Key: "k", Limits: []core.Limit{{Algorithm: core.FixedWindow, Events: 5, Period: time.Hour}}, Cost: 1}}
	if _, err := m.Allow(ctx, items); err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	if _, err := m.Allow(ctx, items); !errors.Is(err, core.ErrStore) {
		t.Fatalf("server down: %v, want a store error", err)
	}
	if h := m.Health(); h.Breaker != "open" || h.Failures != 1 || h.StoreDecisions != 1 {
		t.Fatalf("health %+v; want the breaker open, 1 failure, 1 decision", h)
	}
	srv.Restart()
	if _, err := m.Allow(ctx, items); !errors.Is(err, redisstore.ErrCircuitOpen) {
		t.Fatalf("breaker open: %v, want ErrCircuitOpen", err)
	}
	clk.Advance(time.Second)
	ds, err := m.Allow(ctx, items)
	if err != nil || !ds[0].Allowed || ds[0].Remaining != 5-1 {
		t.Fatalf("after the open period: %+v, %v; want admitted with 4 left (the restarted server is empty)", ds, err)
	}
	if h := m.Health(); h.Breaker != "closed" {
		t.Fatalf("health %+v; want the breaker closed after the probe", h)
	}
}

// TestClientClockWindowsReplyLost: a pipeline whose reply is lost after
// Redis ran it is not sent again (go-redis would, on its own retries):
// the call is a store error and each key was charged once.
func TestClientClockWindowsReplyLost(t *testing.T) {
	srv := redistest.Start(t)
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { admin.Close() })
	proxy := newLossyProxy(t, srv.Addr())
	c := redis.NewClient(&redis.Options{Addr: proxy.Addr(), ContextTimeoutEnabled: true}) // go-redis's default: 3 retries
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	clk := coretest.NewClock(time.Unix(1_700_000_000, 0))
	m := must(redisstore.NewMulti(c, redisstore.WithClientClockWindows(), redisstore.WithClock(clk), redisstore.WithTimeout(5*time.Second)))
	l := core.Limit{Algorithm: core.FixedWindow, Events: 5, Period: time.Hour}
	items := []redisstore.Item{{Key: "a", Limits: []core.Limit{l}, Cost: 1}, {Key: "b", Limits: []core.Limit{l}, Cost: 1}}
	proxy.armed.Store(1)
	ds, err := m.Allow(ctx, items)
	if proxy.lost.Load() != 1 {
		t.Fatalf("the proxy lost %d replies, want 1", proxy.lost.Load())
	}
	if !errors.Is(err, core.ErrStore) {
		t.Errorf("Allow whose reply was lost = %+v, %v; want a store error", ds, err)
	}
	for _, k := range []string{"a", "b"} {
		if v := admin.Get(ctx, redisstore.WindowKey(m, k, l, clk.Now())).Val(); v != "1" {
			t.Errorf("key %s holds %q after one call whose reply was lost, want 1 (charged once)", k, v)
		}
	}
}

// TestClientClockWindowsBatched: goroutines make mixed calls (a fixed
// window, pipelined, beside a GCRA, the script) and one-key calls of a
// Limiter of the same window, on a frozen clock, so that windows and
// scripts share the server's batched round trips: exactly the window's
// events are admitted, and the GCRA key is charged for the admitted mixed
// calls only.
func TestClientClockWindowsBatched(t *testing.T) {
	c := single(t)
	ctx := context.Background()
	clk := coretest.NewClock(time.Unix(1_700_000_000, 0))
	opts := []redisstore.Option{redisstore.WithClientClockWindows(), redisstore.WithClock(clk), redisstore.WithScriptClock(clk),
		redisstore.WithPrefix(fmt.Sprintf("b%d:", rand.Uint64())), redisstore.WithDenyCache(0), redisstore.WithTimeout(10 * time.Second)}
	m := must(redisstore.NewMulti(c, opts...))
	hot := core.Limit{Algorithm: core.FixedWindow, Events: 60, Period: time.Hour}
	lim := must(redisstore.New(c, hot, opts...))
	gcra := core.PerHour(1000).WithAlgorithm(core.GCRA)
	items := []redisstore.Item{{Key: "hot", Limits: []core.Limit{hot}, Cost: 1}, {Key: "g", Limits: []core.Limit{gcra}, Cost: 1}}
	var admitted, mixed atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				if w%2 == 0 {
					d, err := lim.Allow(ctx, "hot", 1)
					if err != nil {
						errs <- err
						return
					}
					if d.Allowed {
						admitted.Add(1)
					}
					continue
				}
				ds, err := m.Allow(ctx, items)
				if err != nil {
					errs <- err
					return
				}
				if ds[0].Allowed && ds[1].Allowed {
					admitted.Add(1)
					mixed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := admitted.Load(); n != 60 {
		t.Fatalf("%d calls admitted, want exactly 60", n)
	}
	g := must(redisstore.New(c, gcra, opts[1:]...))
	if d := must(g.Allow(ctx, "g", 1)); !d.Allowed || d.Remaining != 1000-int(mixed.Load())-1 {
		t.Fatalf("the GCRA after %d admitted mixed calls: %+v, want %d left", mixed.Load(), d, 1000-mixed.Load()-1)
	}
}
