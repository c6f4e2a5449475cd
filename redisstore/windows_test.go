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
	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/redisstore"
)

// TestWindowLogs: the sliding log and the sub-windows on Redis keep a TTL
// on every key they write, give a lost TTL back, refuse to decide on a
// state they cannot read, and fail at New where core.New fails.
func TestWindowLogs(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), ContextTimeoutEnabled: true})
	defer c.Close()
	ctx := context.Background()
	l := core.PerMinute(2)
	kinds := map[string]core.Limit{
		"log":         l.WithAlgorithm(core.SlidingLog),
		"sub-windows": l.WithSubWindows(6),
	}
	for name, l := range kinds {
		t.Run(name+"/ttl", func(t *testing.T) {
			lim := redisstore.MustNew(c, l, redisstore.WithDenyCache(0), redisstore.WithPrefix("ttl:"))
			for i, wantAllowed := range []bool{true, true, false} {
				d, err := lim.Allow(ctx, "a", 1)
				if err != nil || d.Allowed != wantAllowed {
					t.Fatalf("step %d: %+v %v", i, d, err)
				}
				ttl, err := c.PTTL(ctx, lim.Key("a")).Result()
				if err != nil {
					t.Fatal(err)
				}
				if ttl <= 0 || ttl > d.ResetAfter+redisstore.DefaultTTLMargin+time.Millisecond {
					t.Errorf("step %d: TTL %v after a decision resetting in %v", i, ttl, d.ResetAfter)
				}
				if err := c.Persist(ctx, lim.Key("a")).Err(); err != nil {
					t.Fatal(err)
				}
			}
			// Refunded to empty: the key is gone.
			if err := lim.Refund(ctx, "a", 2); err != nil {
				t.Fatal(err)
			}
			if n, _ := c.Exists(ctx, lim.Key("a")).Result(); n != 0 {
				t.Errorf("a refund to empty left the key")
			}
		})
	}
	// States that do not parse are errors, never a fresh quota.
	logLim := redisstore.MustNew(c, l.WithAlgorithm(core.SlidingLog), redisstore.WithPrefix("bad:"))
	subLim := redisstore.MustNew(c, l.WithAlgorithm(core.SlidingWindow).WithSubWindows(6), redisstore.WithPrefix("bad:"))
	bad := []struct {
		name  string
		lim   *redisstore.Limiter
		write func(key string) error
	}{
		{"log without sum", logLim, func(k string) error {
			return c.ZAdd(ctx, k, redis.Z{Score: 1_700_000_000, Member: "1700000000 000000000:1"}).Err()
		}},
		{"log member off its score", logLim, func(k string) error {
			now := time.Now().Unix()
			return c.ZAdd(ctx, k, redis.Z{Score: -2, Member: "sum"}, redis.Z{Score: float64(now), Member: fmt.Sprint(now+1, " 000000000:1")}).Err()
		}},
		{"log bad member", logLim, func(k string) error {
			return c.ZAdd(ctx, k, redis.Z{Score: -2, Member: "sum"}, redis.Z{Score: float64(time.Now().Unix()), Member: "x"}).Err()
		}},
		{"log sum beyond entries", logLim, func(k string) error { return c.ZAdd(ctx, k, redis.Z{Score: -2, Member: "sum"}).Err() }},
		{"log as a string", logLim, func(k string) error { return c.Set(ctx, k, "1 2", 0).Err() }},
		{"sub-windows garbage", subLim, func(k string) error { return c.Set(ctx, k, "not a state", 0).Err() }},
		{"sub-windows newest not last", subLim, func(k string) error { return c.Set(ctx, k, "1700000000 0 1:1", 0).Err() }},
		{"sub-windows out of order", subLim, func(k string) error { return c.Set(ctx, k, "1700000000 0 0:1 1:1", 0).Err() }},
		{"sub-windows zero cost", subLim, func(k string) error { return c.Set(ctx, k, "1700000000 0 0:0", 0).Err() }},
	}
	for _, b := range bad {
		key := strings.ReplaceAll(b.name, " ", "-")
		if err := b.write(b.lim.Key(key)); err != nil {
			t.Fatal(err)
		}
		d, err := b.lim.Allow(ctx, key, 1)
		if !errors.Is(err, core.ErrStore) || d.Allowed {
			t.Errorf("%s: %+v, %v; want a store error", b.name, d, err)
		}
	}
	// New fails where core.New does, with Limit.Validate's messages.
	for _, tc := range []struct {
		l    core.Limit
		want string
	}{
		{core.PerMinute(1025).WithAlgorithm(core.SlidingLog), "raise the cap with WithMaxEntries(1025)"},
		{core.PerMinute(10).WithAlgorithm(core.SlidingLog).WithMaxEntries(9), "MaxEntries allows (9)"},
		{core.PerSecond(10).WithSubWindows(7), "pick a number of sub-windows that divides it"},
		{core.PerSecond(10).WithSubWindows(4).WithAlgorithm(core.GCRA), "SubWindows applies to SlidingWindow only"},
		{core.PerSecond(10).WithSubWindows(1), "from 2 to"},
		{core.PerSecond(10).WithAlgorithm(core.FixedWindow).WithMaxEntries(10), "MaxEntries applies to"},
		{core.PerSecond(1_000_000).WithSubWindows(2000), "WithMaxEntries(2000)"},
	} {
		_, err := redisstore.New(c, tc.l)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one saying %q", tc.l, err, tc.want)
		}
	}
	if _, err := redisstore.New(c, core.PerMinute(1025).WithAlgorithm(core.SlidingLog).WithMaxEntries(1025)); err != nil {
		t.Errorf("raised cap: %v", err)
	}
}

// TestSlidingLogSameNanoseconds: admissions whole seconds apart, with the
// same nanoseconds and cost, are distinct entries of the log.
func TestSlidingLogSameNanoseconds(t *testing.T) {
	t.Parallel()
	c := single(t)
	ctx := context.Background()
	clk := coretest.NewClock(coretest.T0)
	lim := redisstore.MustNew(c, core.PerMinute(3).WithAlgorithm(core.SlidingLog), redisstore.WithScriptClock(clk), redisstore.WithClock(clk))
	for i, want := range []bool{true, true, true, false} {
		d, err := lim.Allow(ctx, "k", 1)
		if err != nil || d.Allowed != want {
			t.Fatalf("request %d, %v after T0: %+v %v; want allowed=%v", i, clk.Time().Sub(coretest.T0), d, err, want)
		}
		clk.Advance(time.Second)
	}
	if n, _ := c.ZCard(ctx, lim.Key("k")).Result(); n != 4 {
		t.Fatalf("the log holds %d members, want 3 entries and the sum", n)
	}
}
