package coretest

import (
	"context"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
)

// T0 is the instant decision tables start at: a whole second, so fixed and
// sliding windows start there.
var T0 = time.Unix(1_700_000_000, 0)

// Step is one request of a decision table and the decision it must get.
//
// A step with a negative Cost is a refund of -Cost units (Limiter.Refund)
// at At; it has no decision, so its other fields are not read.
type Step struct {
	At        time.Duration // since T0
	Cost      int
	Allowed   bool
	Remaining int
	Retry     time.Duration // RetryAfter
	Reset     time.Duration // ResetAfter
	Delay     time.Duration // Delay: a shaper's wait before an admitted request proceeds
}

// Table is a sequence of requests on one key under one algorithm and limit,
// with the exact decision each must get.
type Table struct {
	Name      string
	Algorithm core.Algorithm
	Limit     core.Limit

	// The algorithm's settings; zero values are the defaults. A Factory
	// passes them on as its store's options ([Table.CoreOptions] for the
	// in-memory limiter).
	Overdraft  bool          // core.WithOverdraft
	MaxDelay   time.Duration // core.WithMaxDelay
	WarmUp     time.Duration // core.WithWarmUp's period
	ColdFactor float64       // core.WithWarmUp's cold factor

	Steps []Step
}

// CoreOptions returns the in-memory limiter's options for tab's algorithm
// and settings.
func (tab Table) CoreOptions() []core.Option {
	opts := []core.Option{core.WithAlgorithm(tab.Algorithm)}
	if tab.Overdraft {
		opts = append(opts, core.WithOverdraft())
	}
	if tab.MaxDelay != 0 {
		opts = append(opts, core.WithMaxDelay(tab.MaxDelay))
	}
	if tab.WarmUp != 0 || tab.ColdFactor != 0 {
		opts = append(opts, core.WithWarmUp(tab.WarmUp, tab.ColdFactor))
	}
	return opts
}

// Factory returns a limiter for tab's algorithm, limit and settings that
// reads its time from clock.
type Factory func(t testing.TB, tab Table, clock *Clock) core.Limiter

// Tables returns the decision tables every store must pass: every algorithm,
// admissions and denials, weighted costs, waits ending exactly when they
// say, and quotas coming back. The in-memory limiter passes them exactly.
func Tables() []Table {
	const ms, ns = time.Millisecond, time.Nanosecond
	return []Table{{
		Name: "gcra", Algorithm: core.GCRA, Limit: core.PerSecond(10).WithBurst(3),
		Steps: []Step{
			{0, 1, true, 2, 0, 100 * ms, 0},
			{0, 1, true, 1, 0, 200 * ms, 0},
			{0, 1, true, 0, 0, 300 * ms, 0},
			{0, 1, false, 0, 100 * ms, 300 * ms, 0},
			{50 * ms, 1, false, 0, 50 * ms, 250 * ms, 0},
			{100 * ms, 1, true, 0, 0, 300 * ms, 0},
			{100 * ms, 2, false, 0, 200 * ms, 300 * ms, 0},
			{300 * ms, 2, true, 0, 0, 300 * ms, 0},
			{1000 * ms, 3, true, 0, 0, 300 * ms, 0},
			{2000 * ms, 1, true, 2, 0, 100 * ms, 0},
			{2050 * ms, 3, false, 2, 50 * ms, 50 * ms, 0},
			{2100 * ms, 3, true, 0, 0, 300 * ms, 0},
		},
	}, {
		// x/time/rate admits as soon as the wait for the shortfall
		// truncates to zero nanoseconds, one nanosecond before the ideal
		// instant; RetryAfter is that exact instant, and ResetAfter the
		// instant a whole burst would be admitted.
		Name: "token-bucket", Algorithm: core.TokenBucket, Limit: core.PerSecond(10).WithBurst(3),
		Steps: []Step{
			{0, 1, true, 2, 0, 100*ms - ns, 0},
			{0, 1, true, 1, 0, 200*ms - ns, 0},
			{0, 1, true, 0, 0, 300*ms - ns, 0},
			{0, 1, false, 0, 100*ms - ns, 300*ms - ns, 0},
			{50 * ms, 1, false, 0, 50*ms - ns, 250*ms - ns, 0},
			{100 * ms, 1, true, 0, 0, 300*ms - ns, 0},
			{100 * ms, 2, false, 0, 200*ms - ns, 300*ms - ns, 0},
			{300*ms - ns, 2, true, 0, 0, 300 * ms, 0},
			{1000 * ms, 3, true, 0, 0, 300*ms - ns, 0},
			{2000 * ms, 1, true, 2, 0, 100*ms - ns, 0},
			{2050 * ms, 3, false, 2, 50*ms - ns, 50*ms - ns, 0},
			{2100 * ms, 3, true, 0, 0, 300*ms - ns, 0},
		},
	}, {
		// A rate that is no whole number of nanoseconds per event: float
		// rounding and the ceiling of the GCRA interval both show.
		Name: "token-bucket-thirds", Algorithm: core.TokenBucket, Limit: core.PerSecond(3).WithBurst(2),
		Steps: []Step{
			{0, 2, true, 0, 0, 666666666 * ns, 0},
			{0, 1, false, 0, 333333333 * ns, 666666666 * ns, 0},
			{333333333 * ns, 1, true, 0, 0, 666666666 * ns, 0},
			{500 * ms, 2, false, 0, 499999999 * ns, 499999999 * ns, 0},
		},
	}, {
		Name: "gcra-thirds", Algorithm: core.GCRA, Limit: core.PerSecond(3).WithBurst(2),
		Steps: []Step{
			{0, 2, true, 0, 0, 666666668 * ns, 0},
			{0, 1, false, 0, 333333334 * ns, 666666668 * ns, 0},
			{333333334 * ns, 1, true, 0, 0, 666666668 * ns, 0},
			{500 * ms, 2, false, 0, 500000002 * ns, 500000002 * ns, 0},
		},
	}, {
		Name: "fixed-window", Algorithm: core.FixedWindow, Limit: core.PerSecond(3).WithBurst(1),
		Steps: []Step{
			{0, 1, true, 2, 0, 1000 * ms, 0},
			{0, 2, true, 0, 0, 1000 * ms, 0},
			{0, 1, false, 0, 1000 * ms, 1000 * ms, 0},
			{400 * ms, 1, false, 0, 600 * ms, 600 * ms, 0},
			{1000 * ms, 3, true, 0, 0, 1000 * ms, 0},
			{1500 * ms, 1, false, 0, 500 * ms, 500 * ms, 0},
			{2200 * ms, 1, true, 2, 0, 800 * ms, 0},
			{2300 * ms, 3, false, 2, 700 * ms, 700 * ms, 0},
			{2300 * ms, 2, true, 0, 0, 700 * ms, 0},
		},
	}, {
		// Windows of 7 s are aligned to the epoch, not to T0: the one
		// holding T0 began 6 s before it.
		Name: "fixed-window-7s", Algorithm: core.FixedWindow, Limit: core.Limit{Events: 2, Period: 7 * time.Second},
		Steps: []Step{
			{0, 2, true, 0, 0, 1 * time.Second, 0},
			{0, 1, false, 0, 1 * time.Second, 1 * time.Second, 0},
			{1 * time.Second, 2, true, 0, 0, 7 * time.Second, 0},
			{6 * time.Second, 1, false, 0, 2 * time.Second, 2 * time.Second, 0},
			{8 * time.Second, 1, true, 1, 0, 7 * time.Second, 0},
		},
	}, {
		Name: "sliding-window", Algorithm: core.SlidingWindow, Limit: core.PerSecond(4),
		Steps: []Step{
			{0, 4, true, 0, 0, 2000 * ms, 0},
			{0, 1, false, 0, 1250 * ms, 2000 * ms, 0},
			{1000 * ms, 1, false, 0, 250 * ms, 1000 * ms, 0},
			{1249 * ms, 1, false, 0, 1 * ms, 751 * ms, 0},
			{1500 * ms, 1, true, 1, 0, 1500 * ms, 0},
			{1500 * ms, 2, false, 1, 250 * ms, 1500 * ms, 0},
			{1750 * ms, 2, true, 0, 0, 1250 * ms, 0},
			{3500 * ms, 1, true, 3, 0, 1500 * ms, 0},
		},
	}, {
		// A period of a day and 7 ns, and counts near 10⁹: the weighted
		// count is the ceiling of a product that needs more than 64 bits
		// (the expected values come from exact integer arithmetic).
		Name: "sliding-window-odd", Algorithm: core.SlidingWindow, Limit: core.Limit{Events: 1_000_000_007, Period: 86_400_000_000_007},
		Steps: []Step{
			{0, 1_000_000_000, true, 7, 0, 92_800_000_137_739, 0},
			{18_745_679_038_966, 500_000_000, false, 142_889_809, 30_854_320_493_970, 74_054_321_098_773, 0},
			{18_745_679_038_966, 100_000_000, true, 42_889_809, 0, 160_454_321_098_780, 0},
			{56_400_000_137_732, 300_000_000, true, 178_703_710, 0, 122_800_000_000_014, 0},
		},
	}, {
		// Refunds (a cancelled reservation) give back exactly what was
		// charged, never beyond a whole quota. GCRA: a refund moves the
		// theoretical arrival time back, never before now.
		Name: "gcra-refund", Algorithm: core.GCRA, Limit: core.PerSecond(10).WithBurst(3),
		Steps: []Step{
			{0, 3, true, 0, 0, 300 * ms, 0},
			{0, -2, false, 0, 0, 0, 0},
			{0, 1, true, 1, 0, 200 * ms, 0},
			{50 * ms, -3, false, 0, 0, 0, 0}, // 300ms back would be before now: whole at 50ms
			{50 * ms, 3, true, 0, 0, 300 * ms, 0},
			{50 * ms, 1, false, 0, 100 * ms, 300 * ms, 0},
			{400 * ms, -1, false, 0, 0, 0, 0}, // whole already: nothing to give back
			{400 * ms, 3, true, 0, 0, 300 * ms, 0},
		},
	}, {
		// The token bucket: tokens come back, capped at the burst.
		Name: "token-bucket-refund", Algorithm: core.TokenBucket, Limit: core.PerSecond(10).WithBurst(3),
		Steps: []Step{
			{0, 3, true, 0, 0, 300*ms - ns, 0},
			{0, -2, false, 0, 0, 0, 0},
			{0, 1, true, 1, 0, 200*ms - ns, 0},
			{50 * ms, -3, false, 0, 0, 0, 0}, // 1.5 tokens + 3, capped at 3
			{50 * ms, 3, true, 0, 0, 300*ms - ns, 0},
			{50 * ms, 1, false, 0, 100*ms - ns, 300*ms - ns, 0},
		},
	}, {
		// The fixed window: the count goes down, never below zero, and
		// only in the window it was charged in.
		Name: "fixed-window-refund", Algorithm: core.FixedWindow, Limit: core.PerSecond(3),
		Steps: []Step{
			{0, 3, true, 0, 0, 1000 * ms, 0},
			{0, -2, false, 0, 0, 0, 0},
			{0, 1, true, 1, 0, 1000 * ms, 0},
			{0, -3, false, 0, 0, 0, 0}, // 2 counted: down to 0, not -1
			{200 * ms, 3, true, 0, 0, 800 * ms, 0},
			{200 * ms, 1, false, 0, 800 * ms, 800 * ms, 0},
			{1100 * ms, -1, false, 0, 0, 0, 0}, // a new window: nothing to give back
			{1100 * ms, 3, true, 0, 0, 900 * ms, 0},
			{1100 * ms, 1, false, 0, 900 * ms, 900 * ms, 0},
		},
	}, {
		// The sliding window: the current window's count goes down, or,
		// when it is empty, the previous window's.
		Name: "sliding-window-refund", Algorithm: core.SlidingWindow, Limit: core.PerSecond(4),
		Steps: []Step{
			{0, 4, true, 0, 0, 2000 * ms, 0},
			{0, -1, false, 0, 0, 0, 0},
			{0, 1, true, 0, 0, 2000 * ms, 0},
			{0, 1, false, 0, 1250 * ms, 2000 * ms, 0},
			{500 * ms, -2, false, 0, 0, 0, 0},
			{500 * ms, 2, true, 0, 0, 1500 * ms, 0},
			// In [1s, 2s) the current count is 0: the previous 4 go down
			// to 1, which weighs ceil(1×0.5) = 1 at 1.5s.
			{1500 * ms, -3, false, 0, 0, 0, 0},
			{1500 * ms, 4, false, 3, 500 * ms, 500 * ms, 0},
			{1500 * ms, 3, true, 0, 0, 1500 * ms, 0},
			{1500 * ms, -4, false, 0, 0, 0, 0}, // 3 counted: down to 0
			{1500 * ms, 3, true, 0, 0, 1500 * ms, 0},
		},
	}}
}

// Run plays tab on one key of a limiter made by newLimiter, and checks every
// decision: Allowed, Remaining and Limit exactly, RetryAfter, ResetAfter
// and Delay exactly or later by at most late (a store whose clock is
// coarser may round waits up, never down).
func Run(t *testing.T, tab Table, newLimiter Factory, late time.Duration) {
	t.Helper()
	clk := NewClock(T0)
	lim := newLimiter(t, tab, clk)
	for i, s := range tab.Steps {
		clk.Set(T0.Add(s.At))
		if s.Cost < 0 {
			if err := lim.Refund(context.Background(), "k", -s.Cost); err != nil {
				t.Fatalf("%s step %d: refund %d: %v", tab.Name, i, -s.Cost, err)
			}
			continue
		}
		d, err := lim.Allow(context.Background(), "k", s.Cost)
		if err != nil {
			t.Fatalf("%s step %d: %v", tab.Name, i, err)
		}
		ok := d.Allowed == s.Allowed && d.Remaining == s.Remaining &&
			within(d.RetryAfter, s.Retry, late) && within(d.ResetAfter, s.Reset, late) && within(d.Delay, s.Delay, late)
		if !ok {
			t.Errorf("%s step %d at %v cost %d:\n got allowed=%v remaining=%d retry=%v reset=%v delay=%v\nwant allowed=%v remaining=%d retry=%v reset=%v delay=%v",
				tab.Name, i, s.At, s.Cost, d.Allowed, d.Remaining, d.RetryAfter, d.ResetAfter, d.Delay, s.Allowed, s.Remaining, s.Retry, s.Reset, s.Delay)
		}
		if d.Limit != tab.Limit {
			t.Errorf("%s step %d: decision limit %v, want %v", tab.Name, i, d.Limit, tab.Limit)
		}
	}
}

func within(got, want, late time.Duration) bool { return got >= want && got-want <= late }
