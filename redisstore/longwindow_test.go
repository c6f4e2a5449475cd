package redisstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/redisstore"
)

const year = 365 * 24 * time.Hour

// TestLongFixedWindow: a fixed window longer than the other algorithms'
// bound on Redis (a year, envoyproxy/ratelimit's longest unit) decides as
// in memory, alone, in a stack and in a Multi; its reset is rounded up to
// a whole microsecond only when the clock has finer digits.
func TestLongFixedWindow(t *testing.T) {
	t.Parallel()
	c := single(t)
	ctx := context.Background()
	yearly := core.Limit{Events: 5, Period: year, Algorithm: core.FixedWindow}
	minutely := core.PerMinute(3).WithAlgorithm(core.FixedWindow)
	r := rand.New(rand.NewPCG(3, 4))
	// step moves clk by whole microseconds: a second, an hour, up to 100
	// days, so that the play crosses the year's windows.
	step := func(clk *coretest.Clock) {
		switch r.IntN(4) {
		case 0:
			clk.Advance(time.Duration(r.Int64N(1_000_000)) * time.Microsecond)
		case 1:
			clk.Advance(time.Duration(r.Int64N(48)) * time.Hour)
		case 2:
			clk.Advance(time.Duration(r.Int64N(100*24)) * time.Hour)
		}
	}
	start := coretest.T0.Add(time.Duration(r.Int64N(int64(year/time.Microsecond))) * time.Microsecond)

	t.Run("limiter", func(t *testing.T) {
		clk := coretest.NewClock(start)
		mem, err := core.New(yearly, core.WithClock(clk))
		if err != nil {
			t.Fatal(err)
		}
		red := factory(c)(t, coretest.Table{Limit: yearly}, clk)
		windows := map[int64]bool{}
		var refused int
		for i := range 400 {
			step(clk)
			windows[clk.Now()/int64(year)] = true
			key := fmt.Sprint("k", r.IntN(2))
			cost := 1 + r.IntN(3)
			if r.IntN(8) == 0 {
				refundBoth(t, mem, red, key, cost)
				continue
			}
			got, want := allowBoth(t, mem, red, key, cost)
			if got != want {
				t.Fatalf("step %d, %s cost %d at %v:\nredis  %+v\nmemory %+v", i, key, cost, clk.Time(), got, want)
			}
			if !got.Allowed {
				refused++
			}
		}
		if len(windows) < 3 || refused == 0 {
			t.Fatalf("the play saw %d windows and %d refusals; it must cross windows and refuse", len(windows), refused)
		}
	})

	t.Run("stack", func(t *testing.T) {
		clk := coretest.NewClock(start)
		layers := []core.Limit{yearly, minutely}
		mem, err := core.NewStack(layers, core.WithClock(clk))
		if err != nil {
			t.Fatal(err)
		}
		red, err := redisstore.NewStack(c, layers, redisstore.WithClock(clk), redisstore.WithScriptClock(clk), redisstore.WithPrefix("stack:"), redisstore.WithTimeout(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for i := range 200 {
			step(clk)
			got, want := allowBoth(t, mem, red, "k", 1)
			if got != want {
				t.Fatalf("step %d at %v:\nredis  %+v\nmemory %+v", i, clk.Time(), got, want)
			}
		}
	})

	t.Run("multi", func(t *testing.T) {
		clk := coretest.NewClock(start)
		mem, err := core.New(yearly, core.WithClock(clk))
		if err != nil {
			t.Fatal(err)
		}
		m, err := redisstore.NewMulti(c, redisstore.WithClock(clk), redisstore.WithScriptClock(clk), redisstore.WithPrefix("multi:"), redisstore.WithTimeout(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for i := range 100 {
			step(clk)
			want, err := mem.Allow(ctx, "k", 1)
			if err != nil {
				t.Fatal(err)
			}
			got, err := m.Allow(ctx, []redisstore.Item{{Key: "k", Limits: []core.Limit{yearly}, Cost: 1}})
			if err != nil {
				t.Fatal(err)
			}
			if got[0] != want {
				t.Fatalf("step %d at %v:\nredis  %+v\nmemory %+v", i, clk.Time(), got[0], want)
			}
		}
	})

	t.Run("server clock", func(t *testing.T) {
		// The server's TIME counts microseconds: the reset is exact, and
		// so a whole number of them, within the year.
		lim, err := redisstore.New(c, yearly, redisstore.WithPrefix("server:"), redisstore.WithTimeout(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		d, err := lim.Allow(ctx, "k", 5)
		if err != nil || !d.Allowed || d.Remaining != 0 {
			t.Fatalf("%+v %v, want admitted with none left", d, err)
		}
		d, err = lim.Allow(ctx, "k", 1)
		if err != nil || d.Allowed || d.RetryAfter != d.ResetAfter || d.ResetAfter <= 0 || d.ResetAfter > year || d.ResetAfter%time.Microsecond != 0 {
			t.Fatalf("%+v %v, want refused until the year's end, in whole microseconds", d, err)
		}
	})

	t.Run("sub-microsecond", func(t *testing.T) {
		// 250 ns into a microsecond: the reset is the window's end less
		// now, rounded up to the microsecond.
		at := time.Unix(0, (start.UnixNano()/int64(year))*int64(year)+int64(40*24*time.Hour)+250)
		clk := coretest.NewClock(at)
		red := factory(c)(t, coretest.Table{Limit: yearly}, clk)
		d, err := red.Allow(ctx, "k", 5)
		if err != nil {
			t.Fatal(err)
		}
		want := 325 * 24 * time.Hour // 325 days less 250 ns, rounded up
		if !d.Allowed || d.Remaining != 0 || d.ResetAfter != want {
			t.Fatalf("%+v, want admitted, none left, reset after %v", d, want)
		}
		d, err = red.Allow(ctx, "k", 1)
		if err != nil || d.Allowed || d.RetryAfter != want || d.ResetAfter != want {
			t.Fatalf("%+v %v, want refused for %v", d, err, want)
		}
	})
}

// TestLongFixedWindowState: a year-long window reads every state the
// fixed window's script writes (a start in whole seconds, or one with
// nanoseconds from another period of a Dynamic's key), refuses one it
// cannot read, and keeps a start after now in force.
func TestLongFixedWindowState(t *testing.T) {
	t.Parallel()
	c := single(t)
	ctx := context.Background()
	yearly := core.Limit{Events: 5, Period: year, Algorithm: core.FixedWindow}
	windowStart := (coretest.T0.UnixNano() / int64(year)) * int64(year)
	now := time.Unix(0, windowStart+int64(200*24*time.Hour)+7_000)
	sec := windowStart / 1e9
	for _, tc := range []struct {
		name, state string
		left        int // after an admission of 1; -1 for an error
	}{
		{"this window", fmt.Sprintf("%d 0 2", sec), 2},
		{"another period's start in it", fmt.Sprintf("%d 123456789 3", sec+86400), 1},
		{"the window before", fmt.Sprintf("%d 0 4", sec-1), 4},
		{"a start after now", fmt.Sprintf("%d 0 3", now.Unix()+3600), 1},
		{"a start a year back", fmt.Sprintf("%d 0 4", sec-int64(year/time.Second)), 4},
		{"nanoseconds out of range", fmt.Sprintf("%d 1000000000 1", sec), -1},
		{"not a state", "garbage", -1},
		{"a count from 2^31", fmt.Sprintf("%d 0 2147483648", sec), -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := coretest.NewClock(now)
			lim := factory(c, redisstore.WithDenyCache(0))(t, coretest.Table{Limit: yearly}, clk).(*redisstore.Limiter)
			if err := c.Set(ctx, lim.Key("k"), tc.state, time.Hour).Err(); err != nil {
				t.Fatal(err)
			}
			d, err := lim.Allow(ctx, "k", 1)
			if tc.left < 0 {
				if err == nil || !strings.Contains(err.Error(), "malformed state") {
					t.Fatalf("%+v %v, want a malformed state's error", d, err)
				}
				return
			}
			if err != nil || !d.Allowed || d.Remaining != tc.left {
				t.Fatalf("%+v %v, want admitted with %d left", d, err, tc.left)
			}
			got, err := c.Get(ctx, lim.Key("k")).Result()
			if want := fmt.Sprintf("%d 0 %d", sec, 5-tc.left); err != nil || got != want {
				t.Fatalf("state %q %v, want %q", got, err, want)
			}
			ttl, err := c.PTTL(ctx, lim.Key("k")).Result()
			if err != nil || ttl < d.ResetAfter || ttl > d.ResetAfter+redisstore.DefaultTTLMargin+time.Millisecond {
				t.Fatalf("TTL %v %v after a decision resetting in %v", ttl, err, d.ResetAfter)
			}
		})
	}
}

// TestLongWindowConstruction: what a long limit needs on Redis, and the
// errors that say so.
func TestLongWindowConstruction(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	defer c.Close()
	for _, tc := range []struct {
		name string
		l    core.Limit
		want string // "" to accept
	}{
		{"a year", core.Limit{Events: 1, Period: year, Algorithm: core.FixedWindow}, ""},
		{"60 days", core.Limit{Events: 1, Period: 60 * 24 * time.Hour, Algorithm: core.FixedWindow}, ""},
		{"833 days", core.Limit{Events: 1, Period: 833 * 24 * time.Hour, Algorithm: core.FixedWindow}, ""},
		{"835 days", core.Limit{Events: 1, Period: 835 * 24 * time.Hour, Algorithm: core.FixedWindow}, "must be whole seconds and at most"},
		{"60 days and a nanosecond", core.Limit{Events: 1, Period: 60*24*time.Hour + 1, Algorithm: core.FixedWindow}, "round the period to seconds"},
		{"a sliding year", core.Limit{Events: 1, Period: year, Algorithm: core.SlidingWindow}, "or use core.FixedWindow"},
		{"a yearly log", core.Limit{Events: 1, Period: year, Algorithm: core.SlidingLog}, "or use core.FixedWindow"},
		{"a yearly GCRA", core.Limit{Events: 1, Period: year, Algorithm: core.GCRA}, "or use core.FixedWindow"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := redisstore.New(c, tc.l)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("New: %v, want %q", err, tc.want)
			}
			_, err = redisstore.NewStack(c, []core.Limit{tc.l, core.PerSecond(100)})
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("NewStack: %v, want %q", err, tc.want)
			}
		})
	}
}
