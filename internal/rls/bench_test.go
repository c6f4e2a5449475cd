package rls_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/internal/rls"
	"github.com/floodgate/floodgate/internal/rlsconfig"
	"github.com/floodgate/floodgate/redisstore"
)

// BenchmarkShouldRateLimit is the service's own work on a request of three
// descriptors, each under its own rule, over 4,096 values, in memory:
// matching, deciding all or nothing, and the response with its header
// fields (BenchmarkEnvoyRLS in the benchmarks module measures it over gRPC
// and Redis).
func BenchmarkShouldRateLimit(b *testing.B) { benchShouldRateLimit(b, 0) }

// BenchmarkShouldRateLimitLocalCache is BenchmarkShouldRateLimit with the
// local cache of refused keys (1 MiB), which every descriptor looks up
// and misses: what the cache costs a request it does not refuse.
func BenchmarkShouldRateLimitLocalCache(b *testing.B) { benchShouldRateLimit(b, 1<<20) }

func benchShouldRateLimit(b *testing.B, cache int) {
	d, err := rlsconfig.Parse("bench.yaml", []byte(`domain: bench
descriptors:
  - key: k1
    rate_limit: {unit: second, requests_per_unit: 1000000000}
  - key: k2
    rate_limit: {unit: second, requests_per_unit: 1000000000}
  - key: k3
    rate_limit: {unit: second, requests_per_unit: 1000000000}
`))
	if err != nil {
		b.Fatal(err)
	}
	c, err := rlsconfig.Of([]*rlsconfig.Domain{d})
	if err != nil {
		b.Fatal(err)
	}
	svc, err := rls.New(rls.Config{Store: rls.Memory(), LocalCacheBytes: cache})
	if err != nil {
		b.Fatal(err)
	}
	if err := svc.SetRules(rls.FromConfig(c)); err != nil {
		b.Fatal(err)
	}
	reqs := make([]*rlsv3.RateLimitRequest, 4096)
	for i := range reqs {
		req := &rlsv3.RateLimitRequest{Domain: "bench"}
		for _, k := range []string{"k1", "k2", "k3"} {
			req.Descriptors = append(req.Descriptors, &rlcommon.RateLimitDescriptor{
				Entries: []*rlcommon.RateLimitDescriptor_Entry{{Key: k, Value: fmt.Sprint("v", i)}},
			})
		}
		reqs[i] = req
	}
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := svc.ShouldRateLimit(context.Background(), reqs[next.Add(1)%int64(len(reqs))])
			if err != nil || resp.GetOverallCode() != rlsv3.RateLimitResponse_OK {
				b.Fatalf("%v, %v", resp, err)
			}
		}
	})
}

// BenchmarkLocalCacheRedis is a request for a key Redis refused, on
// Redis with redisstore's Multi, sequentially: without the local cache,
// a round trip; with it, none.
func BenchmarkLocalCacheRedis(b *testing.B) {
	srv := redistest.Start(b)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	b.Cleanup(func() { _ = c.Close() })
	a := &rls.Rule{ID: "a", Limits: []core.Limit{core.PerHour(1).WithAlgorithm(core.FixedWindow)}, RequestsPerUnit: 1, Unit: rlsv3.RateLimitResponse_RateLimit_HOUR}
	tb := table{"d|k=a": {a, "ka"}}
	req := &rlsv3.RateLimitRequest{Domain: "d", Descriptors: []*rlcommon.RateLimitDescriptor{desc("k=a")}}
	for _, cache := range []int{0, 1 << 20} {
		b.Run(fmt.Sprint("cache=", cache), func(b *testing.B) {
			m, err := redisstore.NewMulti(c)
			if err != nil {
				b.Fatal(err)
			}
			svc, err := rls.New(rls.Config{Store: func(l []core.Limit) (core.Limiter, error) { return redisstore.New(c, l[0]) }, Multi: redisMulti{m}, LocalCacheBytes: cache})
			if err != nil {
				b.Fatal(err)
			}
			if err := svc.SetRules(tb, tb.rules()); err != nil {
				b.Fatal(err)
			}
			if err := c.FlushDB(context.Background()).Err(); err != nil {
				b.Fatal(err)
			}
			for range 2 {
				if _, err := svc.ShouldRateLimit(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				resp, err := svc.ShouldRateLimit(context.Background(), req)
				if err != nil || resp.GetOverallCode() != rlsv3.RateLimitResponse_OVER_LIMIT {
					b.Fatalf("%v, %v", resp, err)
				}
			}
		})
	}
}
