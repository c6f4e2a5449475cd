package benchmarks

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/benchwork"
	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/redisstore"
)

// cmdStat is one command's line of INFO commandstats.
type cmdStat struct{ calls, usec int64 }

// commandStats reads INFO commandstats, by command name ("fcall", "get").
func commandStats(tb testing.TB, c *redis.Client) map[string]cmdStat {
	tb.Helper()
	reply, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		tb.Fatal(err)
	}
	m := map[string]cmdStat{}
	for name, s := range redistest.ParseInfo(reply).Commands(tb) {
		m[name] = cmdStat{calls: s.Calls, usec: s.Usec}
	}
	return m
}

// outside are the commands a script does not call: the client's own.
var outside = map[string]bool{"info": true, "ping": true, "flushdb": true, "hello": true, "client|setinfo": true,
	"fcall": true, "evalsha": true, "eval": true, "function|load": true}

// BenchmarkRedisFunctions measures what Redis Functions change on the
// server: the same decisions sent as FCALL to a server that has Functions
// (the library's helpers made once, when it loads) and as EVALSHA to one
// that refuses them (rename-command FUNCTION "", where redisstore falls
// back to EVALSHA, whose script makes its helpers on every call).
// Sequential, for the token bucket and GCRA, on one key (a limit of 10⁶/s:
// every call admitted) and cycling over 4,096 keys (the policy, 100/s).
// Besides ns/op it reports the server's own time from INFO commandstats:
// srv-µs/op, the script command's (FCALL's or EVALSHA's) time per call,
// which includes the commands the script calls; inner-µs/op, those
// commands' time (TIME, GET, SET...); lua-µs/op, the difference: the time
// in Lua, the call's set-up included.
func BenchmarkRedisFunctions(b *testing.B) {
	servers := []struct {
		path string // the command redisstore sends
		srv  *redistest.Server
	}{
		{"evalsha", redistest.Start(b, redistest.WithConfig(`rename-command FUNCTION ""`))},
		{"fcall", redistest.Start(b)},
	}
	keys := benchwork.Keys(redisKeys)
	if seen := distinct(keys); seen != redisKeys {
		b.Fatalf("%d distinct keys of %d", seen, redisKeys)
	}
	ctx := context.Background()
	for _, alg := range []core.Algorithm{core.TokenBucket, core.GCRA} {
		for _, spread := range []string{"onekey", "keys"} {
			for _, sv := range servers {
				b.Run(fmt.Sprintf("%s/%s/%s", alg, spread, sv.path), func(b *testing.B) {
					c := redis.NewClient(&redis.Options{Addr: sv.srv.Addr(), ContextTimeoutEnabled: true})
					defer c.Close()
					l := policy
					if spread == "onekey" {
						l = core.PerSecond(1_000_000)
					}
					lim, err := redisstore.New(c, l.WithAlgorithm(alg), redisstore.WithDenyCache(0))
					if err != nil {
						b.Fatal(err)
					}
					flush(b, c)
					if _, err := lim.Allow(ctx, "warm-up", 1); err != nil { // loads the library or the script
						b.Fatal(err)
					}
					before := commandStats(b, c)
					refused := 0
					b.ReportAllocs()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						key := "hot"
						if spread == "keys" {
							key = keys[i%redisKeys]
						}
						d, err := lim.Allow(ctx, key, 1)
						if err != nil {
							b.Fatal(err)
						}
						if !d.Allowed {
							refused++
						}
					}
					b.StopTimer()
					after := commandStats(b, c)
					if refused > b.N/10 {
						b.Fatalf("%d of %d refused", refused, b.N)
					}
					outer := after[sv.path].usec - before[sv.path].usec
					if n := after[sv.path].calls - before[sv.path].calls; n != int64(b.N) {
						b.Fatalf("%d %s calls for %d decisions", n, sv.path, b.N)
					}
					var inner int64
					for name, s := range after {
						if !outside[name] {
							inner += s.usec - before[name].usec
						}
					}
					n := float64(b.N)
					b.ReportMetric(float64(outer)/n, "srv-µs/op")
					b.ReportMetric(float64(inner)/n, "inner-µs/op")
					b.ReportMetric(float64(outer-inner)/n, "lua-µs/op")
				})
			}
		}
	}
}
