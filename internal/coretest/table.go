package coretest

import (
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
// at At; it has no decision, so its other fields are not read. In a table
// of the Concurrency algorithm it releases leases instead: the oldest
// leases the table's admissions hold, whose costs must add up to exactly
// -Cost, are released in the order they were handed out.
type Step struct {
	At        time.Duration // since T0
	Cost      int
	Allowed   bool
	Remaining int
	Retry     time.Duration // RetryAfter
	Reset     time.Duration // ResetAfter
	Delay     time.Duration // Delay: a shaper's wait before an admitted request proceeds
}

// Table is a sequence of requests on one key under one policy (a
// core.Limit holding its algorithm and settings), with the exact decision
// each must get.
type Table struct {
	Name  string
	Limit core.Limit
	Steps []Step
}

// Factory returns a limiter for tab's algorithm, limit and settings that
// reads its time from clock.
type Factory func(t testing.TB, tab Table, clock *Clock) core.Limiter

// Tables returns the decision tables every store must pass: every algorithm,
// admissions and denials, weighted costs, waits ending exactly when they
// say, and quotas coming back. The in-memory limiter passes them exactly.
func Tables() []Table {
	return append(rateTables(), shapingTables()...)
}

// rateTables are the tables of the algorithms that refuse: buckets,
// windows, the log, concurrency.
func rateTables() []Table {
	const ms, ns = time.Millisecond, time.Nanosecond
	return []Table{{
		Name: "gcra", Limit: core.PerSecond(10).WithBurst(3).WithAlgorithm(core.GCRA),
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
		Name: "token-bucket", Limit: core.PerSecond(10).WithBurst(3).WithAlgorithm(core.TokenBucket),
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
		Name: "token-bucket-thirds", Limit: core.PerSecond(3).WithBurst(2).WithAlgorithm(core.TokenBucket),
		Steps: []Step{
			{0, 2, true, 0, 0, 666666666 * ns, 0},
			{0, 1, false, 0, 333333333 * ns, 666666666 * ns, 0},
			{333333333 * ns, 1, true, 0, 0, 666666666 * ns, 0},
			{500 * ms, 2, false, 0, 499999999 * ns, 499999999 * ns, 0},
		},
	}, {
		Name: "gcra-thirds", Limit: core.PerSecond(3).WithBurst(2).WithAlgorithm(core.GCRA),
		Steps: []Step{
			{0, 2, true, 0, 0, 666666668 * ns, 0},
			{0, 1, false, 0, 333333334 * ns, 666666668 * ns, 0},
			{333333334 * ns, 1, true, 0, 0, 666666668 * ns, 0},
			{500 * ms, 2, false, 0, 500000002 * ns, 500000002 * ns, 0},
		},
	}, {
		Name: "fixed-window", Limit: core.PerSecond(3).WithBurst(1).WithAlgorithm(core.FixedWindow),
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
		Name: "fixed-window-7s", Limit: core.Limit{Events: 2, Period: 7 * time.Second, Algorithm: core.FixedWindow},
		Steps: []Step{
			{0, 2, true, 0, 0, 1 * time.Second, 0},
			{0, 1, false, 0, 1 * time.Second, 1 * time.Second, 0},
			{1 * time.Second, 2, true, 0, 0, 7 * time.Second, 0},
			{6 * time.Second, 1, false, 0, 2 * time.Second, 2 * time.Second, 0},
			{8 * time.Second, 1, true, 1, 0, 7 * time.Second, 0},
		},
	}, {
		Name: "sliding-window", Limit: core.PerSecond(4).WithAlgorithm(core.SlidingWindow),
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
		Name: "sliding-window-odd", Limit: core.Limit{Events: 1_000_000_007, Period: 86_400_000_000_007, Algorithm: core.SlidingWindow},
		Steps: []Step{
			{0, 1_000_000_000, true, 7, 0, 92_800_000_137_739, 0},
			{18_745_679_038_966, 500_000_000, false, 142_889_809, 30_854_320_493_970, 74_054_321_098_773, 0},
			{18_745_679_038_966, 100_000_000, true, 42_889_809, 0, 160_454_321_098_780, 0},
			{56_400_000_137_732, 300_000_000, true, 178_703_710, 0, 122_800_000_000_014, 0},
		},
	}, {
		// Units in flight: a refusal waits for a release, however long;
		// its RetryAfter and every ResetAfter are the Period, a hint. A
		// negative cost releases the oldest leases.
		Name: "concurrency", Limit: core.InFlight(3).WithAlgorithm(core.Concurrency),
		Steps: []Step{
			{0, 1, true, 2, 0, 1000 * ms, 0},
			{0, 2, true, 0, 0, 1000 * ms, 0},
			{0, 1, false, 0, 1000 * ms, 1000 * ms, 0},
			{5 * time.Second, 1, false, 0, 1000 * ms, 1000 * ms, 0},
			{5 * time.Second, -1, false, 0, 0, 0, 0},
			{5 * time.Second, 2, false, 1, 1000 * ms, 1000 * ms, 0},
			{5 * time.Second, 1, true, 0, 0, 1000 * ms, 0},
			{6 * time.Second, -3, false, 0, 0, 0, 0},
			{6 * time.Second, 3, true, 0, 0, 1000 * ms, 0},
			{6 * time.Second, 1, false, 0, 1000 * ms, 1000 * ms, 0},
			{7 * time.Second, -3, false, 0, 0, 0, 0},
			{7 * time.Second, 1, true, 2, 0, 1000 * ms, 0},
		},
	}, {
		Name: "concurrency-hint", Limit: core.Limit{Events: 1, Period: 250 * ms, Name: "uploads", Algorithm: core.Concurrency},
		Steps: []Step{
			{0, 1, true, 0, 0, 250 * ms, 0},
			{100 * ms, 1, false, 0, 250 * ms, 250 * ms, 0},
			{100 * ms, -1, false, 0, 0, 0, 0},
			{100 * ms, 1, true, 0, 0, 250 * ms, 0},
		},
	}, {
		// The exact log: the costs admitted in (t−1s, t] plus the
		// request's within 4. Entries (instant: cost) after each step in
		// the comments; a denial waits for the oldest entries that must
		// leave, each leaving 1s after its instant.
		Name: "sliding-log", Limit: core.Limit{Events: 4, Period: time.Second, Algorithm: core.SlidingLog},
		Steps: []Step{
			{0, 1, true, 3, 0, 1000 * ms, 0},                // 0:1
			{0, 1, true, 2, 0, 1000 * ms, 0},                // 0:2 (coalesced)
			{300 * ms, 2, true, 0, 0, 1000 * ms, 0},         // 0:2 300:2
			{400 * ms, 1, false, 0, 600 * ms, 900 * ms, 0},  // 0:2 must leave: at 1000
			{400 * ms, 3, false, 0, 900 * ms, 900 * ms, 0},  // both must leave: at 1300; reset 300+1000−400
			{1000 * ms, 1, true, 1, 0, 1000 * ms, 0},        // 0:2 has left: 300:2 1000:1
			{1100 * ms, -2, false, 0, 0, 0, 0},              // refund 2 from the newest: 300:1
			{1100 * ms, 3, true, 0, 0, 1000 * ms, 0},        // 300:1 1100:3
			{1200 * ms, 1, false, 0, 100 * ms, 900 * ms, 0}, // 300:1 leaves at 1300
			{1300 * ms, 1, true, 0, 0, 1000 * ms, 0},        // 1100:3 1300:1
			{1400 * ms, -4, false, 0, 0, 0, 0},              // refund 4: empty
			{1400 * ms, 4, true, 0, 0, 1000 * ms, 0},        // 1400:4
			{1400 * ms, 1, false, 0, 1000 * ms, 1000 * ms, 0},
			{1500 * ms, -4, false, 0, 0, 0, 0},       // empty
			{1500 * ms, -1, false, 0, 0, 0, 0},       // nothing to take: stays empty
			{1500 * ms, 4, true, 0, 0, 1000 * ms, 0}, // 1500:4, not beyond 4
		},
	}, {
		// An entry at exactly t−Period no longer counts at t.
		Name: "sliding-log-7s", Limit: core.Limit{Events: 2, Period: 7 * time.Second, Algorithm: core.SlidingLog},
		Steps: []Step{
			{ns, 1, true, 1, 0, 7 * time.Second, 0},                                // 1ns:1
			{2 * time.Second, 1, true, 0, 0, 7 * time.Second, 0},                   // 1ns:1 2s:1
			{7 * time.Second, 1, false, 0, ns, 2 * time.Second, 0},                 // 1ns:1 leaves at 7s+1ns
			{7*time.Second + ns, 1, true, 0, 0, 7 * time.Second, 0},                // 2s:1 7s+1ns:1
			{7*time.Second + ns, 2, false, 0, 7 * time.Second, 7 * time.Second, 0}, // both must leave: at 14s+1ns
		},
	}, {
		// Four sub-windows of 250ms (starts 0, 250, 500, 750, ...): the
		// current one and the three before it count. Entries (sub-window
		// start: cost) after each step; a denial waits for the start of
		// the first sub-window without enough of the old ones, 1s after
		// the last of them began.
		Name: "sliding-window-4", Limit: core.Limit{Events: 4, Period: time.Second, Algorithm: core.SlidingWindow, SubWindows: 4},
		Steps: []Step{
			{100 * ms, 2, true, 2, 0, 900 * ms, 0},          // 0:2; reset 0+1000−100
			{300 * ms, 1, true, 1, 0, 950 * ms, 0},          // 0:2 250:1
			{600 * ms, 1, true, 0, 0, 900 * ms, 0},          // 0:2 250:1 500:1
			{700 * ms, 1, false, 0, 300 * ms, 800 * ms, 0},  // 0:2 leaves at 1000
			{999 * ms, 2, false, 0, 1 * ms, 501 * ms, 0},    // 0:2 is enough
			{1000 * ms, 2, true, 0, 0, 1000 * ms, 0},        // 250:1 500:1 1000:2 (the exact log would refuse)
			{1100 * ms, 1, false, 0, 150 * ms, 900 * ms, 0}, // 250:1 leaves at 1250
			{1100 * ms, -1, false, 0, 0, 0, 0},              // refund: 250:1 500:1 1000:1
			{1100 * ms, 1, true, 0, 0, 900 * ms, 0},         // 1000:2 again
			{1400 * ms, -3, false, 0, 0, 0, 0},              // 250:1 has left; 1000:2 and 500:1 refunded: empty
			{1400 * ms, 1, true, 3, 0, 850 * ms, 0},         // 1250:1
			{1400 * ms, 4, false, 3, 850 * ms, 850 * ms, 0}, // 1250:1 leaves at 2250
		},
	}, {
		// Two sub-windows of 3.5s, aligned to the epoch: the one holding
		// T0 began 2.5s before it (starts −2.5s, 1s, 4.5s, 8s, 11.5s).
		Name: "sliding-window-2-epoch", Limit: core.Limit{Events: 3, Period: 7 * time.Second, Algorithm: core.SlidingWindow, SubWindows: 2},
		Steps: []Step{
			{0, 3, true, 0, 0, 4500 * ms, 0},                  // −2.5s:3; reset −2.5+7
			{500 * ms, 1, false, 0, 4000 * ms, 4000 * ms, 0},  // −2.5s:3 leaves at 4.5s
			{4500 * ms, 2, true, 1, 0, 7 * time.Second, 0},    // 4.5s:2
			{8000 * ms, 2, false, 1, 3500 * ms, 3500 * ms, 0}, // 4.5s:2 leaves at 11.5s
			{8000 * ms, 1, true, 0, 0, 7 * time.Second, 0},    // 4.5s:2 8s:1
		},
	}}
}
