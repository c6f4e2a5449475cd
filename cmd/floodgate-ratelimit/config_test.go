package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/floodgate/floodgate/internal/redistest"
)

func write(t *testing.T, dir, name, body string) {
	t.Helper()
	// Write then rename, as a deploy would: the watcher never reads half
	// a file.
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

const perMinute = `domain: d
descriptors:
  - key: user
    rate_limit:
      unit: minute
      requests_per_unit: %N%
`

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.yaml", strings.ReplaceAll(perMinute, "%N%", "5"))
	var out strings.Builder
	if err := run(context.Background(), []string{"-check", "-config", dir}, noEnv, &out, nil); err != nil {
		t.Fatalf("a good directory: %v\n%s", err, &out)
	}
	if !strings.Contains(out.String(), dir+": 1 domain, 1 rule: OK") {
		t.Fatalf("output: %s", &out)
	}
	write(t, dir, "b.yaml", "domain: e\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: fortnight\n      requests_per_unit: 1\n  - key: l\n    shadow_mode: maybe\n")
	write(t, dir, "c.yaml", "domain: f\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: 1\n      algorithm: leaky-bucket\n")
	out.Reset()
	err := run(context.Background(), []string{"-check", "-config", dir}, noEnv, &out, nil)
	var exit exitCode
	if !errors.As(err, &exit) || exit != 1 {
		t.Fatalf("a bad directory: %v\n%s", err, &out)
	}
	// Every error of every file, each at its file and line.
	want := []string{
		filepath.Join(dir, "b.yaml") + `:5: descriptors[0].rate_limit.unit: invalid rate limit unit "fortnight"`,
		filepath.Join(dir, "b.yaml") + `:8: descriptors[1].shadow_mode: want true or false`,
		filepath.Join(dir, "c.yaml") + `:7: descriptors[0].rate_limit.algorithm: leaky-bucket admits a request after a wait`,
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), &out)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d:\ngot  %s\nwant %s", i, lines[i], w)
		}
	}
	// One domain over two files: an error, unless merged.
	split := t.TempDir()
	write(t, split, "a.yaml", strings.ReplaceAll(perMinute, "%N%", "5"))
	write(t, split, "b.yaml", "domain: d\ndescriptors:\n  - key: path\n    rate_limit:\n      unit: second\n      requests_per_unit: 1\n")
	out.Reset()
	if err := run(context.Background(), []string{"-check", "-config", split}, noEnv, &out, nil); !errors.As(err, &exit) || exit != 1 || !strings.Contains(out.String(), "a.yaml") {
		t.Fatalf("a split domain: %v\n%s", err, &out)
	}
	out.Reset()
	if err := run(context.Background(), []string{"-check", "-merge-domains", "-config", split}, noEnv, &out, nil); err != nil || !strings.Contains(out.String(), "1 domain, 2 rules: OK") {
		t.Fatalf("a split domain, merged: %v\n%s", err, &out)
	}
	for _, args := range [][]string{{"-check"}, {"-failure", "sometimes"}, {"-headers", "loud"}, {"extra"}, {"-grace", "0s"}} {
		out.Reset()
		if err := run(context.Background(), args, noEnv, &out, nil); !errors.As(err, &exit) || exit != 2 {
			t.Fatalf("%v: %v\n%s", args, err, &out)
		}
	}
}

// TestCheckStore: -check checks each rule against the store the flags
// select: a year of sliding window is fine in memory but not on Redis
// (checked without a connection), where it keeps its file out, at its
// line; a year of fixed window, the default, is fine on both.
func TestCheckStore(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.yaml", "domain: a\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: year\n      requests_per_unit: 5\n")
	write(t, dir, "b.yaml", "domain: b\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: year\n      requests_per_unit: 5\n      algorithm: sliding-window\n")
	var out strings.Builder
	if err := run(context.Background(), []string{"-check", "-config", dir}, noEnv, &out, nil); err != nil || !strings.Contains(out.String(), "2 domains, 2 rules: OK") {
		t.Fatalf("in memory: %v\n%s", err, &out)
	}
	out.Reset()
	err := run(context.Background(), []string{"-check", "-config", dir, "-redis", "127.0.0.1:1"}, noEnv, &out, nil)
	var exit exitCode
	want := filepath.Join(dir, "b.yaml") + ":5: descriptors[0].rate_limit: rls: the store cannot enforce this rule: redisstore: limit 5/8760h0m0s"
	if !errors.As(err, &exit) || exit != 1 || !strings.HasPrefix(out.String(), want) || !strings.Contains(out.String(), "use core.FixedWindow") || strings.Count(out.String(), "\n") != 1 {
		t.Fatalf("on Redis: %v\n%s\nwant one error: %s...", err, &out, want)
	}
}

// TestRedisYear: on Redis, a year's fixed window is enforced, and a file
// whose rule the store refuses is kept out, logged at its line, while the
// rest of the configuration serves (it once left the service NOT_SERVING,
// every limit off behind Envoy's failure_mode_deny: false).
func TestRedisYear(t *testing.T) {
	srv := redistest.Start(t)
	dir := t.TempDir()
	write(t, dir, "a.yaml", "domain: a\ndescriptors:\n  - key: user\n    rate_limit:\n      unit: year\n      requests_per_unit: 2\n")
	write(t, dir, "b.yaml", "domain: b\ndescriptors:\n  - key: user\n    rate_limit:\n      unit: year\n      requests_per_unit: 2\n      algorithm: gcra\n")
	s := start(t, "-config", dir, "-redis", srv.Addr())
	hc := healthpb.NewHealthClient(s.conn)
	// SERVING once Redis answers a PING, as the configuration is in force.
	waitFor(t, "SERVING", func() bool {
		r, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{})
		return err == nil && r.GetStatus() == healthpb.HealthCheckResponse_SERVING
	})
	for i, want := range []string{"OK", "OK", "OVER_LIMIT"} {
		r := s.ask("a", 0, desc("user=u"))
		if got := r.GetOverallCode().String(); got != want {
			t.Fatalf("call %d: %v, want %s", i, r, want)
		}
		if i == 2 {
			// Within the year.
			reset := r.GetStatuses()[0].GetDurationUntilReset().AsDuration()
			if reset <= 0 || reset > 365*24*time.Hour {
				t.Fatalf("reset %v", reset)
			}
		}
	}
	if r := s.ask("b", 0, desc("user=u")); r.GetOverallCode() != rlsv3.RateLimitResponse_OK || len(r.GetStatuses()) != 1 || r.GetStatuses()[0].GetCurrentLimit() != nil {
		t.Fatalf("b's domain is kept out, so unlimited: %v", r)
	}
	if log := s.out.String(); !strings.Contains(log, filepath.Join(dir, "b.yaml")+":5: descriptors[0].rate_limit: rls: the store cannot enforce this rule") {
		t.Fatalf("b.yaml's error not logged at its line:\n%s", log)
	}
}

// TestReloadUnderTraffic changes the limit while calls go on: no call
// fails, the new limit takes effect, and a bad file keeps the good one.
func TestReloadUnderTraffic(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "d.yaml", strings.ReplaceAll(perMinute, "%N%", "1000000"))
	s := start(t, "-config", dir)
	var failed atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, err := s.rls.ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "d", Descriptors: []*rlcommon.RateLimitDescriptor{desc("user=u" + string(rune('a'+g)))}})
				cancel()
				if err != nil {
					failed.Add(1)
				}
			}
		}()
	}
	write(t, dir, "d.yaml", strings.ReplaceAll(perMinute, "%N%", "3"))
	waitFor(t, "the new limit", func() bool {
		r := s.ask("d", 0, desc("user=fresh"))
		return r.GetStatuses()[0].GetCurrentLimit().GetRequestsPerUnit() == 3
	})
	write(t, dir, "d.yaml", "domain: d\ndescriptors: [oops")
	waitFor(t, "the bad file reported", func() bool {
		return strings.Contains(s.out.String(), "d.yaml") && strings.Contains(s.out.String(), "level=ERROR")
	})
	if r := s.ask("d", 0, desc("user=other")); r.GetStatuses()[0].GetCurrentLimit().GetRequestsPerUnit() != 3 {
		t.Fatalf("after a bad file: %v", r)
	}
	stop.Store(true)
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d calls failed during the reloads", n)
	}
}

// waitFor polls cond for up to 30 s: file events reach the watcher in
// their own time.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30 s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRedis runs the service on Redis, then kills Redis under load: every
// call is answered as the failure mode says, none fails.
func TestRedis(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"closed", "open"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			dir := t.TempDir()
			write(t, dir, "d.yaml", strings.ReplaceAll(perMinute, "%N%", "2"))
			s := start(t, "-config", dir, "-redis", srv.Addr(), "-failure", mode)
			codes := func() string {
				r := s.ask("d", 0, desc("user=a"))
				return r.GetOverallCode().String()
			}
			for i, want := range []string{"OK", "OK", "OVER_LIMIT"} {
				if got := codes(); got != want {
					t.Fatalf("call %d: %s, want %s", i, got, want)
				}
			}
			// Kill Redis while 8 callers run: none of them gets an error.
			var failed atomic.Int64
			var stop atomic.Bool
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for !stop.Load() {
						ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
						_, err := s.rls.ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "d", Descriptors: []*rlcommon.RateLimitDescriptor{desc("user=load" + string(rune('a'+g)))}})
						cancel()
						if err != nil {
							failed.Add(1)
						}
					}
				}()
			}
			time.Sleep(50 * time.Millisecond) // bounded: let the load reach Redis before the kill
			srv.Kill()
			time.Sleep(50 * time.Millisecond)
			stop.Store(true)
			wg.Wait()
			if n := failed.Load(); n > 0 {
				t.Fatalf("%d calls failed while Redis died", n)
			}
			want := map[string]string{"closed": "OVER_LIMIT", "open": "OK"}[mode]
			for i := range 20 {
				r := s.ask("d", 0, desc("user=b"))
				if got := r.GetOverallCode().String(); got != want {
					t.Fatalf("call %d with Redis down: %s, want %s", i, got, want)
				}
			}
			if m := get(t, "http://"+s.addrs.http+"/metrics"); !strings.Contains(m, `outcome="store_error"`) {
				t.Fatalf("store errors not in the metrics:\n%s", m)
			}
		})
	}
}
