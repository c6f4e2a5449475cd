package core_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/core/coretest"
)

// t0 is on a whole second, so fixed and sliding windows start there.
var t0 = time.Unix(1_700_000_000, 0)

const ms = time.Millisecond

type step struct {
	at        time.Duration // since t0
	cost      int
	allowed   bool
	remaining int
	retry     time.Duration
	reset     time.Duration
}

// runSteps plays steps on one key and checks every field of every decision,
// with the deny cache on and off.
func runSteps(t *testing.T, alg core.Algorithm, l core.Limit, steps []step) {
	t.Helper()
	for _, cache := range []bool{true, false} {
		t.Run(fmt.Sprintf("%v/cache=%v", alg, cache), func(t *testing.T) {
			clk := coretest.NewClock(t0)
			lim, err := core.New(l, core.WithAlgorithm(alg), core.WithClock(clk), core.WithDenyCache(cache))
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range steps {
				clk.Set(t0.Add(s.at))
				d, err := lim.Allow(context.Background(), "k", s.cost)
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				got := step{s.at, s.cost, d.Allowed, d.Remaining, d.RetryAfter, d.ResetAfter}
				if got != s {
					t.Errorf("step %d at %v cost %d:\n got allowed=%v remaining=%d retry=%v reset=%v\nwant allowed=%v remaining=%d retry=%v reset=%v",
						i, s.at, s.cost, got.allowed, got.remaining, got.retry, got.reset, s.allowed, s.remaining, s.retry, s.reset)
				}
				if d.Limit != l {
					t.Errorf("step %d: decision limit %v, want %v", i, d.Limit, l)
				}
			}
		})
	}
}

func TestGCRASteps(t *testing.T) {
	t.Parallel()
	runSteps(t, core.GCRA, core.PerSecond(10).WithBurst(3), []step{
		{0, 1, true, 2, 0, 100 * ms},
		{0, 1, true, 1, 0, 200 * ms},
		{0, 1, true, 0, 0, 300 * ms},
		{0, 1, false, 0, 100 * ms, 300 * ms},
		{50 * ms, 1, false, 0, 50 * ms, 250 * ms},
		{100 * ms, 1, true, 0, 0, 300 * ms},
		{100 * ms, 2, false, 0, 200 * ms, 300 * ms},
		{300 * ms, 2, true, 0, 0, 300 * ms},
		{1000 * ms, 3, true, 0, 0, 300 * ms},
		{2000 * ms, 1, true, 2, 0, 100 * ms},
		{2050 * ms, 3, false, 2, 50 * ms, 50 * ms},
		{2100 * ms, 3, true, 0, 0, 300 * ms},
	})
}

func TestTokenBucketSteps(t *testing.T) {
	t.Parallel()
	// x/time/rate admits as soon as the wait for the shortfall truncates to
	// zero nanoseconds, one nanosecond before the ideal instant; RetryAfter
	// is that exact instant, and ResetAfter the instant a whole burst would
	// be admitted.
	const ns = time.Nanosecond
	runSteps(t, core.TokenBucket, core.PerSecond(10).WithBurst(3), []step{
		{0, 1, true, 2, 0, 100*ms - ns},
		{0, 1, true, 1, 0, 200*ms - ns},
		{0, 1, true, 0, 0, 300*ms - ns},
		{0, 1, false, 0, 100*ms - ns, 300*ms - ns},
		{50 * ms, 1, false, 0, 50*ms - ns, 250*ms - ns},
		{100 * ms, 1, true, 0, 0, 300*ms - ns},
		{100 * ms, 2, false, 0, 200*ms - ns, 300*ms - ns},
		{300*ms - ns, 2, true, 0, 0, 300 * ms},
		{1000 * ms, 3, true, 0, 0, 300*ms - ns},
		{2000 * ms, 1, true, 2, 0, 100*ms - ns},
		{2050 * ms, 3, false, 2, 50*ms - ns, 50*ms - ns},
		{2100 * ms, 3, true, 0, 0, 300*ms - ns},
	})
}

func TestFixedWindowSteps(t *testing.T) {
	t.Parallel()
	runSteps(t, core.FixedWindow, core.PerSecond(3).WithBurst(1), []step{
		{0, 1, true, 2, 0, 1000 * ms},
		{0, 2, true, 0, 0, 1000 * ms},
		{0, 1, false, 0, 1000 * ms, 1000 * ms},
		{400 * ms, 1, false, 0, 600 * ms, 600 * ms},
		{1000 * ms, 3, true, 0, 0, 1000 * ms},
		{1500 * ms, 1, false, 0, 500 * ms, 500 * ms},
		{2200 * ms, 1, true, 2, 0, 800 * ms},
		{2300 * ms, 3, false, 2, 700 * ms, 700 * ms},
		{2300 * ms, 2, true, 0, 0, 700 * ms},
	})
}

func TestSlidingWindowSteps(t *testing.T) {
	t.Parallel()
	runSteps(t, core.SlidingWindow, core.PerSecond(4), []step{
		{0, 4, true, 0, 0, 2000 * ms},
		{0, 1, false, 0, 1250 * ms, 2000 * ms},
		{1000 * ms, 1, false, 0, 250 * ms, 1000 * ms},
		{1249 * ms, 1, false, 0, 1 * ms, 751 * ms},
		{1500 * ms, 1, true, 1, 0, 1500 * ms},
		{1500 * ms, 2, false, 1, 250 * ms, 1500 * ms},
		{1750 * ms, 2, true, 0, 0, 1250 * ms},
		{3500 * ms, 1, true, 3, 0, 1500 * ms},
	})
}
