package core_test

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
)

var ctx = context.Background()

var algorithms = []core.Algorithm{core.TokenBucket, core.GCRA, core.FixedWindow, core.SlidingWindow, core.SlidingLog}

func newLimiter(t testing.TB, l core.Limit, opts ...core.Option) (*core.Keyed, *coretest.Clock) {
	t.Helper()
	clk := coretest.NewClock(t0)
	lim, err := core.New(l, append([]core.Option{core.WithClock(clk)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return lim, clk
}

func allow(t testing.TB, lim core.Limiter, key string, cost int) core.Decision {
	t.Helper()
	d, err := lim.Allow(ctx, key, cost)
	if err != nil {
		t.Fatalf("Allow(%q, %d): %v", key, cost, err)
	}
	return d
}

// TestTokenBucketMatchesXTimeRate plays the same random traffic through
// x/time/rate and our token bucket and requires the same decisions and the
// same whole tokens left after each.
func TestTokenBucketMatchesXTimeRate(t *testing.T) {
	t.Parallel()
	cases := []core.Limit{
		core.PerSecond(10).WithBurst(3),
		core.PerSecond(100),
		core.PerMinute(7).WithBurst(2),
		{Events: 3, Period: time.Second, Burst: 5},
		{Events: 1000, Period: 7 * time.Second, Burst: 40},
	}
	for ci, l := range cases {
		t.Run(l.String(), func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(uint64(ci), 42))
			lim, clk := newLimiter(t, l.WithAlgorithm(core.TokenBucket))
			ref := rate.NewLimiter(rate.Limit(float64(l.Events)/l.Period.Seconds()), l.EffectiveBurst())
			interval := l.Interval()
			for i := 0; i < 20000; i++ {
				clk.Advance(time.Duration(r.Int64N(int64(interval) * 2)))
				n := 1 + r.IntN(l.EffectiveBurst())
				if r.IntN(3) > 0 {
					n = 1
				}
				want := ref.AllowN(clk.Time(), n)
				d := allow(t, lim, "k", n)
				if d.Allowed != want {
					t.Fatalf("step %d (n=%d): allowed=%v, x/time/rate says %v", i, n, d.Allowed, want)
				}
			}
		})
	}
}

// TestRetryAfterIsExact checks, for every algorithm and random traffic, that
// a denied request retried exactly RetryAfter later is admitted and that one
// nanosecond earlier it is not. A denial changes no state, so probing early
// and then on time is the same as retrying once on time.
func TestRetryAfterIsExact(t *testing.T) {
	t.Parallel()
	for _, alg := range algorithms {
		t.Run(alg.String(), func(t *testing.T) {
			t.Parallel()
			l := core.Limit{Events: 7, Period: 3 * time.Second, Burst: 4}
			maxCost := int(min(l.Events, l.EffectiveBurst()))
			r := rand.New(rand.NewPCG(uint64(alg), 7))
			checked := 0
			for i := 0; i < shortened(3000); i++ {
				lim, clk := newLimiter(t, l.WithAlgorithm(alg))
				clk.Advance(time.Duration(r.Int64N(int64(l.Period))))
				var d core.Decision
				var cost int
				for j := 0; j < 20; j++ {
					cost = 1 + r.IntN(maxCost)
					if d = allow(t, lim, "k", cost); !d.Allowed {
						break
					}
					clk.Advance(time.Duration(r.Int64N(int64(l.Interval()))))
				}
				if d.Allowed {
					continue
				}
				checked++
				if d.RetryAfter <= 0 {
					t.Fatalf("denied with RetryAfter %v", d.RetryAfter)
				}
				if d.RetryAfter > 1 {
					clk.Advance(d.RetryAfter - 1)
					if early := allow(t, lim, "k", cost); early.Allowed {
						t.Fatalf("cost %d admitted 1ns before RetryAfter %v", cost, d.RetryAfter)
					}
					clk.Advance(1)
				} else {
					clk.Advance(d.RetryAfter)
				}
				if late := allow(t, lim, "k", cost); !late.Allowed {
					t.Fatalf("cost %d denied at RetryAfter %v: %+v", cost, d.RetryAfter, late)
				}
			}
			if checked < shortened(1000) {
				t.Fatalf("only %d denials checked", checked)
			}
		})
	}
}

// TestRemainingIsExact: after random traffic, exactly Remaining cost-1
// requests at the same instant are admitted, and the next is not.
func TestRemainingIsExact(t *testing.T) {
	t.Parallel()
	for _, alg := range algorithms {
		t.Run(alg.String(), func(t *testing.T) {
			t.Parallel()
			l := core.Limit{Events: 10, Period: time.Second, Burst: 6}
			r := rand.New(rand.NewPCG(uint64(alg), 11))
			for i := 0; i < shortened(2000); i++ {
				lim, clk := newLimiter(t, l.WithAlgorithm(alg))
				clk.Advance(time.Duration(r.Int64N(int64(time.Second))))
				var d core.Decision
				for j := r.IntN(8); j >= 0; j-- {
					d = allow(t, lim, "k", 1+r.IntN(3))
					clk.Advance(time.Duration(r.Int64N(int64(60 * ms))))
				}
				d = allow(t, lim, "k", 1)
				for k := 0; k < d.Remaining; k++ {
					if got := allow(t, lim, "k", 1); !got.Allowed {
						t.Fatalf("remaining %d, but request %d was denied", d.Remaining, k+1)
					}
				}
				if got := allow(t, lim, "k", 1); got.Allowed {
					t.Fatalf("remaining %d, but request %d was admitted too", d.Remaining, d.Remaining+1)
				}
			}
		})
	}
}

func TestResetAfterMakesWhole(t *testing.T) {
	t.Parallel()
	for _, alg := range algorithms {
		t.Run(alg.String(), func(t *testing.T) {
			t.Parallel()
			l := core.PerSecond(5).WithBurst(5)
			lim, clk := newLimiter(t, l.WithAlgorithm(alg))
			clk.Advance(300 * ms)
			var d core.Decision
			for i := 0; i < 3; i++ {
				d = allow(t, lim, "k", 1)
				clk.Advance(10 * ms)
			}
			clk.Advance(d.ResetAfter - 10*ms)
			for i := 0; i < 5; i++ {
				if !allow(t, lim, "k", 1).Allowed {
					t.Fatalf("request %d after ResetAfter denied", i)
				}
			}
		})
	}
}

func TestInvalidCost(t *testing.T) {
	t.Parallel()
	for _, alg := range algorithms {
		lim, _ := newLimiter(t, core.PerSecond(10).WithBurst(3).WithAlgorithm(alg))
		max := 3
		if alg == core.FixedWindow || alg == core.SlidingWindow || alg == core.SlidingLog {
			max = 10
		}
		for _, cost := range []int{0, -1, max + 1, 1 << 40} {
			d, err := lim.Allow(ctx, "k", cost)
			if !errors.Is(err, core.ErrInvalidCost) || errors.Is(err, core.ErrStore) {
				t.Errorf("%v cost %d: err = %v, want ErrInvalidCost", alg, cost, err)
			}
			if d != (core.Decision{}) {
				t.Errorf("%v cost %d: decision %+v with error", alg, cost, d)
			}
		}
		// Nothing was charged: the whole quota is still there.
		if d := allow(t, lim, "k", max); !d.Allowed || d.Remaining != 0 {
			t.Errorf("%v: after invalid costs, cost %d got %+v", alg, max, d)
		}
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	cases := []struct {
		l    core.Limit
		opts []core.Option
		want string
	}{
		{core.PerSecond(0), nil, "events must be >= 1"},
		{core.Limit{Events: 1}, nil, "period must be > 0"},
		{core.PerSecond(1).WithBurst(-1), nil, "burst must be >= 0"},
		{core.PerSecond(1).WithName("a b"), nil, "limit name"},
		{core.PerDay(1).WithBurst(1 << 30), nil, "lower the burst"},
		{core.PerSecond(1), []core.Option{core.WithCapacity(0)}, "capacity must be >= 1"},
		{core.PerSecond(1), []core.Option{core.WithShards(3)}, "power of two"},
		{core.PerSecond(1).WithAlgorithm(99), nil, "unknown algorithm"},
		{core.PerSecond(1), []core.Option{core.WithFullPolicy(9)}, "unknown full policy"},
	}
	for _, c := range cases {
		_, err := core.New(c.l, c.opts...)
		if err == nil || !contains(err.Error(), c.want) || !contains(err.Error(), "core: ") {
			t.Errorf("New(%+v): err = %v, want it to mention %q", c.l, err, c.want)
		}
	}
}

// TestExactAdmissionConcurrent: many goroutines on a frozen clock, exactly
// burst admitted, for every algorithm, with and without the deny cache.
func TestExactAdmissionConcurrent(t *testing.T) {
	t.Parallel()
	const goroutines, burst = 1000, 100
	for _, alg := range algorithms {
		for _, cache := range []bool{true, false} {
			t.Run(fmt.Sprintf("%v/cache=%v", alg, cache), func(t *testing.T) {
				t.Parallel()
				lim, _ := newLimiter(t, core.PerMinute(burst).WithAlgorithm(alg), core.WithDenyCache(cache))
				var admitted atomic.Int64
				var wg sync.WaitGroup
				start := make(chan struct{})
				for i := 0; i < goroutines; i++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						for j := 0; j < 3; j++ {
							if d := allow(t, lim, "hot", 1); d.Allowed {
								admitted.Add(1)
							}
						}
					}()
				}
				close(start)
				wg.Wait()
				if got := admitted.Load(); got != burst {
					t.Fatalf("admitted %d of %d, want exactly %d", got, goroutines*3, burst)
				}
			})
		}
	}
}

// TestLongRunBound simulates 10⁴ s of traffic offered at twice the rate and
// requires admissions within [0.999·ideal, ideal+1]. Under -short it
// simulates 10³ s: the bounds are the same share of the ideal, so a
// steady shortfall fails it as before, but an error that grows with the
// time simulated has a tenth of the time to show.
func TestLongRunBound(t *testing.T) {
	t.Parallel()
	seconds := 10_000
	if testing.Short() {
		seconds = 1_000
	}
	const perSec = 100
	for _, alg := range algorithms {
		t.Run(alg.String(), func(t *testing.T) {
			t.Parallel()
			lim, clk := newLimiter(t, core.PerSecond(perSec).WithAlgorithm(alg))
			admitted := 0
			step := time.Second / (2 * perSec)
			for el := time.Duration(0); el < time.Duration(seconds)*time.Second; el += step {
				if allow(t, lim, "k", 1).Allowed {
					admitted++
				}
				clk.Advance(step)
			}
			ideal := float64(seconds*perSec + perSec) // rate × time + burst
			low := 0.999 * ideal
			if alg == core.SlidingWindow {
				// Under steady overload the previous window still weighs
				// a little at the end of each window, so the counter
				// settles at 99 of 100 per window: its estimate is
				// conservative by design.
				low = 0.985 * ideal
			}
			if float64(admitted) < low || float64(admitted) > ideal+1 {
				t.Fatalf("admitted %d, want within [%.0f, %.0f]", admitted, low, ideal+1)
			}
		})
	}
}

// TestCapacityNeverExceeded pushes 10⁶ distinct keys through a table of 10⁴.
func TestCapacityNeverExceeded(t *testing.T) {
	t.Parallel()
	for _, full := range []core.FullPolicy{core.FullOverflow, core.FullEvictLRU} {
		t.Run(full.String(), func(t *testing.T) {
			t.Parallel()
			lim, clk := newLimiter(t, core.PerSecond(10), core.WithCapacity(10_000), core.WithFullPolicy(full))
			if lim.Capacity() > 10_000 {
				t.Fatalf("capacity %d > 10000", lim.Capacity())
			}
			n := 1_000_000
			if testing.Short() {
				n = 100_000
			}
			for i := 0; i < n; i++ {
				allow(t, lim, strconv.Itoa(i), 1)
				if i%1000 == 0 {
					clk.Advance(time.Millisecond)
					if got := lim.Len(); got > lim.Capacity() {
						t.Fatalf("after %d keys: %d tracked > capacity %d", i, got, lim.Capacity())
					}
				}
			}
			if got := lim.Len(); got > lim.Capacity() || got < lim.Capacity()/2 {
				t.Fatalf("tracked %d, capacity %d", got, lim.Capacity())
			}
		})
	}
}

// TestOverflowProtectsDrainedKeys: with the table full of live keys, new
// keys share one overflow quota and drained keys stay drained.
func TestOverflowProtectsDrainedKeys(t *testing.T) {
	t.Parallel()
	lim, clk := newLimiter(t, core.PerMinute(3), core.WithCapacity(4), core.WithShards(1))
	for _, k := range []string{"a", "b", "c", "d"} {
		for i := 0; i < 3; i++ {
			allow(t, lim, k, 1)
		}
	}
	if lim.Len() != 4 {
		t.Fatalf("tracked %d, want 4", lim.Len())
	}
	// Three new keys share the overflow burst of 3; the fourth is denied.
	for i, k := range []string{"x1", "x2", "x3", "x4"} {
		d := allow(t, lim, k, 1)
		if d.Allowed != (i < 3) {
			t.Fatalf("overflow key %s: allowed=%v", k, d.Allowed)
		}
	}
	if d := allow(t, lim, "a", 1); d.Allowed {
		t.Fatal("drained key a came back with quota while the table was full")
	}
	if lim.Len() != 4 {
		t.Fatalf("tracked %d, want 4", lim.Len())
	}
	// Once tracked keys are whole again they make room: new keys are tracked.
	clk.Advance(time.Minute)
	d := allow(t, lim, "y", 1)
	if !d.Allowed || d.Remaining != 2 {
		t.Fatalf("new key after room was made: %+v", d)
	}
	if d := allow(t, lim, "y", 1); d.Remaining != 1 {
		t.Fatalf("second request of y: %+v, want it tracked on its own", d)
	}
}

// TestEvictLRUIsWeaker documents the opt-in mode's weakness: a flood of new
// keys pushes out a drained key, which comes back with a fresh burst.
func TestEvictLRUIsWeaker(t *testing.T) {
	t.Parallel()
	lim, _ := newLimiter(t, core.PerMinute(3), core.WithCapacity(2), core.WithShards(1), core.WithFullPolicy(core.FullEvictLRU), core.WithDenyCache(false))
	for i := 0; i < 3; i++ {
		allow(t, lim, "a", 1)
	}
	allow(t, lim, "x", 1)
	allow(t, lim, "y", 1) // evicts a
	if d := allow(t, lim, "a", 1); !d.Allowed || d.Remaining != 2 {
		t.Fatalf("evicted key a: %+v, want a fresh burst (the documented weakness)", d)
	}
	if lim.Len() != 2 {
		t.Fatalf("tracked %d, want 2", lim.Len())
	}
}

// TestIdleKeysDropped: keys whose quota is whole again are swept out as new
// keys arrive, without a background goroutine.
func TestIdleKeysDropped(t *testing.T) {
	t.Parallel()
	for _, alg := range algorithms {
		lim, clk := newLimiter(t, core.PerSecond(10).WithAlgorithm(alg), core.WithCapacity(100), core.WithShards(1))
		for i := 0; i < 50; i++ {
			allow(t, lim, "old"+strconv.Itoa(i), 1)
		}
		clk.Advance(3 * time.Second)
		for i := 0; i < 50; i++ {
			allow(t, lim, "new"+strconv.Itoa(i), 1)
		}
		if got := lim.Len(); got != 50 {
			t.Errorf("%v: tracked %d after the old keys went idle, want 50", alg, got)
		}
	}
}

// TestDenyCacheChangesNothing plays random traffic through limiters with and
// without the deny cache and requires equal decisions: with room for every
// key, and with a small table and many keys under both full policies, so
// that keys are evicted (FullEvictLRU) or sent to overflow while their deny
// slots still hold. The two limiters hash alike (same seed, one shard), so
// that they place and order keys alike.
func TestDenyCacheChangesNothing(t *testing.T) {
	t.Parallel()
	configs := []struct {
		name     string
		keys     int
		capacity int
		full     core.FullPolicy
	}{
		{"roomy", 5, core.DefaultCapacity, core.FullOverflow},
		{"small-overflow", 40, 8, core.FullOverflow},
		{"small-evict-lru", 40, 8, core.FullEvictLRU},
	}
	for _, c := range configs {
		for _, alg := range algorithms {
			t.Run(c.name+"/"+alg.String(), func(t *testing.T) {
				t.Parallel()
				// 20/s with a burst of 5; the windows count 5 per 250 ms.
				l := core.Limit{Events: 5, Period: 250 * ms, Burst: 5}
				seed := maphash.MakeSeed()
				opts := []core.Option{core.WithShards(1), core.WithSeed(seed),
					core.WithCapacity(c.capacity), core.WithFullPolicy(c.full)}
				on, clkOn := newLimiter(t, l, append(opts, core.WithDenyCache(true))...)
				off, clkOff := newLimiter(t, l, append(opts, core.WithDenyCache(false))...)
				r := rand.New(rand.NewPCG(9, uint64(alg)))
				const whole = 5 // a fresh key's quota
				denied, overflow, fresh := 0, 0, 0
				drained := map[string]bool{}
				for i := 0; i < 50_000; i++ {
					dt := time.Duration(r.Int64N(int64(30 * ms)))
					if c.keys > 5 {
						dt /= 64 // many keys: keep them live, so that the table is full
					}
					if r.IntN(50) == 0 {
						dt = -dt // the clock steps back now and then
					}
					clkOn.Advance(dt)
					clkOff.Advance(dt)
					key := strconv.Itoa(r.IntN(c.keys))
					cost := 1 + r.IntN(3)
					if r.IntN(20) == 0 {
						if err := on.Refund(ctx, key, cost); err != nil {
							t.Fatal(err)
						}
						if err := off.Refund(ctx, key, cost); err != nil {
							t.Fatal(err)
						}
						continue
					}
					a, b := allow(t, on, key, cost), allow(t, off, key, cost)
					if a != b {
						t.Fatalf("step %d key %s cost %d: cache on %+v, off %+v", i, key, cost, a, b)
					}
					switch {
					case a.Overflow:
						overflow++
					case !a.Allowed:
						denied++
						drained[key] = true
					case drained[key] && a.Remaining == whole-cost:
						fresh++ // a drained key back with a whole burst: evicted
						drained[key] = false
					}
				}
				if denied < 1000 {
					t.Fatalf("only %d denials: the cache was hardly exercised", denied)
				}
				if c.full == core.FullOverflow && c.keys > 5 && overflow < 1000 {
					t.Fatalf("only %d overflow decisions: the table was hardly full", overflow)
				}
				if c.full == core.FullEvictLRU && fresh < 1000 {
					t.Fatalf("only %d drained keys came back whole: hardly any evictions", fresh)
				}
			})
		}
	}
}

// TestClockStepBackNoFreshBurst: a clock that steps back never yields quota.
func TestClockStepBackNoFreshBurst(t *testing.T) {
	t.Parallel()
	for _, alg := range algorithms {
		lim, clk := newLimiter(t, core.PerSecond(10).WithAlgorithm(alg))
		clk.Advance(10*time.Second + 500*ms)
		for allow(t, lim, "k", 1).Allowed {
		}
		for _, back := range []time.Duration{-time.Hour, -5 * time.Second, -ms} {
			clk.Set(t0.Add(10*time.Second + 500*ms + back))
			if d := allow(t, lim, "k", 1); d.Allowed {
				t.Errorf("%v: admitted after the clock stepped back %v", alg, back)
			}
		}
		clk.Set(t0.Add(10*time.Second + 500*ms))
		if d := allow(t, lim, "k", 1); d.Allowed {
			t.Errorf("%v: admitted after the clock came back", alg)
		}
	}
}

func TestRefund(t *testing.T) {
	t.Parallel()
	for _, alg := range algorithms {
		lim, _ := newLimiter(t, core.PerMinute(3).WithAlgorithm(alg))
		for i := 0; i < 3; i++ {
			allow(t, lim, "k", 1)
		}
		if allow(t, lim, "k", 1).Allowed {
			t.Fatalf("%v: not drained", alg)
		}
		if err := lim.Refund(ctx, "k", 2); err != nil {
			t.Fatal(err)
		}
		if d := allow(t, lim, "k", 2); !d.Allowed || d.Remaining != 0 {
			t.Errorf("%v: after refund of 2, cost 2 got %+v", alg, d)
		}
		// Refunds never make more than a whole quota.
		for i := 0; i < 3; i++ {
			if err := lim.Refund(ctx, "k", 3); err != nil {
				t.Fatal(err)
			}
		}
		if d := allow(t, lim, "k", 1); d.Remaining != 2 {
			t.Errorf("%v: after over-refunding, remaining %d, want 2", alg, d.Remaining)
		}
		if err := lim.Refund(ctx, "k", 0); !errors.Is(err, core.ErrInvalidCost) {
			t.Errorf("%v: refund 0: %v", alg, err)
		}
		if err := lim.Refund(ctx, "never-seen", 1); err != nil {
			t.Errorf("%v: refund of unknown key: %v", alg, err)
		}
	}
}

func TestKeysIndependent(t *testing.T) {
	t.Parallel()
	for _, alg := range algorithms {
		lim, _ := newLimiter(t, core.PerMinute(2).WithAlgorithm(alg))
		for i := 0; i < 2; i++ {
			allow(t, lim, "a", 1)
		}
		if allow(t, lim, "a", 1).Allowed {
			t.Errorf("%v: a not drained", alg)
		}
		if d := allow(t, lim, "b", 1); !d.Allowed || d.Remaining != 1 {
			t.Errorf("%v: b affected by a: %+v", alg, d)
		}
	}
}

func TestStoreError(t *testing.T) {
	t.Parallel()
	cause := errors.New("connection refused")
	var err error = &core.StoreError{Op: "allow", Err: cause}
	if !errors.Is(err, core.ErrStore) || !errors.Is(err, cause) || errors.Is(err, core.ErrInvalidCost) {
		t.Fatalf("StoreError does not match as documented: %v", err)
	}
	if err.Error() != "core: store allow: connection refused" {
		t.Fatalf("message %q", err.Error())
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || len(s) >= len(sub) && (s[:len(sub)] == sub || contains(s[1:], sub))
}

// shortened is n random trials, or a quarter of them under -short: the
// same checks on fewer samples.
func shortened(n int) int {
	if testing.Short() {
		return n / 4
	}
	return n
}
