package main

import (
	"context"
	"strings"
	"testing"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/internal/redistest"
)

// TestLocalCacheSetting: with LOCAL_CACHE_SIZE_IN_BYTES, a key Redis
// refused is refused again with no Redis command, with 0 left and the
// window's reset, and counted in over_limit_with_local_cache (upstream's
// counter, on /metrics); with 0, every refusal is a command.
func TestLocalCacheSetting(t *testing.T) {
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	root := runtimeRoot(t, "domain: d\ndescriptors:\n  - key: user\n    rate_limit: {unit: hour, requests_per_unit: 2}\n")
	for _, tc := range []struct {
		size     string
		commands int64 // of the second refusal
	}{
		{size: "1048576", commands: 0},
		{size: "0", commands: 2},
	} {
		t.Run(tc.size, func(t *testing.T) {
			for attempt := 1; ; attempt++ {
				if err := c.FlushDB(context.Background()).Err(); err != nil {
					t.Fatal(err)
				}
				hour := time.Now().Unix() / 3600
				r := launch(t, upstreamEnv(srv.Addr(), root, map[string]string{"LOCAL_CACHE_SIZE_IN_BYTES": tc.size}))
				healthy(t, r.addrs.http)
				client := rlsv3.NewRateLimitServiceClient(dial(t, r.addrs.grpc, nil))
				ask := func() (*rlsv3.RateLimitResponse, int64) {
					t.Helper()
					before := commands(t, c)
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					resp, err := client.ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "d", Descriptors: []*rlcommon.RateLimitDescriptor{desc("user=ann")}})
					if err != nil {
						t.Fatal(err)
					}
					return resp, commands(t, c) - before
				}
				ask()
				ask()
				first, n := ask()
				// A refusal on Redis is an INCRBY and the DECRBY that gives
				// it back (their PEXPIREs, which scripts also run, are not
				// counted).
				if first.GetOverallCode() != rlsv3.RateLimitResponse_OVER_LIMIT || n != 2 {
					t.Fatalf("the first refusal: %v, %d commands", first, n)
				}
				second, n := ask()
				st := second.GetStatuses()[0]
				reset := st.GetDurationUntilReset().GetSeconds()
				if second.GetOverallCode() != rlsv3.RateLimitResponse_OVER_LIMIT || st.GetLimitRemaining() != 0 || n != tc.commands {
					t.Fatalf("the second refusal: %v, %d commands; want OVER_LIMIT, 0 left, %d commands", second, n, tc.commands)
				}
				if time.Now().Unix()/3600 != hour && attempt < 3 {
					_ = r.stop()
					continue // an hour ended: the answers are of two windows
				}
				if want := first.GetStatuses()[0].GetDurationUntilReset().GetSeconds(); reset < want-1 || reset > want {
					t.Fatalf("the second refusal resets in %d s, the first in %d s", reset, want)
				}
				metrics := get(t, "http://"+r.addrs.http+"/metrics")
				line := `ratelimit_service_rate_limit_over_limit_with_local_cache{domain="d",key1="user",key2=""} ` + map[string]string{"0": "0", "1048576": "1"}[tc.size]
				if !strings.Contains(metrics, line+"\n") {
					t.Fatalf("/metrics has no line %q", line)
				}
				return
			}
		})
	}
}
