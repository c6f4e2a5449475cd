package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/floodgate/floodgate/internal/redistest"
)

// TestExpirationJitter: EXPIRATION_JITTER_MAX_SECONDS=100 spreads the
// TTLs of keys written together over 100 s more, evenly (about a quarter
// in each 25 s), as upstream's does; unset, every key expires a second
// (the margin) after its window's end, as before. The windows are hours,
// so that no key expires while a busy machine writes and reads them.
func TestExpirationJitter(t *testing.T) {
	const (
		rules = "domain: d\ndescriptors:\n  - key: user\n    rate_limit:\n      unit: hour\n      requests_per_unit: 10\n"
		keys  = 400
	)
	for _, tc := range []struct {
		name   string
		jitter string // "": unset
	}{
		{"unset", ""},
		{"100s", "100"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			env := map[string]string{"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": srv.Addr()}
			if tc.jitter != "" {
				env["EXPIRATION_JITTER_MAX_SECONDS"] = tc.jitter
			}
			dir := t.TempDir()
			write(t, dir, "d.yaml", rules)
			r := launch(t, env, "-config", dir, "-grpc", "127.0.0.1:0", "-http", "")
			c := dial(t, r.addrs.grpc, nil)
			waitFor(t, "SERVING once Redis answers", func() bool { return healthOf(t, c, "ratelimit") == healthpb.HealthCheckResponse_SERVING })
			for i := range keys {
				if got := ask(t, c, desc(fmt.Sprint("user=u", i))).GetOverallCode(); got != rlsv3.RateLimitResponse_OK {
					t.Fatalf("request %d: %v, want OK\n%s", i, got, r.out)
				}
			}
			rc := redis.NewClient(&redis.Options{Addr: srv.Addr()})
			defer rc.Close()
			ks := allKeys(t, srv, "")
			if len(ks) != keys {
				t.Fatalf("%d keys in Redis, want %d", len(ks), keys)
			}
			// Every key's window ends at the next hour of Redis's clock;
			// read before the TTLs, so each TTL is at most base plus its
			// jitter, and less by the time the reading took.
			now, err := rc.Time(context.Background()).Result()
			if err != nil {
				t.Fatal(err)
			}
			base := now.Truncate(time.Hour).Add(time.Hour).Sub(now) + time.Second
			var quarters [4]int
			for _, k := range ks {
				ttl, err := rc.PTTL(context.Background(), k).Result()
				if err != nil {
					t.Fatal(err)
				}
				jitter := ttl - base
				top := time.Duration(0)
				if tc.jitter != "" {
					top = 100 * time.Second
				}
				if ttl <= 0 || jitter > top+time.Second || jitter < -10*time.Second { // a second of slack: TTLs are rounded up, clocks read apart
					t.Fatalf("%s: PTTL %v, want %v plus up to %v", k, ttl, base, top)
				}
				quarters[min(3, int(max(jitter, 0)*4/(100*time.Second)))]++
			}
			if tc.jitter == "" {
				return
			}
			// 100 expected in each, a standard deviation of about 8.7; the
			// time the reading took blurs the edges by a few per cent.
			for q, n := range quarters {
				if n < 60 || n > 140 {
					t.Errorf("PTTLs from %d s to %d s: %d keys of %d, want about %d: %v", 25*q, 25*(q+1), n, keys, keys/4, quarters)
				}
			}
		})
	}
}
