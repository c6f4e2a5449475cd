package redisstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/redisstore"
)

// BenchmarkMulti: calls of three fixed-window keys, each under its own
// limit, over 4,096 values, on a redis-server of its own and on a
// three-master Cluster (where a call's keys are on two or three masters,
// mostly); sequential (one round trip each) and from 64 goroutines
// (sharing round trips). On the single server it also reports the
// commands Redis ran per call. The -windows rows are the same calls made
// WithClientClockWindows (pipelined INCRBY and PEXPIRE, no script).
func BenchmarkMulti(b *testing.B) {
	var limits [3][]core.Limit
	for i := range limits {
		limits[i] = []core.Limit{core.PerSecond(1_000_000_000 - i).WithAlgorithm(core.FixedWindow)}
	}
	calls := make([][]redisstore.Item, 4096)
	for i := range calls {
		for j := range limits {
			calls[i] = append(calls[i], redisstore.Item{Key: fmt.Sprintf("k%d_v%d", j, i), Limits: limits[j], Cost: 1})
		}
	}
	b.Run("single", func(b *testing.B) {
		srv := redistest.Start(b)
		c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
		b.Cleanup(func() { c.Close() })
		benchMulti(b, c, calls, func(b *testing.B) int64 { return commands(b, c) })
	})
	b.Run("single-windows", func(b *testing.B) { // WithClientClockWindows
		srv := redistest.Start(b)
		c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
		b.Cleanup(func() { c.Close() })
		benchMulti(b, c, calls, func(b *testing.B) int64 { return commands(b, c) }, redisstore.WithClientClockWindows())
	})
	b.Run("cluster", func(b *testing.B) {
		cl := redistest.StartCluster(b)
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), ContextTimeoutEnabled: true})
		b.Cleanup(func() { c.Close() })
		benchMulti(b, c, calls, nil)
	})
	b.Run("cluster-windows", func(b *testing.B) {
		cl := redistest.StartCluster(b)
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), ContextTimeoutEnabled: true})
		b.Cleanup(func() { c.Close() })
		benchMulti(b, c, calls, nil, redisstore.WithClientClockWindows())
	})
}

// benchMulti runs BenchmarkMulti's rows on c; cmds, if not nil, counts
// the commands the server ran.
func benchMulti(b *testing.B, c redis.UniversalClient, calls [][]redisstore.Item, cmds func(*testing.B) int64, opts ...redisstore.Option) {
	m, err := redisstore.NewMulti(c, opts...)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, par := range []int{1, 64} {
		b.Run(fmt.Sprintf("par%d", par), func(b *testing.B) {
			var next atomic.Int64
			var before int64
			if cmds != nil {
				before = cmds(b)
			}
			b.ReportAllocs()
			b.ResetTimer()
			b.SetParallelism(max(1, par/2))
			call := func() {
				ds, err := m.Allow(ctx, calls[next.Add(1)%int64(len(calls))])
				if err != nil || !ds[0].Allowed {
					b.Fatalf("%v, %v", ds, err)
				}
			}
			if par == 1 {
				for range b.N {
					call()
				}
			} else {
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						call()
					}
				})
			}
			b.StopTimer()
			if cmds != nil {
				b.ReportMetric(float64(cmds(b)-before)/float64(b.N), "redis-cmds/op")
			}
		})
	}
}

// commands is how many commands the server has run, INFO's
// total_commands_processed (a script's own calls included).
func commands(tb testing.TB, c *redis.Client) int64 {
	tb.Helper()
	s, err := c.Info(context.Background(), "stats").Result()
	if err != nil {
		tb.Fatal(err)
	}
	return redistest.ParseInfo(s).Int(tb, "total_commands_processed")
}

// BenchmarkMultiLeased: a Multi made WithLocalQuota deciding calls of
// three hot keys (each a fixed window of 1e9 a second) from their leases,
// sequential and from 64 goroutines; the leases' grants and returns, once
// in a while, are in the time and the commands.
func BenchmarkMultiLeased(b *testing.B) {
	srv := redistest.Start(b)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	b.Cleanup(func() { c.Close() })
	m := must(redisstore.NewMulti(c, redisstore.WithLocalQuota(redisstore.LocalQuota{})))
	var items []redisstore.Item
	for j := range 3 {
		items = append(items, redisstore.Item{Key: fmt.Sprintf("hot%d", j), Limits: []core.Limit{core.PerSecond(1_000_000_000 - j).WithAlgorithm(core.FixedWindow)}, Cost: 1})
	}
	ctx := context.Background()
	for range 100 { // hot, and leased
		must(m.Allow(ctx, items))
	}
	for _, par := range []int{1, 64} {
		b.Run(fmt.Sprintf("par%d", par), func(b *testing.B) {
			before, leased := commands(b, c), m.Health().LeaseDecisions
			b.ReportAllocs()
			b.ResetTimer()
			call := func() bool {
				ds, err := m.Allow(ctx, items)
				if err != nil || !ds[0].Allowed {
					b.Errorf("%v, %v", ds, err)
					return false
				}
				return true
			}
			if par == 1 {
				for i := 0; i < b.N && call(); i++ {
				}
			} else {
				b.SetParallelism(par / 2)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() && call() {
					}
				})
			}
			b.StopTimer()
			b.ReportMetric(float64(commands(b, c)-before)/float64(b.N), "redis-cmds/op")
			b.ReportMetric(float64(m.Health().LeaseDecisions-leased)/float64(b.N), "leased/op")
		})
	}
}
