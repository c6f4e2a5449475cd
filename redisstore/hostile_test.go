package redisstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/redisstore"
)

// allBytes is one key holding every byte from 0x00 to 0xff, in order.
var allBytes = func() string {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return string(b)
}()

// hostileKeys are keys a client can send that a naive "{" + key + "}"
// would turn into an empty or moved hash tag, or that an encoding could
// confuse with each other, and a few ordinary ones.
var hostileKeys = []string{
	"}x", "{", "}", "}{", "{}", "{{}}", "}}", "a}b{c", "x{", "{x}",
	"", "%", "%%", "%7B", "%7b", "%7D", "%25", "%2525", "%7B%7D", "a%7Bb", "a{b", "ab",
	"\x00", "\r\n", "\xff\xfe", allBytes,
	strings.Repeat("}{", 512),           // 1 KiB
	strings.Repeat("{", 8<<10),          // 8 KiB, 24 KiB once encoded
	"floodgate:{x}:tb:5/60000000000:5}", // looks like a Redis key
	"203.0.113.7", "2001:db8:1:2::/64", "tenant-7",
}

// keyName names a key in a subtest: long keys by their length.
func keyName(k string) string {
	if len(k) > 40 {
		return fmt.Sprintf("%d-bytes", len(k))
	}
	return fmt.Sprintf("%q", k)
}

// hostileServers runs play against a one-node Cluster, which refuses keys
// of different slots in one script (CROSSSLOT) as three masters do, and
// against a single server.
func hostileServers(t *testing.T, play func(t *testing.T, c redis.UniversalClient)) {
	t.Run("cluster", func(t *testing.T) {
		t.Parallel()
		cl := redistest.StartCluster(t, redistest.WithMasters(1))
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), ContextTimeoutEnabled: true})
		t.Cleanup(func() { c.Close() })
		play(t, c)
	})
	t.Run("single", func(t *testing.T) {
		t.Parallel()
		s := redistest.Start(t)
		c := redis.NewClient(&redis.Options{Addr: s.Addr(), ContextTimeoutEnabled: true})
		t.Cleanup(func() { c.Close() })
		play(t, c)
	})
}

// hostileLimiter is a limiter under test and how to read its breaker.
type hostileLimiter struct {
	name    string
	lim     core.Limiter
	breaker func() core.Health
	refund  bool // Refund gives a unit back (not to a concurrency Limiter)
}

// release releases the leases (the zero ones release nothing).
func release(t *testing.T, leases []core.Lease) {
	t.Helper()
	for _, ls := range leases {
		if err := ls.Release(context.Background()); err != nil {
			t.Fatalf("release: %v", err)
		}
	}
}

// hostileLimiters returns limiters of 5 per minute (5 in flight for the
// concurrency ones), each under its own prefix (prefix, then its name), deciding at clk's time
// with no deny cache, so that every call goes to Redis.
func hostileLimiters(t *testing.T, c redis.UniversalClient, clk *coretest.Clock, prefix string) []hostileLimiter {
	t.Helper()
	l := core.PerMinute(5)
	opts := func(name string) []redisstore.Option {
		return []redisstore.Option{redisstore.WithPrefix(prefix + name), redisstore.WithScriptClock(clk),
			redisstore.WithDenyCache(0), redisstore.WithTimeout(5 * time.Second)}
	}
	lim := must(redisstore.New(c, l, opts("lim:")...))
	stack := must(redisstore.NewStack(c, []core.Limit{
		l,
		core.PerHour(100).WithAlgorithm(core.FixedWindow),
	}, opts("stack:")...))
	leased := must(redisstore.NewStack(c, []core.Limit{
		l.WithAlgorithm(core.GCRA),
		core.InFlight(10),
	}, opts("leased:")...))
	dyn := must(redisstore.NewDynamic(c, func(string) core.Limit { return l }, opts("dyn:")...))
	cc := must(redisstore.New(c, core.InFlight(5), opts("cc:")...))
	return []hostileLimiter{
		{"limiter", lim, lim.Health, true},
		{"stack", stack, stack.Health, true},
		{"stack-concurrency", leased, leased.Health, true},
		{"dynamic", dyn, dyn.Health, true},
		{"concurrency", cc, cc.Health, false},
	}
}

// TestHostileKeys: every key a client can send, braces, percent signs,
// empty, every byte, 8 KiB, is limited exactly (5 of 50 admitted under
// 5/min, a refund or release gives one back) through a Limiter, a Stack
// of two layers, a Stack with a concurrency layer, a Dynamic and a
// concurrency Limiter, on a Cluster and on a single server: no call fails
// (no CROSSSLOT), and no breaker moves, neither under calls in a row past
// its threshold nor after them all, so another client's key is decided.
func TestHostileKeys(t *testing.T) {
	t.Parallel()
	hostileServers(t, func(t *testing.T, c redis.UniversalClient) {
		clk := coretest.NewClock(coretest.T0)
		lims := hostileLimiters(t, c, clk, "")
		ctx := context.Background()
		t.Run("breaker", func(t *testing.T) {
			// Calls in a row, as one client sends them: more than the
			// breaker's minimum of calls, each decided, and then another
			// client's key still is.
			stack := hostileLimiters(t, c, clk, "breaker:")[1]
			for _, key := range []string{"}x", "", "}{"} {
				for i := range 2 * redisstore.DefaultBreakerMinCalls {
					if _, err := stack.lim.Allow(ctx, key, 1); err != nil {
						t.Errorf("key %q, call %d: %v", key, i+1, err)
					}
				}
			}
			if s := stack.breaker().Breaker; s != "closed" {
				t.Errorf("breaker %v, want closed", s)
			}
			if d, err := stack.lim.Allow(ctx, "another-client", 1); err != nil || !d.Allowed {
				t.Errorf("another client's key: %+v %v; want an admission", d, err)
			}
		})
		t.Run("keys", func(t *testing.T) {
			for _, hl := range lims {
				for _, key := range hostileKeys {
					t.Run(hl.name+"/"+keyName(key), func(t *testing.T) {
						t.Parallel()
						var held []core.Lease
						admitted := 0
						for i := range 50 {
							d, err := hl.lim.Allow(ctx, key, 1)
							if err != nil {
								t.Fatalf("call %d: %v", i+1, err)
							}
							if d.Allowed {
								admitted++
								held = append(held, d.Lease)
							}
						}
						if admitted != 5 {
							t.Errorf("admitted %d of 50, want exactly 5", admitted)
						}
						// A refund gives a unit back to every layer; a
						// concurrency limiter alone is given it back by
						// a release.
						if hl.refund {
							if err := hl.lim.Refund(ctx, key, 1); err != nil {
								t.Fatalf("refund: %v", err)
							}
						} else {
							release(t, held)
							held = nil
						}
						d, err := hl.lim.Allow(ctx, key, 1)
						if err != nil || !d.Allowed {
							t.Errorf("after giving one back: %+v %v; want one admission", d, err)
						}
						release(t, append(held, d.Lease))
					})
				}
			}
		})
		for _, hl := range lims {
			if hl.breaker != nil {
				if s := hl.breaker().Breaker; s != "closed" {
					t.Errorf("%s: breaker %v after the hostile keys, want closed", hl.name, s)
				}
			}
			if d, err := hl.lim.Allow(ctx, "ordinary", 1); err != nil || !d.Allowed {
				t.Errorf("%s: an ordinary key after the hostile keys: %+v %v", hl.name, d, err)
			}
		}
	})
}

// TestHostileKeysDistinct: distinct keys never share state, those an
// encoding could confuse above all ('{' and "%7B", "" and '%', braces and
// no braces): draining each key in turn, through a Stack and a Limiter,
// leaves every other key whole. Their Redis keys differ too.
func TestHostileKeysDistinct(t *testing.T) {
	t.Parallel()
	hostileServers(t, func(t *testing.T, c redis.UniversalClient) {
		clk := coretest.NewClock(coretest.T0)
		ctx := context.Background()
		lims := hostileLimiters(t, c, clk, "")[:2]
		for _, hl := range lims {
			t.Run(hl.name, func(t *testing.T) {
				seen := map[string]string{}
				for _, key := range hostileKeys {
					var rkeys []string
					switch lim := hl.lim.(type) {
					case *redisstore.Limiter:
						rkeys = []string{lim.Key(key)}
					case *redisstore.Stack:
						rkeys = lim.Keys(key)
					}
					for _, rk := range rkeys {
						if other, ok := seen[rk]; ok {
							t.Errorf("keys %s and %s share the Redis key %q", keyName(other), keyName(key), rk)
						}
						seen[rk] = key
					}
					for i := range 6 {
						d, err := hl.lim.Allow(ctx, key, 1)
						if err != nil {
							t.Fatalf("key %s, call %d: %v", keyName(key), i+1, err)
						}
						if want := i < 5; d.Allowed != want || (want && d.Remaining != 4-i) {
							t.Errorf("key %s, call %d: allowed %v remaining %d; want allowed %v remaining %d (a fresh key: no other key's state)",
								keyName(key), i+1, d.Allowed, d.Remaining, want, 4-i)
						}
					}
				}
			})
		}
	})
}
