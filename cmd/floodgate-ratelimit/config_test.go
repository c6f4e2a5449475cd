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
	if !strings.Contains(out.String(), "1 domains, 1 rules: OK") {
		t.Fatalf("output: %s", &out)
	}
	write(t, dir, "b.yaml", "domain: e\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: fortnight\n      requests_per_unit: 1\n")
	write(t, dir, "c.yaml", "domain: f\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: 1\n      algorithm: leaky-bucket\n")
	out.Reset()
	err := run(context.Background(), []string{"-check", "-config", dir}, noEnv, &out, nil)
	var exit exitCode
	if !errors.As(err, &exit) || exit != 1 {
		t.Fatalf("a bad directory: %v\n%s", err, &out)
	}
	for _, want := range []string{"b.yaml:5", "fortnight", "leaky"} {
		if !strings.Contains(strings.ToLower(out.String()), strings.ToLower(want)) {
			t.Fatalf("the errors lack %q:\n%s", want, &out)
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
	if err := run(context.Background(), []string{"-check", "-merge-domains", "-config", split}, noEnv, &out, nil); err != nil || !strings.Contains(out.String(), "1 domains, 2 rules: OK") {
		t.Fatalf("a split domain, merged: %v\n%s", err, &out)
	}
	for _, args := range [][]string{{"-check"}, {"-failure", "sometimes"}, {"-headers", "loud"}, {"extra"}, {"-grace", "0s"}} {
		out.Reset()
		if err := run(context.Background(), args, noEnv, &out, nil); !errors.As(err, &exit) || exit != 2 {
			t.Fatalf("%v: %v\n%s", args, err, &out)
		}
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
	for _, mode := range []string{"closed", "open"} {
		t.Run(mode, func(t *testing.T) {
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
			if m := get(t, "http://"+s.httpAddr+"/metrics"); !strings.Contains(m, `outcome="store_error"`) {
				t.Fatalf("store errors not in the metrics:\n%s", m)
			}
		})
	}
}
