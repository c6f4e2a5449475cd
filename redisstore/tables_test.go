package redisstore_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/redisstore"
)

// single returns a client of a fresh redis-server for t.
func single(t *testing.T) redis.UniversalClient {
	t.Helper()
	s := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	return c
}

// factory makes Redis limiters deciding at the fake clock's time. Their
// timeout is long: a first call on a busy machine under -race (a Cluster's
// slots fetched, the script loaded) can outlast the default, and the
// timeout changes no decision.
func factory(c redis.UniversalClient, opts ...redisstore.Option) coretest.Factory {
	return func(t testing.TB, tab coretest.Table, clk *coretest.Clock) core.Limiter {
		o := append([]redisstore.Option{redisstore.WithClock(clk), redisstore.WithScriptClock(clk),
			redisstore.WithPrefix(fmt.Sprintf("t%d:", rand.Uint64())), redisstore.WithTimeout(5 * time.Second)}, opts...)
		lim, err := redisstore.New(c, tab.Limit, o...)
		if err != nil {
			t.Fatal(err)
		}
		return lim
	}
}

// shortSteps is n, or a quarter of it under -short: a randomized
// comparison with memory then checks a quarter as many decisions, each as
// exactly.
func shortSteps(n int) int {
	if testing.Short() {
		return n / 4
	}
	return n
}

// onServers runs play on a client of a single server and on one of a
// Cluster, in parallel subtests: the Cluster takes seconds to start.
func onServers(t *testing.T, play func(t *testing.T, c redis.UniversalClient)) {
	clients := map[string]func(t *testing.T) redis.UniversalClient{
		"single": single,
		"cluster": func(t *testing.T) redis.UniversalClient {
			cl := redistest.StartCluster(t)
			c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), ContextTimeoutEnabled: true})
			t.Cleanup(func() { c.Close() })
			return c
		},
	}
	for name, mk := range clients {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			play(t, mk(t))
		})
	}
}

// TestDecisionTables: the shared decision tables pass exactly on a single
// server and on a Cluster, with the deny cache on and off.
func TestDecisionTables(t *testing.T) {
	t.Parallel()
	onServers(t, func(t *testing.T, c redis.UniversalClient) {
		for _, tab := range coretest.Tables() {
			for _, size := range []int{0, redisstore.DefaultDenyCacheSize} {
				t.Run(fmt.Sprintf("%s/cache=%d", tab.Name, size), func(t *testing.T) {
					coretest.Run(t, tab, factory(c, redisstore.WithDenyCache(size)), 0)
				})
			}
		}
	})
}

// TestMatchesMemory plays random traffic (several keys, random costs and
// refunds, steps of random nanoseconds, microseconds or whole periods) on
// the in-memory limiter and on Redis at the same fake instants, and requires
// the same decision from both every time: every algorithm, and each
// algorithm's settings (overdraft, longest waits, warm-up periods and cold
// factors, whole and not).
func TestMatchesMemory(t *testing.T) {
	t.Parallel()
	runAs(t, busy)
	c := single(t)
	limits := []core.Limit{
		core.PerSecond(10).WithBurst(3),
		core.PerSecond(3).WithBurst(2),
		core.PerMinute(1000).WithBurst(50),
		{Events: 7, Period: 1300 * time.Millisecond, Burst: 11},
		{Events: 1_000_000, Period: 24 * time.Hour},
		{Events: 5, Period: 40 * 24 * time.Hour, Burst: 5},
	}
	// A policy is an algorithm and its settings for a limit; long says
	// whether it also runs on the 40-day limit, which is too long for
	// Redis with an overdraft, a warm-up, or a leaky bucket's 140-day
	// longest wait (New refuses them, tested in TestConstruction).
	type policy struct {
		name string
		tab  func(l core.Limit) coretest.Table
		long bool
	}
	plain := func(alg core.Algorithm) policy {
		return policy{alg.String(), func(l core.Limit) coretest.Table { return coretest.Table{Limit: l.WithAlgorithm(alg)} }, true}
	}
	policies := []policy{
		plain(core.TokenBucket), plain(core.GCRA), plain(core.FixedWindow), plain(core.SlidingWindow), plain(core.LeakyBucket),
		// The logs may hold up to 2²⁰ entries.
		{"sliding-log", func(l core.Limit) coretest.Table {
			return coretest.Table{Limit: l.WithAlgorithm(core.SlidingLog).WithMaxEntries(1 << 20)}
		}, true},
		{"sub-windows-4", func(l core.Limit) coretest.Table {
			return coretest.Table{Limit: l.WithSubWindows(4).WithMaxEntries(1 << 20)}
		}, true},
		{"sub-windows-10", func(l core.Limit) coretest.Table {
			return coretest.Table{Limit: l.WithSubWindows(10).WithMaxEntries(1 << 20)}
		}, true},
		{"token-bucket-overdraft", func(l core.Limit) coretest.Table {
			return coretest.Table{Limit: l.WithOverdraft()}
		}, false},
		{"leaky-bucket-3.5-intervals", func(l core.Limit) coretest.Table {
			return coretest.Table{Limit: l.WithMaxDelay(3*l.Interval() + l.Interval()/2)}
		}, false},
		{"warm-up-period-x3", func(l core.Limit) coretest.Table {
			return coretest.Table{Limit: l.WithWarmUp(l.Period, 3)}
		}, false},
		{"warm-up-odd", func(l core.Limit) coretest.Table {
			return coretest.Table{Limit: l.WithWarmUp(5*l.Interval()/2+7, 1.7)}
		}, false},
	}
	r := rand.New(rand.NewPCG(8, 9))
	for _, p := range policies {
		for _, l := range limits {
			if !p.long && l.Period > 30*24*time.Hour {
				continue
			}
			tab := p.tab(l)
			t.Run(fmt.Sprintf("%s/%v", p.name, l), func(t *testing.T) {
				clk := coretest.NewClock(coretest.T0.Add(time.Duration(r.Int64N(int64(time.Hour)))))
				mem, err := core.New(tab.Limit, core.WithClock(clk))
				if err != nil {
					t.Fatal(err)
				}
				red := factory(c)(t, tab, clk)
				maxCost := l.EffectiveBurst()
				if tab.Limit.Algorithm == core.FixedWindow || tab.Limit.Algorithm == core.SlidingWindow || tab.Limit.Algorithm == core.SlidingLog {
					maxCost = l.Events
				}
				var allowed, denied, delayed, refunds int
				// The float algorithms get longer runs: exact agreement
				// depends on every rounding.
				steps := shortSteps(400)
				if tab.Limit.Algorithm == core.WarmUp || tab.Limit.Overdraft {
					steps = shortSteps(2000)
				}
				for i := 0; i < steps; i++ {
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
						refundBoth(t, mem, red, key, cost)
						refunds++
						continue
					}
					got, want := allowBoth(t, mem, red, key, cost)
					if got != want {
						t.Fatalf("step %d, %s cost %d at %v:\nredis  %+v\nmemory %+v", i, key, cost, clk.Time().Sub(coretest.T0), got, want)
					}
					switch {
					case !got.Allowed:
						denied++
					case got.Delay > 0:
						delayed++
					default:
						allowed++
					}
				}
				// The traffic must reach both sides of every decision, and
				// the shaper's waits when one interval fits in its longest
				// wait (the 40-day limit's 8-day interval does not).
				longest := tab.Limit.MaxDelay
				if longest == 0 {
					longest = core.DefaultMaxDelay
				}
				shapes := tab.Limit.Algorithm == core.LeakyBucket && longest >= l.Interval()
				if allowed+delayed == 0 || denied == 0 || refunds == 0 || shapes != (delayed > 0) {
					t.Errorf("%d admitted at once, %d shaped, %d refused, %d refunds: the traffic misses a kind of decision", allowed, delayed, denied, refunds)
				}
			})
		}
	}
}
