package coretest

import (
	"time"

	"github.com/floodgate/floodgate/core"
)

// shapingTables are the tables of shaping, warm-up, overdraft and refunds.
func shapingTables() []Table {
	const ms, ns = time.Millisecond, time.Nanosecond
	return []Table{{
		// A shaper at 10/s: one request per 100 ms, each waiting for its
		// turn (Delay) at most 250 ms. Remaining counts the cost-1
		// requests whose turn would still come within 250 ms; ResetAfter
		// is when the line drains; a refusal's RetryAfter is when the turn
		// would be 250 ms away.
		Name: "leaky-bucket", Limit: core.PerSecond(10).WithMaxDelay(250 * ms),
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
		Name: "warm-up", Limit: core.PerSecond(10).WithWarmUp(time.Second, 3),
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
		Name: "token-bucket-overdraft", Limit: core.PerSecond(10).WithBurst(3).WithOverdraft(),
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
		Name: "gcra-refund", Limit: core.PerSecond(10).WithBurst(3).WithAlgorithm(core.GCRA),
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
		Name: "token-bucket-refund", Limit: core.PerSecond(10).WithBurst(3).WithAlgorithm(core.TokenBucket),
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
		Name: "fixed-window-refund", Limit: core.PerSecond(3).WithAlgorithm(core.FixedWindow),
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
		Name: "sliding-window-refund", Limit: core.PerSecond(4).WithAlgorithm(core.SlidingWindow),
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
