package core_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/core/coretest"
)

// step is one request of a policy table: at an instant since t0, a cost,
// and the exact decision, Delay included.
type step struct {
	at                  time.Duration
	cost                int
	allowed             bool
	remaining           int
	retry, reset, delay time.Duration
}

// playSteps plays steps on key "k" of a limiter made with opts, deny cache
// on and off, and requires each decision exactly.
func playSteps(t *testing.T, l core.Limit, steps []step, opts ...core.Option) {
	t.Helper()
	for _, cache := range []bool{true, false} {
		t.Run(fmt.Sprintf("cache=%v", cache), func(t *testing.T) {
			clk := coretest.NewClock(t0)
			lim, err := core.New(l, append([]core.Option{core.WithClock(clk), core.WithDenyCache(cache)}, opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range steps {
				clk.Set(t0.Add(s.at))
				d, err := lim.Allow(ctx, "k", s.cost)
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				got := step{s.at, s.cost, d.Allowed, d.Remaining, d.RetryAfter, d.ResetAfter, d.Delay}
				if got != s {
					t.Errorf("step %d at %v cost %d:\n got %+v\nwant %+v", i, s.at, s.cost, got, s)
				}
			}
		})
	}
}

// TestLeakyBucketTable: 10/s, so one request per 100 ms, waiting at most
// 250 ms for its turn.
func TestLeakyBucketTable(t *testing.T) {
	t.Parallel()
	// At 0 the line is empty: the first request goes at once, the next
	// ones wait 100, 200 ms; 300 ms would be past the 250 ms bound.
	// Remaining counts the cost-1 requests whose turn would still come
	// within 250 ms; ResetAfter is when the line drains.
	playSteps(t, core.PerSecond(10), []step{
		{0, 1, true, 2, 0, 100 * ms, 0},
		{0, 1, true, 1, 0, 200 * ms, 100 * ms},
		{0, 1, true, 0, 0, 300 * ms, 200 * ms},
		{0, 1, false, 0, 50 * ms, 300 * ms, 0},
		{49 * ms, 1, false, 0, 1 * ms, 251 * ms, 0},
		{50 * ms, 1, true, 0, 0, 350 * ms, 250 * ms},
		// Cost 2 holds the line for two turns; it waits for its own turn
		// only, so it is admitted when that turn is within the bound.
		{150 * ms, 2, true, 0, 0, 450 * ms, 250 * ms},
		{150 * ms, 1, false, 0, 200 * ms, 450 * ms, 0},
		// Idle past the drain: the line is empty again.
		{2 * time.Second, 1, true, 2, 0, 100 * ms, 0},
		{2*time.Second + 30*ms, 1, true, 1, 0, 170 * ms, 70 * ms},
	}, core.WithAlgorithm(core.LeakyBucket), core.WithMaxDelay(250*ms))
}

// TestLeakyBucketRefund: a cancelled wait gives its turn back, never
// before now.
func TestLeakyBucketRefund(t *testing.T) {
	t.Parallel()
	clk := coretest.NewClock(t0)
	lim, err := core.New(core.PerSecond(10), core.WithClock(clk), core.WithAlgorithm(core.LeakyBucket))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		lim.Allow(ctx, "k", 1)
	}
	if err := lim.Refund(ctx, "k", 1); err != nil {
		t.Fatal(err)
	}
	d, _ := lim.Allow(ctx, "k", 1)
	if !d.Allowed || d.Delay != 200*ms {
		t.Fatalf("after a refund: %+v, want the refunded 200 ms turn", d)
	}
	if err := lim.Refund(ctx, "k", 10); err != nil {
		t.Fatal(err)
	}
	if d, _ := lim.Allow(ctx, "k", 1); d.Delay != 0 {
		t.Fatalf("after refunding more than was queued: delay %v, want 0 (never before now)", d.Delay)
	}
}

// TestWarmUpTable: Guava's SmoothWarmingUp at 10/s (stable interval 100 ms)
// with a 1 s warm-up and cold factor 3. Guava's formulas give:
//
//	cold interval = 100 ms × 3                               = 300 ms
//	threshold     = 0.5 × 1 s / 100 ms                       = 5 permits
//	max permits   = 5 + 2 × 1 s / (100 ms + 300 ms)           = 10
//	slope         = (300 ms − 100 ms) / (10 − 5)             = 40 ms per permit
//	cool-down     = 1 s / 10                                 = 100 ms per permit
//	permitsToTime(p) = 100 ms + p × 40 ms
//
// A cold key holds 10 permits. Taking one with a above the threshold costs
// (permitsToTime(a) + permitsToTime(a−1)) / 2: with a = 5, 4, 3, 2, 1 that
// is (300+260)/2 = 280, (260+220)/2 = 240, 200, 160, 120 ms, 1 s in all (the
// warm-up period); at or below the threshold, 100 ms. A request is admitted
// when the key's next free instant has come and moves it on by its cost.
// ResetAfter: until the next free instant, plus 100 ms per permit missing
// from 10.
func TestWarmUpTable(t *testing.T) {
	t.Parallel()
	playSteps(t, core.PerSecond(10), []step{
		{0, 1, true, 0, 0, 380 * ms, 0},         // 9 left, next free 280
		{0, 1, false, 0, 280 * ms, 380 * ms, 0}, // not before 280
		{280 * ms, 1, true, 0, 0, 440 * ms, 0},  // 8, next 520; reset 520+200
		{300 * ms, 1, false, 0, 220 * ms, 420 * ms, 0},
		{520 * ms, 1, true, 0, 0, 500 * ms, 0},  // 7, next 720
		{720 * ms, 1, true, 0, 0, 560 * ms, 0},  // 6, next 880
		{880 * ms, 1, true, 0, 0, 620 * ms, 0},  // 5, next 1000
		{1000 * ms, 1, true, 0, 0, 700 * ms, 0}, // at the threshold: 100 ms; 4, next 1100
		{1100 * ms, 1, true, 0, 0, 800 * ms, 0}, // 3, next 1200
		// Idle 400 ms past 1200 stores 4 permits: 7, above the threshold
		// by 2: (180+140)/2 = 160 ms; 6 left, next 1760.
		{1600 * ms, 1, true, 0, 0, 560 * ms, 0},
		// Cost 2 out of 6: one above the threshold, (140+100)/2 = 120,
		// one at 100: 220 ms; 4 left, next 1980.
		{1760 * ms, 2, true, 0, 0, 820 * ms, 0},
		// Idle long enough to store 10 again: cold, as at the start.
		{5 * time.Second, 1, true, 0, 0, 380 * ms, 0},
		{5 * time.Second, 1, false, 0, 280 * ms, 380 * ms, 0},
	}, core.WithAlgorithm(core.WarmUp), core.WithWarmUp(time.Second, 3))
}

// TestOverdraftTable: a token bucket of 3 at 10/s that lends. A request
// larger than what is left goes through while the bucket is not in debt;
// the next ones wait the debt out.
func TestOverdraftTable(t *testing.T) {
	t.Parallel()
	const ns = time.Nanosecond
	playSteps(t, core.PerSecond(10).WithBurst(3), []step{
		// 3 tokens: 2 cost-1 requests, then a third, then one into debt.
		{0, 1, true, 3, 0, 100*ms - ns, 0},
		{0, 2, true, 1, 0, 300*ms - ns, 0},
		{0, 3, true, 0, 0, 600*ms - ns, 0}, // 0 left: not in debt; now 3 owed
		{0, 1, false, 0, 300*ms - ns, 600*ms - ns, 0},
		// The debt is paid at 300 ms (x/time/rate's test admits 1 ns
		// early); then any cost up to the burst, from 0 tokens.
		{300*ms - 2*ns, 1, false, 0, 1 * ns, 300*ms + ns, 0},
		{300 * ms, 3, true, 0, 0, 600*ms - ns, 0},
		{300 * ms, 1, false, 0, 300*ms - ns, 600*ms - ns, 0},
		// At 600 ms, 0 tokens again: 2 are lent.
		{600 * ms, 2, true, 0, 0, 500*ms - ns, 0},
		// Refilled to 2.5 at 1050 ms: 1.5 left, then one more whole and one lent.
		{1050 * ms, 1, true, 2, 0, 150*ms - ns, 0},
	}, core.WithOverdraft())
}

// TestPolicyOptions: options that do not fit the algorithm, or bad values,
// fail at construction with a message saying what to fix.
func TestPolicyOptions(t *testing.T) {
	t.Parallel()
	cases := []struct {
		opts []core.Option
		want string
	}{
		{[]core.Option{core.WithOverdraft(), core.WithAlgorithm(core.GCRA)}, "token bucket only"},
		{[]core.Option{core.WithMaxDelay(time.Second)}, "LeakyBucket only"},
		{[]core.Option{core.WithAlgorithm(core.LeakyBucket), core.WithMaxDelay(-1)}, "must be > 0"},
		{[]core.Option{core.WithWarmUp(time.Second, 3)}, "WarmUp only"},
		{[]core.Option{core.WithAlgorithm(core.WarmUp)}, "needs WithWarmUp"},
		{[]core.Option{core.WithAlgorithm(core.WarmUp), core.WithWarmUp(time.Second, 0.5)}, "cold factor must be from 1"},
		{[]core.Option{core.WithAlgorithm(core.WarmUp), core.WithWarmUp(-time.Second, 3)}, "warm-up period must be > 0"},
	}
	for _, c := range cases {
		_, err := core.New(core.PerSecond(10), c.opts...)
		if err == nil || !contains(err.Error(), c.want) {
			t.Errorf("error %v, want one saying %q", err, c.want)
		}
	}
}
