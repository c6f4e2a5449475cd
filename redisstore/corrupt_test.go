package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/redisstore"
)

// Stored seconds relative to coretest.T0, where the corrupt-state tests'
// script clock stands.
var (
	t0s     = coretest.T0.Unix()
	ahead10 = fmt.Sprint(t0s + 10)            // ten seconds ahead: beyond every span below
	ahead11 = fmt.Sprint(t0s + 1_000_000)     // 11.6 days ahead, within the scripts' exact range
	ahead31 = fmt.Sprint(t0s + 1_000_000_000) // 31.7 years ahead (issue 18's warm-up report)
	huge    = "1" + strings.Repeat("0", 40)   // seconds no double holds exactly
)

// writeFunc puts a corrupt state at key with a plain client, bypassing the
// scripts.
type writeFunc func(ctx context.Context, c redis.UniversalClient, key string) error

// str writes a string state, without a TTL (as a manual SET does).
func str(v string) writeFunc {
	return func(ctx context.Context, c redis.UniversalClient, key string) error {
		return c.Set(ctx, key, v, 0).Err()
	}
}

// zset writes a sorted set from member, score pairs, without a TTL.
func zset(pairs ...any) writeFunc {
	return func(ctx context.Context, c redis.UniversalClient, key string) error {
		var zs []redis.Z
		for i := 0; i < len(pairs); i += 2 {
			zs = append(zs, redis.Z{Member: pairs[i], Score: pairs[i+1].(float64)})
		}
		return c.ZAdd(ctx, key, zs...).Err()
	}
}

// hash writes a key of the wrong Redis type for every algorithm.
func hash(ctx context.Context, c redis.UniversalClient, key string) error {
	return c.HSet(ctx, key, "tokens", "3").Err()
}

// corrupt is one corrupt state and what a decision on it must be: a store
// error (bad), or a decision within the algorithm's bound whose key's TTL
// is within the bound plus the margin; refused says the state counts the
// quota spent, so that admitting would be a fresh quota, and that waiting
// the RetryAfter (or, for a lease, its TTL) then admits.
type corrupt struct {
	name    string
	write   writeFunc
	bad     bool
	refused bool
}

// bad is a state that must be a store error.
func bad(name string, w writeFunc) corrupt { return corrupt{name: name, write: w, bad: true} }

// spent is a state read in range that counts the quota spent.
func spent(name string, w writeFunc) corrupt { return corrupt{name: name, write: w, refused: true} }

// corruptTables are the corrupt states of every algorithm. bound is the
// longest RetryAfter and ResetAfter the algorithm gives for any state its
// own limit writes: its span, two periods for the sliding-window counter,
// the longest wait plus Burst × interval for the leaky bucket, a cold
// request of the whole burst plus the warm-up period for warm-up.
func corruptTables() []struct {
	name  string
	limit core.Limit
	opts  []redisstore.Option
	bound time.Duration
	cases []corrupt
} {
	l := core.PerSecond(10).WithBurst(3) // one per 100ms, a span of 300ms
	win := core.PerSecond(3)             // windows of 1s
	const lease = time.Minute
	// The string states' common corruptions, given the state's fields
	// after the instant.
	instants := func(pre, post string) []corrupt {
		return []corrupt{
			bad("nanoseconds out of range", str(pre+fmt.Sprint(t0s)+" 1000000000"+post)),
			bad("garbage", str("garbage")),
			bad("empty", str("")),
			bad("field missing", str(strings.TrimSpace(pre+fmt.Sprint(t0s)))),
			bad("field too many", str(pre+fmt.Sprint(t0s)+" 0"+post+" 7")),
			bad("NaN instant", str(pre+"nan 0"+post)),
			bad("wrong type", hash),
			spent("10s ahead", str(pre+ahead10+" 0"+post)),
			spent("11 days ahead", str(pre+ahead11+" 0"+post)),
			spent("31 years ahead", str(pre+ahead31+" 0"+post)),
			spent("1e40 s ahead", str(pre+huge+" 0"+post)),
		}
	}
	type table = struct {
		name  string
		limit core.Limit
		opts  []redisstore.Option
		bound time.Duration
		cases []corrupt
	}
	return []table{
		{"token-bucket", l, nil, 300 * time.Millisecond, append(instants("0 ", ""),
			bad("NaN tokens", str("nan "+fmt.Sprint(t0s)+" 0")),
			bad("infinite tokens", str("inf "+fmt.Sprint(t0s)+" 0")),
			bad("tokens in debt beyond any burst", str("-1e300 "+fmt.Sprint(t0s)+" 0")),
			corrupt{name: "huge tokens", write: str("1e300 " + ahead31 + " 0")})},
		{"gcra", l.WithAlgorithm(core.GCRA), nil, 300 * time.Millisecond,
			append(instants("", ""), bad("negative nanoseconds", str(fmt.Sprint(t0s)+" -1")))},
		{"fixed-window", win.WithAlgorithm(core.FixedWindow), nil, time.Second, append(instants("", " 3"),
			bad("negative count", str(fmt.Sprint(t0s)+" 0 -1")),
			bad("count from 2^31", str(fmt.Sprint(t0s)+" 0 2147483648")),
			corrupt{name: "huge count now", write: str(fmt.Sprint(t0s) + " 0 2147483647"), refused: true})},
		{"sliding-window", win.WithAlgorithm(core.SlidingWindow), nil, 2 * time.Second, append(instants("", " 0 3"),
			bad("negative count", str(fmt.Sprint(t0s)+" 0 -1 3")),
			bad("count from 2^31", str(fmt.Sprint(t0s)+" 0 2147483648 3")),
			bad("NaN count", str(fmt.Sprint(t0s)+" 0 0 nan")))},
		{"sub-windows", win.WithSubWindows(4), nil, time.Second,
			append(instants("", " 0:3"),
				bad("zero cost", str(fmt.Sprint(t0s)+" 0 0:0")),
				bad("cost from 2^31", str(fmt.Sprint(t0s)+" 0 0:2147483648")),
				bad("newest not last", str(fmt.Sprint(t0s)+" 0 1:3")),
				bad("out of order", str(fmt.Sprint(t0s)+" 0 0:1 1:1")),
				spent("31 years ahead, older ones too", str(ahead31+" 0 3:1 1:1 0:1")))},
		{"sliding-log", win.WithAlgorithm(core.SlidingLog), nil, time.Second, []corrupt{
			bad("wrong type", str("x")),
			bad("no sum", zset(fmt.Sprint(t0s)+" 000000000:3", float64(t0s))),
			bad("negative sum", zset("sum", 5.0, fmt.Sprint(t0s)+" 000000000:3", float64(t0s))),
			bad("fractional sum", zset("sum", -4.5, fmt.Sprint(t0s)+" 000000000:3", float64(t0s))),
			bad("garbage entry", zset("sum", -4.0, "garbage", float64(t0s))),
			bad("zero cost", zset("sum", -4.0, fmt.Sprint(t0s)+" 000000000:0", float64(t0s))),
			bad("score not its second", zset("sum", -4.0, fmt.Sprint(t0s)+" 000000000:3", float64(t0s+1))),
			spent("10s ahead", zset("sum", -4.0, ahead10+" 000000000:3", float64(t0s+10))),
			spent("31 years ahead", zset("sum", -4.0, ahead31+" 000000000:3", float64(t0s+1_000_000_000))),
			spent("31 years ahead, one now", zset("sum", -4.0, fmt.Sprint(t0s)+" 000000000:1", float64(t0s),
				ahead11+" 000000000:1", float64(t0s+1_000_000), ahead31+" 000000000:1", float64(t0s+1_000_000_000))),
		}},
		{"leaky-bucket", l.WithMaxDelay(200 * time.Millisecond), nil,
			500 * time.Millisecond, instants("", "")},
		{"warm-up", l.WithWarmUp(time.Second, 3), nil,
			900*time.Millisecond + time.Second, append(instants("0 ", ""),
				bad("NaN permits", str("nan "+fmt.Sprint(t0s)+" 0")),
				bad("negative permits", str("-1 "+fmt.Sprint(t0s)+" 0")),
				bad("infinite permits", str("1e999 "+fmt.Sprint(t0s)+" 0")),
				corrupt{name: "huge permits", write: str("1e300 " + ahead31 + " 0")})},
		{"concurrency", core.InFlight(2), []redisstore.Option{redisstore.WithLeaseTTL(lease)},
			lease, []corrupt{
				bad("wrong type", str("x")),
				bad("units held negative", zset("#", 1.0)),
				bad("units held fractional", zset("#", -1.5)),
				bad("units held infinite", zset("#", -1/zero)),
				bad("expired lease garbage", zset("#", -2.0, "garbage", 1.0)),
				spent("lease 31 years ahead", zset("#", -2.0, "2:x", float64(t0s+1_000_000_000)*1e6)),
				spent("lease 1e40 s ahead", zset("#", -2.0, "2:x", 1e46)),
				spent("lease forever", zset("#", -2.0, "1:x", 1/zero, "1:y", float64(t0s)*1e6+float64(lease/time.Microsecond)+1)),
			}},
	}
}

var zero = 0.0

// TestCorruptStates: for every algorithm, states written into its key by
// hand (a bug, a restore, an operator, a server clock stepped back): a
// state that cannot be read is a store error and admits nothing; an
// instant far ahead (seconds, days, years, beyond a double's precision)
// gives a decision, never a fresh quota, whose RetryAfter and ResetAfter
// are within what the limit gives on its own and whose key lives no
// longer than that plus the TTL margin; and waiting the RetryAfter then
// admits, the state having been written back in range (issue 18's defect
// 6: warm-up gave a 31-year RetryAfter and TTL).
func TestCorruptStates(t *testing.T) {
	t.Parallel()
	c := single(t)
	ctx := context.Background()
	const margin = time.Second
	for _, tab := range corruptTables() {
		t.Run(tab.name, func(t *testing.T) {
			for i, tc := range tab.cases {
				clk := coretest.NewClock(coretest.T0)
				var r renewals
				lim, err := redisstore.New(c, tab.limit, append(tab.opts, redisstore.WithPrefix(fmt.Sprintf("corrupt%d:", i)),
					redisstore.WithClock(clk), redisstore.WithScriptClock(clk), redisstore.WithBreaker(redisstore.BreakerConfig{}), redisstore.WithDenyCache(0),
					redisstore.WithTTLMargin(margin), redisstore.WithTimeout(5*time.Second), redisstore.WithAfterFunc(r.after))...)
				if err != nil {
					t.Fatal(err)
				}
				key := lim.Key("k")
				if err := tc.write(ctx, c, key); err != nil {
					t.Fatalf("%s: writing: %v", tc.name, err)
				}
				d, err := lim.Allow(ctx, "k", 1)
				if tc.bad {
					var se *core.StoreError
					if !errors.As(err, &se) || d.Allowed {
						t.Errorf("%s: %+v %v, want a *core.StoreError", tc.name, d, err)
					}
					if err := lim.Refund(ctx, "k", 1); !errors.Is(err, core.ErrStore) {
						t.Errorf("%s: refund %v, want a store error", tc.name, err)
					}
					continue
				}
				if err != nil {
					t.Errorf("%s: %v, want a decision", tc.name, err)
					continue
				}
				// A millisecond for rounding (warm-up's cool-down is rounded up).
				if limit := tab.bound + time.Millisecond; d.RetryAfter > limit || d.ResetAfter > limit || d.RetryAfter < 0 || d.ResetAfter < 0 {
					t.Errorf("%s: %+v: a wait beyond %v", tc.name, d, tab.bound)
				}
				if ttl := c.PTTL(ctx, key).Val(); ttl > tab.bound+margin+time.Millisecond || ttl == -1 {
					t.Errorf("%s: key TTL %v, want at most %v", tc.name, ttl, tab.bound+margin+time.Millisecond)
				}
				if !tc.refused {
					continue
				}
				if d.Allowed {
					t.Errorf("%s: %+v: a fresh quota", tc.name, d)
					continue
				}
				wait := d.RetryAfter
				if tab.limit == core.InFlight(2) {
					wait = tab.bound // a lease's units come back when it expires
				}
				clk.Advance(wait)
				if d, err := lim.Allow(ctx, "k", 1); err != nil || !d.Allowed {
					t.Errorf("%s: after the RetryAfter (%v): %+v %v, want an admission", tc.name, wait, d, err)
				} else if !d.Lease.IsZero() {
					_ = d.Lease.Release(ctx)
				}
			}
		})
	}
}

// TestCorruptStateInStack: a stack's layer holding a state far ahead is
// read at its lead like a Limiter's, and the repair is made although the
// stack refuses (a stack makes no charge then), so that waiting the
// RetryAfter admits; the layer that admitted is not charged.
func TestCorruptStateInStack(t *testing.T) {
	t.Parallel()
	c := single(t)
	ctx := context.Background()
	clk := coretest.NewClock(coretest.T0)
	s, err := redisstore.NewStack(c, []core.Limit{
		core.PerSecond(10).WithBurst(3).WithName("gcra").WithAlgorithm(core.GCRA),
		core.PerMinute(100).WithName("tb"),
	}, redisstore.WithClock(clk), redisstore.WithScriptClock(clk), redisstore.WithPrefix("corruptstack:"),
		redisstore.WithDenyCache(0), redisstore.WithBreaker(redisstore.BreakerConfig{}), redisstore.WithTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	keys := s.Keys("k")
	if err := c.Set(ctx, keys[0], ahead31+" 0", 0).Err(); err != nil {
		t.Fatal(err)
	}
	d, err := s.Allow(ctx, "k", 1)
	if err != nil || d.Allowed || d.Limit.Name != "gcra" || d.RetryAfter != 100*time.Millisecond || d.ResetAfter != 300*time.Millisecond {
		t.Fatalf("%+v %v, want refused by gcra, retry after 100ms, whole in 300ms", d, err)
	}
	if ttl := c.PTTL(ctx, keys[0]).Val(); ttl <= 0 || ttl > 300*time.Millisecond+redisstore.DefaultTTLMargin {
		t.Fatalf("gcra key TTL %v after the refusal, want the repair's", ttl)
	}
	if n := c.Exists(ctx, keys[1]).Val(); n != 0 {
		t.Fatal("the refused stack charged its token bucket")
	}
	clk.Advance(d.RetryAfter)
	if d, err := s.Allow(ctx, "k", 1); err != nil || !d.Allowed {
		t.Fatalf("after the RetryAfter: %+v %v, want an admission", d, err)
	}
}
