package redisstore_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/redisstore"
)

// BenchmarkMulti: calls of three fixed-window keys, each under its own
// limit, over 4,096 values, on a redis-server of its own; sequential (one
// round trip each) and from 64 goroutines (sharing round trips). Beside
// time and allocations it reports the commands Redis ran per call.
func BenchmarkMulti(b *testing.B) {
	srv := redistest.Start(b)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	b.Cleanup(func() { c.Close() })
	m, err := redisstore.NewMulti(c)
	if err != nil {
		b.Fatal(err)
	}
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
	ctx := context.Background()
	for _, par := range []int{1, 64} {
		b.Run(fmt.Sprintf("par%d", par), func(b *testing.B) {
			var next atomic.Int64
			before := commands(b, c)
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
			b.ReportMetric(float64(commands(b, c)-before)/float64(b.N), "redis-cmds/op")
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
	var n int64
	for _, line := range strings.Split(s, "\r\n") {
		if v, ok := strings.CutPrefix(line, "total_commands_processed:"); ok {
			n, _ = strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	tb.Fatal("INFO stats has no total_commands_processed")
	return 0
}
