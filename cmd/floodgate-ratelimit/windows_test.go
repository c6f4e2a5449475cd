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

// TestClientClockWindowsService: by default the service charges a plain
// fixed window with INCRBY, no script, under a key that names the window;
// a refused request gives every charge back, and under upstream's
// charging (STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=false) every request
// counts, as upstream's INCRBYs do. A GCRA rule in the same request goes
// to the script, all or nothing with the windows.
func TestClientClockWindowsService(t *testing.T) {
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	root := runtimeRoot(t, `domain: d
descriptors:
  - key: a
    rate_limit: {unit: hour, requests_per_unit: 2}
  - key: b
    rate_limit: {unit: hour, requests_per_unit: 10}
  - key: g
    rate_limit: {unit: hour, requests_per_unit: 10, algorithm: gcra}
`)
	ctx := context.Background()
	calls := func(t *testing.T, names ...string) map[string]int64 {
		reply, err := c.Info(ctx, "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		stats := redistest.ParseInfo(reply).Commands(t)
		m := map[string]int64{}
		for _, n := range names {
			m[n] = stats[n].Calls
		}
		return m
	}
	// count returns the window count of the key whose name holds part.
	count := func(t *testing.T, part string) string {
		keys, err := c.Keys(ctx, "*"+part+"*:#*").Result()
		if len(keys) != 1 {
			all, _ := c.Keys(ctx, "*").Result()
			t.Logf("keys: %q", all)
		}
		if err != nil || len(keys) != 1 {
			t.Fatalf("window keys of %q: %v, %v; want one", part, keys, err)
		}
		if ttl := c.PTTL(ctx, keys[0]).Val(); ttl <= 0 || ttl > time.Hour+2*time.Second {
			t.Fatalf("%s: TTL %v, want at most the window and its margin", keys[0], ttl)
		}
		return c.Get(ctx, keys[0]).Val()
	}
	for _, tc := range []struct {
		name   string
		env    map[string]string
		wantA  string // a's count after three requests, the third refused
		wantB  string // b's
		decrby bool   // whether the refusal gives its charges back
	}{
		{name: "all or nothing", wantA: "2", wantB: "2", decrby: true},
		{name: "charge always", env: map[string]string{"STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT": "false"}, wantA: "3", wantB: "3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for attempt := 1; ; attempt++ {
				if err := c.FlushDB(ctx).Err(); err != nil {
					t.Fatal(err)
				}
				hour := time.Now().Unix() / 3600
				r := launch(t, upstreamEnv(srv.Addr(), root, tc.env))
				healthy(t, r.addrs.http)
				client := rlsv3.NewRateLimitServiceClient(dial(t, r.addrs.grpc, nil))
				ask := func(ds ...*rlcommon.RateLimitDescriptor) []string {
					t.Helper()
					ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
					defer cancel()
					resp, err := client.ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "d", Descriptors: ds})
					if err != nil {
						t.Fatal(err)
					}
					got := []string{resp.GetOverallCode().String()}
					for _, st := range resp.GetStatuses() {
						got = append(got, st.GetCode().String())
					}
					return got
				}
				before := calls(t, "incrby", "decrby", "evalsha", "fcall", "eval")
				var answers []string
				for range 3 {
					answers = append(answers, strings.Join(ask(desc("a=x"), desc("b=y")), " "))
				}
				after := calls(t, "incrby", "decrby", "evalsha", "fcall", "eval")
				a, b := count(t, "|a=x}"), count(t, "|b=y}")
				// A GCRA rule beside a window: the script and the pipeline,
				// and a refusal of the window takes the GCRA's charge back.
				mixed := strings.Join(ask(desc("a=x"), desc("g=z")), " ")
				gAnswer := strings.Join(ask(desc("g=z")), " ")
				_ = r.stop()
				if time.Now().Unix()/3600 != hour && attempt < 3 {
					continue // an hour ended: the answers are of two windows
				}
				want := "OK OK OK,OK OK OK,OVER_LIMIT OVER_LIMIT OK"
				if got := strings.Join(answers, ","); got != want {
					t.Fatalf("answers %s, want %s", got, want)
				}
				if a != tc.wantA || b != tc.wantB {
					t.Fatalf("window counts a %s, b %s; want %s and %s", a, b, tc.wantA, tc.wantB)
				}
				if n := after["incrby"] - before["incrby"]; n != 6 || after["evalsha"] != before["evalsha"] || after["fcall"] != before["fcall"] || after["eval"] != before["eval"] {
					t.Fatalf("the three requests ran %d INCRBY (want 6) and scripts (want none): %v → %v", n, before, after)
				}
				if n := after["decrby"] - before["decrby"]; n != map[bool]int64{true: 2}[tc.decrby] {
					t.Fatalf("the refused request ran %d DECRBY, want %d", n, map[bool]int64{true: 2}[tc.decrby])
				}
				if mixed != "OVER_LIMIT OVER_LIMIT OK" || gAnswer != "OK OK" {
					t.Fatalf("a refused window beside a GCRA: %q, then the GCRA alone %q", mixed, gAnswer)
				}
				return
			}
		})
	}
}

// TestClientClockWindowsSetting: -client-clock-windows and
// FLOODGATE_RLS_CLIENT_CLOCK_WINDOWS, on unless local quota is; both on is
// refused, and so is any other value; with the windows on, a rule's
// local_quota is a configuration error that says what to set.
func TestClientClockWindowsSetting(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		env     map[string]string
		windows bool
		refused string
	}{
		{windows: true},
		{args: []string{"-local-quota"}},
		{env: map[string]string{"FLOODGATE_RLS_LOCAL_QUOTA": "true"}},
		{env: map[string]string{"FLOODGATE_RLS_CLIENT_CLOCK_WINDOWS": "false"}},
		{args: []string{"-client-clock-windows", "false"}, env: map[string]string{"FLOODGATE_RLS_CLIENT_CLOCK_WINDOWS": "true"}},
		{args: []string{"-client-clock-windows", "TRUE"}, windows: true},
		{args: []string{"-client-clock-windows", "true", "-local-quota"}, refused: "cannot be combined"},
		{args: []string{"-client-clock-windows", "yes"}, refused: `-client-clock-windows "yes": use true or false`},
	} {
		var out strings.Builder
		s, err := parse(tc.args, &out, envOf(tc.env))
		switch {
		case tc.refused != "" && (err == nil || !strings.Contains(out.String(), tc.refused)):
			t.Errorf("%v %v: %v, wrote %q; want refused: %s", tc.args, tc.env, err, out.String(), tc.refused)
		case tc.refused == "" && err != nil:
			t.Errorf("%v %v: %v\n%s", tc.args, tc.env, err, out.String())
		case tc.refused == "" && s.store.windows != tc.windows:
			t.Errorf("%v %v: windows %v, want %v", tc.args, tc.env, s.store.windows, tc.windows)
		}
	}
	dir := t.TempDir()
	write(t, dir, "d.yaml", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: hour, requests_per_unit: 5, local_quota: true}\n")
	for _, tc := range []struct {
		args []string
		ok   bool
	}{
		{args: []string{"-check", "-config", dir, "-redis", "127.0.0.1:1"}},
		{args: []string{"-check", "-config", dir, "-redis", "127.0.0.1:1", "-client-clock-windows", "false"}, ok: true},
		{args: []string{"-check", "-config", dir}, ok: true}, // in memory: no windows to mind
	} {
		var out strings.Builder
		err := run(context.Background(), tc.args, envOf(nil), &out, nil)
		if tc.ok != (err == nil) || !tc.ok && !strings.Contains(out.String(), "local_quota: true needs -client-clock-windows false") {
			t.Errorf("%v: %v, wrote %q", tc.args, err, out.String())
		}
	}
}

// TestClientClockWindowsUpgrade: a window counted by the script (the keys
// of FLOODGATE_RLS_CLIENT_CLOCK_WINDOWS=false, every version's before) is
// not read by the client-clock windows: after the switch the window counts
// from zero, once, as the CHANGELOG says, while the old key keeps its TTL
// and expires with its window. Switched back, the script reads its key as
// it left it.
func TestClientClockWindowsUpgrade(t *testing.T) {
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	root := runtimeRoot(t, "domain: d\ndescriptors:\n  - key: user\n    rate_limit: {unit: hour, requests_per_unit: 3}\n")
	ctx := context.Background()
	// answers runs the service with windows set as given and asks n times.
	answers := func(windows string, n int) string {
		t.Helper()
		r := launch(t, upstreamEnv(srv.Addr(), root, map[string]string{"FLOODGATE_RLS_CLIENT_CLOCK_WINDOWS": windows}))
		defer func() { _ = r.stop() }()
		client := rlsv3.NewRateLimitServiceClient(dial(t, r.addrs.grpc, nil))
		var got []string
		for range n {
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			resp, err := client.ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "d", Descriptors: []*rlcommon.RateLimitDescriptor{desc("user=ann")}})
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, resp.GetOverallCode().String())
		}
		return strings.Join(got, " ")
	}
	for attempt := 1; ; attempt++ {
		if err := c.FlushDB(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		hour := time.Now().Unix() / 3600
		before := answers("false", 2)
		old, err := c.Keys(ctx, "*user=ann*").Result()
		if err != nil || len(old) != 1 {
			t.Fatalf("the script's keys: %q, %v; want one", old, err)
		}
		after := answers("true", 4)
		back := answers("false", 2)
		ttl := c.PTTL(ctx, old[0]).Val()
		if time.Now().Unix()/3600 != hour && attempt < 3 {
			continue // an hour ended: the answers are of two windows
		}
		if before != "OK OK" || after != "OK OK OK OVER_LIMIT" || back != "OK OVER_LIMIT" {
			t.Fatalf("before the switch %q, after it %q, switched back %q; want OK OK, then the window counted from zero (OK OK OK OVER_LIMIT), then the script's count as it was (OK OVER_LIMIT)", before, after, back)
		}
		if ttl <= 0 || ttl > time.Hour+2*time.Second {
			t.Fatalf("the script's key %s: TTL %v, want it to expire with its window", old[0], ttl)
		}
		return
	}
}
