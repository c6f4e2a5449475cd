package redisstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/core/coretest"
	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/redisstore"
)

// single returns a client of a fresh redis-server for t.
func single(t *testing.T) redis.UniversalClient {
	t.Helper()
	s := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	t.Cleanup(func() { c.Close() })
	return c
}

// factory makes Redis limiters deciding at the fake clock's time.
func factory(c redis.UniversalClient, opts ...redisstore.Option) coretest.Factory {
	return func(t testing.TB, tab coretest.Table, clk *coretest.Clock) core.Limiter {
		o := append([]redisstore.Option{redisstore.WithAlgorithm(tab.Algorithm), redisstore.WithClock(clk), redisstore.WithScriptClock(clk),
			redisstore.WithPrefix(fmt.Sprintf("t%d:", rand.Uint64()))}, opts...)
		if tab.SubWindows != 0 {
			o = append(o, redisstore.WithSubWindows(tab.SubWindows))
		}
		if tab.MaxEntries != 0 {
			o = append(o, redisstore.WithMaxEntries(tab.MaxEntries))
		}
		lim, err := redisstore.New(c, tab.Limit, o...)
		if err != nil {
			t.Fatal(err)
		}
		return lim
	}
}

// TestDecisionTables: the shared decision tables pass exactly on a single
// server and on a Cluster, with the deny cache on and off.
func TestDecisionTables(t *testing.T) {
	clients := map[string]func(t *testing.T) redis.UniversalClient{
		"single": single,
		"cluster": func(t *testing.T) redis.UniversalClient {
			cl := redistest.StartCluster(t)
			c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
			t.Cleanup(func() { c.Close() })
			return c
		},
	}
	for name, mk := range clients {
		t.Run(name, func(t *testing.T) {
			c := mk(t)
			for _, tab := range coretest.Tables() {
				for _, size := range []int{0, redisstore.DefaultDenyCacheSize} {
					t.Run(fmt.Sprintf("%s/cache=%d", tab.Name, size), func(t *testing.T) {
						coretest.Run(t, tab, factory(c, redisstore.WithDenyCache(size)), 0)
					})
				}
			}
		})
	}
}

// TestMatchesMemory plays random traffic (several keys, random costs and
// refunds, steps of random nanoseconds, microseconds or whole periods) on
// the in-memory limiter and on Redis at the same fake instants, and requires
// the same decision from both every time.
func TestMatchesMemory(t *testing.T) {
	c := single(t)
	limits := []core.Limit{
		core.PerSecond(10).WithBurst(3),
		core.PerSecond(3).WithBurst(2),
		core.PerMinute(1000).WithBurst(50),
		{Events: 7, Period: 1300 * time.Millisecond, Burst: 11},
		{Events: 1_000_000, Period: 24 * time.Hour},
		{Events: 5, Period: 40 * 24 * time.Hour, Burst: 5},
	}
	// Each algorithm, and SlidingWindow with 4 and 10 sub-windows; the
	// logs may hold up to 2²⁰ entries.
	type variant struct {
		alg core.Algorithm
		sub int
	}
	variants := []variant{{core.TokenBucket, 0}, {core.GCRA, 0}, {core.FixedWindow, 0}, {core.SlidingWindow, 0},
		{core.SlidingLog, 0}, {core.SlidingWindow, 4}, {core.SlidingWindow, 10}}
	r := rand.New(rand.NewPCG(8, 9))
	for _, v := range variants {
		alg := v.alg
		for _, l := range limits {
			t.Run(fmt.Sprintf("%v/sub=%d/%v", alg, v.sub, l), func(t *testing.T) {
				clk := coretest.NewClock(coretest.T0.Add(time.Duration(r.Int64N(int64(time.Hour)))))
				tab := coretest.Table{Algorithm: alg, Limit: l, SubWindows: v.sub}
				if alg == core.SlidingLog || v.sub != 0 {
					tab.MaxEntries = 1 << 20
				}
				mem, err := core.New(l, append(tab.CoreOptions(), core.WithClock(clk))...)
				if err != nil {
					t.Fatal(err)
				}
				red := factory(c)(t, tab, clk)
				maxCost := l.EffectiveBurst()
				if alg == core.FixedWindow || alg == core.SlidingWindow || alg == core.SlidingLog {
					maxCost = l.Events
				}
				ctx := context.Background()
				for i := 0; i < 400; i++ {
					switch r.IntN(4) {
					case 0:
						clk.Advance(time.Duration(r.Int64N(1000)))
					case 1:
						clk.Advance(time.Duration(r.Int64N(1000)) * time.Microsecond)
					case 2:
						clk.Advance(time.Duration(r.Int64N(int64(l.Interval()) * 3)))
					}
					key := fmt.Sprint("k", r.IntN(3))
					cost := 1 + r.IntN(min(maxCost, 4))
					if r.IntN(8) == 0 {
						cost = 1 + r.IntN(maxCost)
					}
					if r.IntN(10) == 0 {
						if err := mem.Refund(ctx, key, cost); err != nil {
							t.Fatal(err)
						}
						if err := red.Refund(ctx, key, cost); err != nil {
							t.Fatal(err)
						}
						continue
					}
					want, err := mem.Allow(ctx, key, cost)
					if err != nil {
						t.Fatal(err)
					}
					got, err := red.Allow(ctx, key, cost)
					if err != nil {
						t.Fatal(err)
					}
					if got != want {
						t.Fatalf("step %d, %s cost %d at %v:\nredis  %+v\nmemory %+v", i, key, cost, clk.Time().Sub(coretest.T0), got, want)
					}
				}
			})
		}
	}
}
