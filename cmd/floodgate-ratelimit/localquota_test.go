package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/internal/redistest"
)

// TestLocalQuotaSetting: -local-quota, FLOODGATE_RLS_LOCAL_QUOTA=true and
// a rule's local_quota: true (with FLOODGATE_RLS_CLIENT_CLOCK_WINDOWS=false)
// decide a hot request's descriptors from
// leases: once they are hot, most requests send Redis no command, and the
// limit admits no more than its 50 of 80 requests. Without them every
// request is a command, and exactly 50 are admitted.
func TestLocalQuotaSetting(t *testing.T) {
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	const rule = "    rate_limit: {unit: hour, requests_per_unit: 50%s}\n"
	yaml := func(field string) string {
		return "domain: d\ndescriptors:\n  - key: user\n" + fmt.Sprintf(rule, field) + "  - key: path\n" + fmt.Sprintf(rule, field) + "  - key: tenant\n" + fmt.Sprintf(rule, field)
	}
	for _, tc := range []struct {
		name  string
		env   map[string]string
		args  []string
		field string
		local bool
	}{
		{name: "off"},
		{name: "flag", args: []string{"-local-quota"}, local: true},
		{name: "env", env: map[string]string{"FLOODGATE_RLS_LOCAL_QUOTA": "true"}, local: true},
		{name: "yaml", field: ", local_quota: true", env: map[string]string{"FLOODGATE_RLS_CLIENT_CLOCK_WINDOWS": "false"}, local: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.Mkdir(filepath.Join(root, "config"), 0o755); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(root, "config"), "d.yaml", yaml(tc.field))
			for attempt := 1; ; attempt++ {
				if err := c.FlushDB(context.Background()).Err(); err != nil {
					t.Fatal(err)
				}
				hour := time.Now().Unix() / 3600
				env := upstreamEnv(srv.Addr(), root, map[string]string{"LOCAL_CACHE_SIZE_IN_BYTES": "0"})
				for k, v := range tc.env {
					env[k] = v
				}
				r := launch(t, env, tc.args...)
				healthy(t, r.addrs.http)
				client := rlsv3.NewRateLimitServiceClient(dial(t, r.addrs.grpc, nil))
				req := &rlsv3.RateLimitRequest{Domain: "d", Descriptors: []*rlcommon.RateLimitDescriptor{desc("user=ann"), desc("path=/a"), desc("tenant=t")}}
				admitted, free := 0, 0 // requests admitted, and those that cost no command
				for range 80 {
					before := commands(t, c)
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					resp, err := client.ShouldRateLimit(ctx, req)
					cancel()
					if err != nil {
						t.Fatal(err)
					}
					if resp.GetOverallCode() == rlsv3.RateLimitResponse_OK {
						admitted++
					}
					if commands(t, c) == before {
						free++
					}
				}
				if time.Now().Unix()/3600 != hour && attempt < 3 {
					_ = r.stop()
					continue // an hour ended: the answers are of two windows
				}
				leased := leasedDecisions(t, get(t, "http://"+r.addrs.http+"/metrics"))
				_ = r.stop()
				t.Logf("%d admitted, %d of 80 requests sent Redis no command, %d descriptors decided from leases", admitted, free, leased)
				// A request that cost no command had its three descriptors
				// decided from leases (admitted or refused here), and the
				// observer counted each.
				if leased < 3*free || !tc.local && leased != 0 {
					t.Errorf("/metrics counts %d decisions from leases, want at least 3 for each of the %d requests without a command (none without local quota)", leased, free)
				}
				// Never over the limit; with leases, units a lease still holds
				// when another key runs short are not admitted at once (a
				// lease holds at most half the limit's burst).
				if admitted > 50 || !tc.local && admitted != 50 || admitted < 25 {
					t.Errorf("%d of 80 requests admitted, want the limit's 50 (with local quota: at most 50, at least 25)", admitted)
				}
				if tc.local && free < 40 || !tc.local && free != 0 {
					t.Errorf("%d of 80 requests sent Redis no command; want at least 40 with local quota, none without", free)
				}
				return
			}
		})
	}
}

// leasedDecisions sums floodgate_leased_decisions_total over its series.
func leasedDecisions(t *testing.T, metrics string) int {
	t.Helper()
	n := 0
	for line := range strings.Lines(metrics) {
		if rest, ok := strings.CutPrefix(line, "floodgate_leased_decisions_total"); ok {
			f := strings.Fields(rest)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err != nil {
				t.Fatalf("/metrics: %q: %v", line, err)
			}
			n += int(v)
		}
	}
	return n
}
