package benchmarks

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/redisstore"
)

// hotLimit is the hot key's limit: so large that every call is admitted,
// so that each row measures the admitted path.
var hotLimit = core.Limit{Events: 1 << 30, Period: time.Second, Burst: 1 << 30}.WithAlgorithm(core.GCRA)

// BenchmarkHotKey measures one key that every call asks about: the
// in-memory limiter; redisstore, one round trip per call; and redisstore
// with local quota, deciding from leases, as a Limiter and as a Dynamic
// (whose limit function answers the same limit). cmds/op is the server's
// own count (INFO), per decision.
func BenchmarkHotKey(b *testing.B) {
	srv := redistest.Start(b)
	rb := &redisBench{srv: srv}
	rows := []struct {
		name    string
		modes   []string
		opts    []redisstore.Option // nil: in memory
		dynamic bool                // redisstore.NewDynamic
	}{
		{"memory", []string{"seq", "par64"}, nil, false},
		{"floodgate", both, []redisstore.Option{redisstore.WithDenyCache(0)}, false},
		{"floodgate-quota", both, []redisstore.Option{redisstore.WithDenyCache(0), redisstore.WithLocalQuota(redisstore.LocalQuota{})}, false},
		{"floodgate-dynamic-quota", both, []redisstore.Option{redisstore.WithDenyCache(0), redisstore.WithLocalQuota(redisstore.LocalQuota{})}, true},
	}
	procs := runtime.GOMAXPROCS(0)
	if redisGoroutines%procs != 0 {
		b.Skipf("GOMAXPROCS=%d does not divide %d goroutines; run with -cpu 2 (or 1, 4, ...)", procs, redisGoroutines)
	}
	ctx := context.Background()
	for _, row := range rows {
		b.Run(row.name, func(b *testing.B) {
			for _, mode := range row.modes {
				b.Run(mode, func(b *testing.B) {
					c, _ := rb.client(b, nil)
					var lim core.Limiter
					var err error
					switch {
					case row.opts == nil:
						lim, err = core.New(hotLimit)
					case row.dynamic:
						lim, err = redisstore.NewDynamic(c, func(string) core.Limit { return hotLimit }, row.opts...)
					default:
						lim, err = redisstore.New(c, hotLimit, row.opts...)
					}
					if err != nil {
						b.Fatal(err)
					}
					before := readStats(b, c)
					var refused, failed atomic.Int64
					call := func() {
						d, err := lim.Allow(ctx, "hot", 1)
						switch {
						case err != nil:
							failed.Add(1)
						case !d.Allowed:
							refused.Add(1)
						}
					}
					b.ReportAllocs()
					b.ResetTimer()
					if mode == "seq" {
						for b.Loop() {
							call()
						}
					} else {
						b.SetParallelism(redisGoroutines / procs)
						b.RunParallel(func(pb *testing.PB) {
							for pb.Next() {
								call()
							}
						})
					}
					b.StopTimer()
					after := readStats(b, c)
					b.ReportMetric(float64(after.cmds-before.cmds-infoReads)/float64(b.N), "cmds/op")
					if n, m := refused.Load(), failed.Load(); n+m > 0 {
						b.Fatalf("%d refused and %d failed of %d calls, want every call admitted", n, m, b.N)
					}
				})
			}
		})
	}
}
