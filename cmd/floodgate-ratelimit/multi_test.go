package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/types/known/wrapperspb"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/floodgate/floodgate/internal/redistest"
)

const threeRules = `domain: d
descriptors:
  - key: remote_address
    rate_limit:
      unit: second
      requests_per_unit: 1000
  - key: path
    rate_limit:
      name: path
      unit: minute
      requests_per_unit: 3
      limits:
        - unit: hour
          requests_per_unit: 100
  - key: user
    rate_limit:
      unit: minute
      requests_per_unit: 50
      algorithm: gcra
`

// commands returns how many commands clients sent the server, INFO's
// aside.
func commands(t *testing.T, c *redis.Client) int64 {
	t.Helper()
	reply, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	return redistest.ParseInfo(reply).ClientCalls(t)
}

// TestOneRoundTrip: on Redis, with -client-clock-windows false, a request
// of three descriptors, each under its own rule (one of them a stack of two
// limits), is one command, all or nothing, admitted or refused.
func TestOneRoundTrip(t *testing.T) {
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	dir := t.TempDir()
	write(t, dir, "d.yaml", threeRules)
	s := start(t, "-config", dir, "-redis", srv.Addr(), "-client-clock-windows", "false")
	healthy(t, s.addrs.http)
	ask := func() *rlsv3.RateLimitResponse {
		return s.ask("d", 0, desc("remote_address=10.0.0.1"), desc("path=/login"), desc("user=ann"))
	}
	ask() // loads the library
	for i, want := range []string{"OK", "OK", "OVER_LIMIT", "OVER_LIMIT"} {
		before := commands(t, c)
		r := ask()
		if n := commands(t, c) - before; n != 1 {
			t.Fatalf("request %d: %d Redis commands, want 1", i, n)
		}
		if got := r.GetOverallCode().String(); got != want {
			t.Fatalf("request %d: %v, want %s", i, r, want)
		}
	}
	// The refused requests charged nothing: the user has 50 - 3 left.
	r := s.ask("d", 0, desc("user=ann"))
	if got := r.GetStatuses()[0].GetLimitRemaining(); got != 50-3-1 {
		t.Fatalf("user after the requests: %d left, want %d", got, 50-3-1)
	}
}

// TestRoundTrips: on Redis, with -client-clock-windows false, a request's
// shadow descriptors are one more command (once it is admitted), the hits it gives back one, and a request
// a deny-all rule names none; rules in quota mode are in the request's one
// command.
func TestRoundTrips(t *testing.T) {
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	dir := t.TempDir()
	write(t, dir, "d.yaml", `domain: d
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 5}
  - key: beta
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: tenant
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 10}
  - key: blocked
    rate_limit: {unit: minute, requests_per_unit: 0}
  - key: q
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 10}
`)
	s := start(t, "-config", dir, "-redis", srv.Addr(), "-client-clock-windows", "false")
	healthy(t, s.addrs.http)
	// Load the Multi's library, and the limiters' (a shadow descriptor
	// decided alone when another refuses).
	for range 2 {
		s.ask("d", 0, desc("user=warm"), desc("beta=warm"), desc("tenant=warm"))
	}
	back := desc("user=ann")
	back.HitsAddend, back.IsNegativeHits = wrapperspb.UInt64(1), true
	for _, row := range []struct {
		name     string
		ds       []*rlcommon.RateLimitDescriptor
		want     string
		commands int64
	}{
		{"enforced and two shadow", []*rlcommon.RateLimitDescriptor{desc("user=ann"), desc("beta=x"), desc("tenant=t")}, "OK OK/4 OK/0 OK/9", 2},
		// beta is spent: the shadow call refuses, tenant goes alone.
		{"a shadow refusing", []*rlcommon.RateLimitDescriptor{desc("user=ann"), desc("beta=x"), desc("tenant=t")}, "OK OK/3 OK/0 OK/8", 3},
		{"blocked", []*rlcommon.RateLimitDescriptor{desc("blocked=1"), desc("user=ann"), desc("tenant=t")}, "OVER_LIMIT OVER_LIMIT/0 OK/0 OK/0", 0},
		{"hits given back", []*rlcommon.RateLimitDescriptor{back}, "OK OK/0", 1},
		{"after", []*rlcommon.RateLimitDescriptor{desc("user=ann"), desc("tenant=t")}, "OK OK/3 OK/7", 2},
		{"quota mode", []*rlcommon.RateLimitDescriptor{desc("user=ann"), desc("q=1")}, "OK OK/2 OK/9", 1},
	} {
		before := commands(t, c)
		r := s.ask("d", 0, row.ds...)
		got := []string{r.GetOverallCode().String()}
		for _, st := range r.GetStatuses() {
			got = append(got, st.GetCode().String()+"/"+strconv.Itoa(int(st.GetLimitRemaining())))
		}
		if n := commands(t, c) - before; strings.Join(got, " ") != row.want || n != row.commands {
			t.Fatalf("%s: %s after %d Redis commands, want %s after %d", row.name, strings.Join(got, " "), n, row.want, row.commands)
		}
	}
}

// TestReplacesEndToEnd: a rule's replaces list, through the gRPC client, in
// memory and on Redis (envoyproxy/ratelimit's README, Example 7, in hours
// so that no window ends during the test): alone, the specific limit
// applies; with the replacing descriptor in the same request, it alone
// does.
func TestReplacesEndToEnd(t *testing.T) {
	const config = `domain: d
descriptors:
  - key: key_1
    value: value_1
    descriptors:
      - key: user
        rate_limit: {name: specific_limit, unit: hour, requests_per_unit: 2}
  - key: key_2
    value: value_2
    descriptors:
      - key: user
        rate_limit:
          replaces: [{name: specific_limit}]
          unit: hour
          requests_per_unit: 4
`
	srv := redistest.Start(t)
	for _, store := range []string{"memory", "redis"} {
		t.Run(store, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "d.yaml", config)
			args := []string{"-config", dir}
			if store == "redis" {
				args = append(args, "-redis", srv.Addr())
			}
			s := start(t, args...)
			codes := func(ds ...*rlcommon.RateLimitDescriptor) string {
				r := s.ask("d", 0, ds...)
				out := []string{r.GetOverallCode().String()}
				for _, st := range r.GetStatuses() {
					out = append(out, fmt.Sprintf("%s/%d/%d", st.GetCode(), st.GetCurrentLimit().GetRequestsPerUnit(), st.GetLimitRemaining()))
				}
				return strings.Join(out, " ")
			}
			user := store + "-bob"
			alone := desc("key_1=value_1", "user="+user)
			for i, want := range []string{"OK OK/2/1", "OK OK/2/0", "OVER_LIMIT OVER_LIMIT/2/0"} {
				if got := codes(alone); got != want {
					t.Fatalf("specific alone, %d: %s, want %s", i, got, want)
				}
			}
			// Together: the specific limit (spent) is replaced, so it neither
			// refuses nor is charged; the replacing one allows 4.
			user = store + "-ann"
			both := []*rlcommon.RateLimitDescriptor{desc("key_1=value_1", "user="+user), desc("key_2=value_2", "user="+user)}
			for i := range 4 {
				if got, want := codes(both...), fmt.Sprintf("OK OK/0/0 OK/4/%d", 3-i); got != want {
					t.Fatalf("together, %d: %s, want %s", i, got, want)
				}
			}
			if got, want := codes(both...), "OVER_LIMIT OK/0/0 OVER_LIMIT/4/0"; got != want {
				t.Fatalf("together, the fifth: %s, want %s", got, want)
			}
			// The specific limit was never charged while replaced.
			if got := codes(desc("key_1=value_1", "user="+user)); got != "OK OK/2/1" {
				t.Fatalf("specific after the replaced requests: %s, want OK OK/2/1", got)
			}
		})
	}
}
