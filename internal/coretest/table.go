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

// Table is a sequence of requests on one key under one algorithm and limit,
// with the exact decision each must get.
type Table struct {
	Name      string
	Algorithm core.Algorithm
	Limit     core.Limit

	// The algorithm's settings, as the core.Limit fields of those names;
	// zero values are the defaults. [Table.Policy] puts them together.
	Overdraft  bool
	MaxDelay   time.Duration
	WarmUp     time.Duration
	ColdFactor float64
	SubWindows int
	MaxEntries int

	Steps []Step
}

// Policy returns tab's limit with its algorithm and settings: the policy
// every store is given.
func (tab Table) Policy() core.Limit {
	l := tab.Limit
	l.Algorithm, l.Overdraft, l.MaxDelay = tab.Algorithm, tab.Overdraft, tab.MaxDelay
	l.WarmUp, l.ColdFactor = tab.WarmUp, tab.ColdFactor
	l.SubWindows, l.MaxEntries = tab.SubWindows, tab.MaxEntries
	return l
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
		// Units in flight: a refusal waits for a release, however long;
		// its RetryAfter and every ResetAfter are the Period, a hint. A
		// negative cost releases the oldest leases.
		Name: "concurrency", Algorithm: core.Concurrency, Limit: core.InFlight(3),
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
		Name: "concurrency-hint", Algorithm: core.Concurrency, Limit: core.Limit{Events: 1, Period: 250 * ms, Name: "uploads"},
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
		Name: "sliding-log", Algorithm: core.SlidingLog, Limit: core.Limit{Events: 4, Period: time.Second},
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
		Name: "sliding-log-7s", Algorithm: core.SlidingLog, Limit: core.Limit{Events: 2, Period: 7 * time.Second},
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
		Name: "sliding-window-4", Algorithm: core.SlidingWindow, Limit: core.Limit{Events: 4, Period: time.Second}, SubWindows: 4,
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
		Name: "sliding-window-2-epoch", Algorithm: core.SlidingWindow, Limit: core.Limit{Events: 3, Period: 7 * time.Second}, SubWindows: 2,
		Steps: []Step{
			{0, 3, true, 0, 0, 4500 * ms, 0},                  // −2.5s:3; reset −2.5+7
			{500 * ms, 1, false, 0, 4000 * ms, 4000 * ms, 0},  // −2.5s:3 leaves at 4.5s
			{4500 * ms, 2, true, 1, 0, 7 * time.Second, 0},    // 4.5s:2
			{8000 * ms, 2, false, 1, 3500 * ms, 3500 * ms, 0}, // 4.5s:2 leaves at 11.5s
			{8000 * ms, 1, true, 0, 0, 7 * time.Second, 0},    // 4.5s:2 8s:1
		},
	}, {
		// A shaper at 10/s: one request per 100 ms, each waiting for its
		// turn (Delay) at most 250 ms. Remaining counts the cost-1
		// requests whose turn would still come within 250 ms; ResetAfter
		// is when the line drains; a refusal's RetryAfter is when the turn
		// would be 250 ms away.
		Name: "leaky-bucket", Algorithm: core.LeakyBucket, Limit: core.PerSecond(10), MaxDelay: 250 * ms,
		Steps: []Step{
			// At 0 the line is empty: the first request goes at once, the
			// next ones wait 100, 200 ms; 300 ms would be past the bound.
			{0, 1, true, 2, 0, 100 * ms, 0},
			{0, 1, true, 1, 0, 200 * ms, 100 * ms},
			{0, 1, true, 0, 0, 300 * ms, 200 * ms},
			{0, 1, false, 0, 50 * ms, 300 * ms, 0},
			{49 * ms, 1, false, 0, 1 * ms, 251 * ms, 0},
			{50 * ms, 1, true, 0, 0, 350 * ms, 250 * ms}, // the line drains at 400
			// Cost 2 holds the line for two turns; it waits for its own
			// turn only, so it is admitted when that turn is within the
			// bound: it goes at 400, the line drains at 600.
			{150 * ms, 2, true, 0, 0, 450 * ms, 250 * ms},
			{150 * ms, 1, false, 0, 200 * ms, 450 * ms, 0},
			// Idle past the drain: the line is empty again.
			{2 * time.Second, 1, true, 2, 0, 100 * ms, 0},
			{2*time.Second + 30*ms, 1, true, 1, 0, 170 * ms, 70 * ms}, // drains at 2.2 s
			// A cancelled wait gives its turn back (2.2 -> 2.1 s), and the
			// next request gets that turn.
			{2*time.Second + 30*ms, -1, false, 0, 0, 0, 0},
			{2*time.Second + 30*ms, 1, true, 1, 0, 170 * ms, 70 * ms},
			{2*time.Second + 50*ms, 1, true, 1, 0, 250 * ms, 150 * ms}, // drains at 2.3 s
			// Refunding more than is queued drains the line to now, never
			// before: 2.3 s - 500 ms is 1.8 s, so 2.1 s; the next request
			// goes at once, and the one after it waits one interval.
			{2*time.Second + 100*ms, -5, false, 0, 0, 0, 0},
			{2*time.Second + 100*ms, 1, true, 2, 0, 100 * ms, 0},
			// The line drained at 2.2 s: a refund at 3 s gives nothing.
			{3 * time.Second, -1, false, 0, 0, 0, 0},
			{3 * time.Second, 1, true, 2, 0, 100 * ms, 0},
			{3 * time.Second, 1, true, 1, 0, 200 * ms, 100 * ms},
			{3 * time.Second, 1, true, 0, 0, 300 * ms, 200 * ms},
			{3 * time.Second, 1, false, 0, 50 * ms, 300 * ms, 0}, // a refusal a deny cache may hold
			// A refund at 3.01 s moves the drain from 3.3 to 3.2 s, so the
			// refusal no longer holds: the next request waits 190 ms.
			{3*time.Second + 10*ms, -1, false, 0, 0, 0, 0},
			{3*time.Second + 10*ms, 1, true, 0, 0, 290 * ms, 190 * ms},
		},
	}, {
		// Guava's SmoothWarmingUp at 10/s (stable interval 100 ms) with a
		// 1 s warm-up and cold factor 3. Guava's formulas give:
		//
		//	cold interval = 100 ms × 3                      = 300 ms
		//	threshold     = 0.5 × 1 s / 100 ms              = 5 permits
		//	max permits   = 5 + 2 × 1 s / (100 ms + 300 ms)  = 10
		//	slope         = (300 ms − 100 ms) / (10 − 5)    = 40 ms per permit
		//	cool-down     = 1 s / 10                        = 100 ms per permit
		//	permitsToTime(p) = 100 ms + p × 40 ms
		//
		// (every one exact in float64). A cold key holds 10 permits.
		// Taking one with a above the threshold costs (permitsToTime(a) +
		// permitsToTime(a−1)) / 2: with a = 5, 4, 3, 2, 1 that is
		// (300+260)/2 = 280, (260+220)/2 = 240, 200, 160, 120 ms, 1 s in
		// all (the warm-up period); at or below the threshold, 100 ms. A
		// request is admitted when the key's next free instant has come
		// and moves it on by its cost. ResetAfter: until the next free
		// instant, plus 100 ms per permit missing from 10. Remaining is 0:
		// every admission moves the next free instant past now.
		Name: "warm-up", Algorithm: core.WarmUp, Limit: core.PerSecond(10), WarmUp: time.Second, ColdFactor: 3,
		Steps: []Step{
			{0, 1, true, 0, 0, 380 * ms, 0},         // 9 left, next free 280
			{0, 1, false, 0, 280 * ms, 380 * ms, 0}, // not before 280
			{280 * ms, 1, true, 0, 0, 440 * ms, 0},  // 8, next 520; reset 520+200
			{300 * ms, 1, false, 0, 220 * ms, 420 * ms, 0},
			{520 * ms, 1, true, 0, 0, 500 * ms, 0},  // 7, next 720
			{720 * ms, 1, true, 0, 0, 560 * ms, 0},  // 6, next 880
			{880 * ms, 1, true, 0, 0, 620 * ms, 0},  // 5, next 1000
			{1000 * ms, 1, true, 0, 0, 700 * ms, 0}, // at the threshold: 100 ms; 4, next 1100
			{1100 * ms, 1, true, 0, 0, 800 * ms, 0}, // 3, next 1200
			// Idle 400 ms past 1200 stores 4 permits: 7, above the
			// threshold by 2: (180+140)/2 = 160 ms; 6 left, next 1760.
			{1600 * ms, 1, true, 0, 0, 560 * ms, 0},
			// Cost 2 out of 6: one above the threshold, (140+100)/2 = 120,
			// one at 100: 220 ms; 4 left, next 1980.
			{1760 * ms, 2, true, 0, 0, 820 * ms, 0},
			// Idle long enough to store 10 again: cold, as at the start.
			{5 * time.Second, 1, true, 0, 0, 380 * ms, 0},         // 9, next 5.28 s
			{5 * time.Second, 1, false, 0, 280 * ms, 380 * ms, 0}, // a refusal a deny cache may hold
			// A refund moves the next free instant back by 100 ms per
			// unit (the stable rate), 5.28 -> 5.18 s, and leaves the
			// stored permits alone: refused for 80 ms more, whole at
			// 5.18 + 100 ms.
			{5*time.Second + 100*ms, -1, false, 0, 0, 0, 0},
			{5*time.Second + 100*ms, 1, false, 0, 80 * ms, 180 * ms, 0},
			// At 5.18 s: 9 stored, 4 above the threshold: (260+220)/2 =
			// 240 ms; 8 left, next 5.42 s, whole 200 ms later.
			{5*time.Second + 180*ms, 1, true, 0, 0, 440 * ms, 0},
			// Refunding 300 ms at 5.2 s would move it to 5.12 s: it
			// stops at now. Then (220+180)/2 = 200 ms: 7 left, next 5.4 s.
			{5*time.Second + 200*ms, -3, false, 0, 0, 0, 0},
			{5*time.Second + 200*ms, 1, true, 0, 0, 500 * ms, 0},
			// Past the next free instant a refund gives nothing: 1.6 s
			// idle store 16 permits, capped at 10, cold again.
			{7 * time.Second, -1, false, 0, 0, 0, 0},
			{7 * time.Second, 1, true, 0, 0, 380 * ms, 0},
		},
	}, {
		// A token bucket of 3 at 10/s that lends (WithOverdraft): a
		// request larger than what is left goes through while the bucket
		// is not in debt, and the next ones wait the debt out. Remaining
		// counts the whole tokens and one more into debt. As in
		// "token-bucket", x/time/rate's test admits a nanosecond early.
		Name: "token-bucket-overdraft", Algorithm: core.TokenBucket, Limit: core.PerSecond(10).WithBurst(3), Overdraft: true,
		Steps: []Step{
			// 3 tokens: 2 cost-1 requests, then a third, then one into debt.
			{0, 1, true, 3, 0, 100*ms - ns, 0},
			{0, 2, true, 1, 0, 300*ms - ns, 0},
			{0, 3, true, 0, 0, 600*ms - ns, 0}, // 0 left: not in debt; now 3 owed
			{0, 1, false, 0, 300*ms - ns, 600*ms - ns, 0},
			// The debt is paid at 300 ms; then any cost up to the burst,
			// from 0 tokens.
			{300*ms - 2*ns, 1, false, 0, 1 * ns, 300*ms + ns, 0},
			{300 * ms, 3, true, 0, 0, 600*ms - ns, 0},
			{300 * ms, 1, false, 0, 300*ms - ns, 600*ms - ns, 0},
			// At 600 ms, 0 tokens again: 2 are lent.
			{600 * ms, 2, true, 0, 0, 500*ms - ns, 0},
			// Refilled to 2.5 at 1050 ms: 1.5 left, then one more whole
			// and one lent.
			{1050 * ms, 1, true, 2, 0, 150*ms - ns, 0},
			// A refund adds to what is there: 2.5; a cost of 3 is lent
			// 0.5, which is paid back 50 ms later.
			{1050 * ms, -1, false, 0, 0, 0, 0},
			{1050 * ms, 3, true, 0, 0, 350*ms - ns, 0},
			{1050 * ms, 1, false, 0, 50*ms - ns, 350*ms - ns, 0},
			// At 1100 ms the debt is paid (0 tokens); a refund of 2 makes
			// 2, and a cost of 3 is lent one.
			{1100 * ms, -2, false, 0, 0, 0, 0},
			{1100 * ms, 3, true, 0, 0, 400*ms - ns, 0},
			// Refunds never fill past the burst: full at 5 s, a refund of
			// 3 leaves 3.
			{5 * time.Second, -3, false, 0, 0, 0, 0},
			{5 * time.Second, 1, true, 3, 0, 100*ms - ns, 0},
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
	leases := tab.Algorithm == core.Concurrency
	var holding []heldLease // leases handed out and not released, oldest first
	for i, s := range tab.Steps {
		clk.Set(T0.Add(s.At))
		if s.Cost < 0 && leases {
			n := 0
			for n < -s.Cost && len(holding) > 0 {
				if err := holding[0].lease.Release(context.Background()); err != nil {
					t.Fatalf("%s step %d: release: %v", tab.Name, i, err)
				}
				n += holding[0].cost
				holding = holding[1:]
			}
			if n != -s.Cost {
				t.Fatalf("%s step %d: the oldest leases hold %d units, not %d: fix the table", tab.Name, i, n, -s.Cost)
			}
			continue
		}
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
		if (d.Lease != nil) != (leases && d.Allowed) {
			t.Errorf("%s step %d: allowed=%v with lease %v; a lease comes with every admission under Concurrency, and with nothing else", tab.Name, i, d.Allowed, d.Lease)
		}
		if d.Lease != nil {
			holding = append(holding, heldLease{d.Lease, s.Cost})
		}
		ok := d.Allowed == s.Allowed && d.Remaining == s.Remaining &&
			within(d.RetryAfter, s.Retry, late) && within(d.ResetAfter, s.Reset, late) && within(d.Delay, s.Delay, late)
		if !ok {
			t.Errorf("%s step %d at %v cost %d:\n got allowed=%v remaining=%d retry=%v reset=%v delay=%v\nwant allowed=%v remaining=%d retry=%v reset=%v delay=%v",
				tab.Name, i, s.At, s.Cost, d.Allowed, d.Remaining, d.RetryAfter, d.ResetAfter, d.Delay, s.Allowed, s.Remaining, s.Retry, s.Reset, s.Delay)
		}
		if d.Limit != tab.Policy() {
			t.Errorf("%s step %d: decision limit %v, want %v", tab.Name, i, d.Limit, tab.Policy())
		}
	}
}

// heldLease is a lease a table's admission holds, and its cost.
type heldLease struct {
	lease *core.Lease
	cost  int
}

func within(got, want, late time.Duration) bool { return got >= want && got-want <= late }
