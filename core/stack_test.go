package core_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
)

// secondAndTen is 5/s (GCRA, burst 5) stacked on 6 per 10 s (fixed window:
// windows start at t0, a multiple of 10 s since the epoch).
func secondAndTen(t *testing.T, clk *coretest.Clock, opts ...core.Option) *core.Stack {
	t.Helper()
	s, err := core.NewStack([]core.Limit{
		core.PerSecond(5).WithName("second").WithAlgorithm(core.GCRA),
		(core.Limit{Events: 6, Period: 10 * time.Second, Name: "ten"}).WithAlgorithm(core.FixedWindow),
	}, append([]core.Option{core.WithClock(clk)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestStackTables plays the stack tables every store shares, with the deny
// cache on and off.
func TestStackTables(t *testing.T) {
	t.Parallel()
	for _, tab := range coretest.StackTables() {
		for _, cache := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/cache=%v", tab.Name, cache), func(t *testing.T) {
				coretest.RunStack(t, tab, func(t testing.TB, tab coretest.StackTable, clk *coretest.Clock) core.Limiter {
					var layers []core.Limit
					for _, l := range tab.Layers {
						layers = append(layers, l.Limit)
					}
					s, err := core.NewStack(layers, core.WithClock(clk), core.WithDenyCache(cache))
					if err != nil {
						t.Fatal(err)
					}
					return s
				}, 0)
			})
		}
	}
}

// TestStackRemainingIsTheLeast: an admission names the layer with the least
// left; a denial by one layer reports what the denying layers have left
// and charges nothing.
func TestStackRemainingIsTheLeast(t *testing.T) {
	t.Parallel()
	clk := coretest.NewClock(t0)
	s, err := core.NewStack([]core.Limit{
		core.PerSecond(10),
		core.PerMinute(100),
		core.PerHour(3),
	}, core.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, p := range s.Policies() {
		names = append(names, p.Name)
	}
	if got := strings.Join(names, ","); got != "10-per-s,100-per-min,3-per-h" {
		t.Fatalf("policy names %s", got)
	}
	d, _ := s.Allow(ctx, "k", 2)
	if !d.Allowed || d.Limit.Name != "3-per-h" || d.Remaining != 1 {
		t.Fatalf("first: %+v", d)
	}
	d, _ = s.Allow(ctx, "k", 2)
	if d.Allowed || d.Limit.Name != "3-per-h" || d.Remaining != 1 {
		t.Fatalf("second: %+v", d)
	}
	// The per-second layer still holds 8: the denial charged nothing.
	if d, _ := s.Layer(0).Allow(ctx, "k", 1); d.Remaining != 7 {
		t.Fatalf("per-second layer after a denied stack: remaining %d, want 7", d.Remaining)
	}
}

// TestStackRefund gives a charge back to every layer.
func TestStackRefund(t *testing.T) {
	t.Parallel()
	clk := coretest.NewClock(t0)
	s := secondAndTen(t, clk)
	if d, _ := s.Allow(ctx, "k", 4); !d.Allowed || d.Remaining != 1 {
		t.Fatalf("charge: %+v", d)
	}
	if err := s.Refund(ctx, "k", 3); err != nil {
		t.Fatal(err)
	}
	// GCRA has 4 left, the window 5.
	if d, _ := s.Allow(ctx, "k", 1); !d.Allowed || d.Limit.Name != "second" || d.Remaining != 3 {
		t.Fatalf("after refund: %+v", d)
	}
	if err := s.Refund(ctx, "k", 0); !errors.Is(err, core.ErrInvalidCost) {
		t.Fatalf("refund 0: %v", err)
	}
}

func TestStackCost(t *testing.T) {
	t.Parallel()
	s := secondAndTen(t, coretest.NewClock(t0))
	_, err := s.Allow(ctx, "k", 6)
	if !errors.Is(err, core.ErrCostTooLarge) || !strings.Contains(err.Error(), "at most 5 under 5/s name=second") {
		t.Fatalf("cost 6: %v", err)
	}
	if _, err := s.Allow(ctx, "k", 0); !errors.Is(err, core.ErrInvalidCost) {
		t.Fatalf("cost 0: %v", err)
	}
}

func TestNewStackErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		layers []core.Limit
		opts   []core.Option
		want   string
	}{
		{nil, nil, "at least one limit"},
		{[]core.Limit{core.PerSecond(1), core.PerSecond(2).WithName("1-per-s")}, nil, `limits 0 and 1 are both named "1-per-s"`},
		{[]core.Limit{core.PerSecond(0)}, nil, "stack limit 0 (0/s name=0-per-s): core: limit events must be >= 1"},
		{[]core.Limit{core.PerSecond(1).WithAlgorithm(core.GCRA).WithMaxDelay(time.Second).WithAlgorithm(core.GCRA)}, nil, "MaxDelay applies to LeakyBucket only"},
		{[]core.Limit{core.PerSecond(1)}, []core.Option{core.WithCapacity(0)}, "capacity must be >= 1"},
	} {
		_, err := core.NewStack(c.layers, c.opts...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewStack(%v): %v, want an error containing %q", c.layers, err, c.want)
		}
	}
}

// TestStackExactAdmission: many goroutines at one frozen instant; the stack
// admits exactly what its tightest layer allows, and every layer is charged
// exactly what the stack admitted.
func TestStackExactAdmission(t *testing.T) {
	t.Parallel()
	clk := coretest.NewClock(t0)
	s, err := core.NewStack([]core.Limit{
		core.PerMinute(100),
		core.PerMinute(40).WithAlgorithm(core.FixedWindow),
		core.PerSecond(60).WithAlgorithm(core.GCRA),
		core.PerMinute(50).WithAlgorithm(core.SlidingLog),
	}, core.WithClock(clk), core.WithCapacity(64))
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{"a", "b", "c"}
	var admitted [3]atomic.Int64
	var wg sync.WaitGroup
	for g := range 48 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 30 {
				k := (g + i) % len(keys)
				if d, err := s.Allow(ctx, keys[k], 1); err == nil && d.Allowed {
					admitted[k].Add(1)
				}
			}
		}()
	}
	wg.Wait()
	for k, key := range keys {
		if n := admitted[k].Load(); n != 40 {
			t.Errorf("key %s: %d admitted, want 40", key, n)
		}
		// Layer 0 (100/min) holds exactly 60, layer 2 (GCRA 60/s) 20.
		if d, _ := s.Layer(0).Allow(ctx, key, 1); d.Remaining != 59 {
			t.Errorf("key %s: layer 0 remaining %d after one more, want 59", key, d.Remaining)
		}
		if d, _ := s.Layer(2).Allow(ctx, key, 1); d.Remaining != 19 {
			t.Errorf("key %s: layer 2 remaining %d after one more, want 19", key, d.Remaining)
		}
		if d, _ := s.Layer(3).Allow(ctx, key, 1); d.Remaining != 9 {
			t.Errorf("key %s: layer 3 (sliding log) remaining %d after one more, want 9", key, d.Remaining)
		}
	}
}

// TestStackOverflow: with the table full of drained keys (none spare), a
// new key is decided against each layer's overflow state, still all or
// nothing.
func TestStackOverflow(t *testing.T) {
	t.Parallel()
	clk := coretest.NewClock(t0)
	s, err := core.NewStack([]core.Limit{
		core.PerMinute(3),
		core.PerMinute(2).WithAlgorithm(core.FixedWindow),
	}, core.WithClock(clk), core.WithCapacity(1))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if d, _ := s.Allow(ctx, "a", 1); !d.Allowed || d.Overflow {
			t.Fatalf("a #%d: %+v", i, d)
		}
	}
	for i, want := range []bool{true, true, false} {
		d, _ := s.Allow(ctx, "b", 1)
		if d.Allowed != want || !d.Overflow {
			t.Fatalf("b #%d: %+v, want allowed=%v from the overflow state", i, d, want)
		}
	}
	// The token-bucket layer's overflow state was charged twice, not three
	// times: one more fits it.
	if d, _ := s.Layer(0).Allow(ctx, "c", 1); !d.Allowed || !d.Overflow || d.Remaining != 0 {
		t.Fatalf("layer 0 overflow after the stack: %+v", d)
	}
}

// TestStackRemainingOfDenial: the layer named by a denial is the one with
// the longest wait, but Remaining is the least any denying layer has left.
func TestStackRemainingOfDenial(t *testing.T) {
	t.Parallel()
	clk := coretest.NewClock(t0)
	s, err := core.NewStack([]core.Limit{
		core.PerMinute(5).WithName("slow").WithAlgorithm(core.GCRA),
		core.PerSecond(10).WithBurst(2).WithName("fast").WithAlgorithm(core.GCRA),
	}, core.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	s.Allow(ctx, "k", 2)
	clk.Advance(time.Second)
	s.Allow(ctx, "k", 2)
	// slow (GCRA: 12 s apart, 60 s span, next free at 48 s) has 1 left
	// and needs 11 s more for a second; fast has 0 and needs
	// 100 ms for one, 200 ms for two.
	d, _ := s.Allow(ctx, "k", 2)
	if d.Allowed || d.Limit.Name != "slow" || d.Remaining != 0 || d.RetryAfter != 11*time.Second {
		t.Fatalf("%+v, want denied by slow after 11s with 0 remaining", d)
	}
}

// TestStackConcurrencyLayer: a stack of 2 in flight and 5/s (GCRA). An
// admission holds a Lease for the concurrency layer; a refusal by either
// layer charges neither; releasing gives the slot back once.
func TestStackConcurrencyLayer(t *testing.T) {
	t.Parallel()
	clk := coretest.NewClock(t0)
	s, err := core.NewStack([]core.Limit{
		core.InFlight(2).WithName("inflight").WithAlgorithm(core.Concurrency),
		core.PerSecond(5).WithName("rate").WithAlgorithm(core.GCRA),
	}, core.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := s.Allow(ctx, "k", 1)
	b, _ := s.Allow(ctx, "k", 1)
	if !a.Allowed || !b.Allowed || a.Lease.IsZero() || b.Lease.IsZero() || b.Limit.Name != "inflight" || b.Remaining != 0 {
		t.Fatalf("two admissions: %+v %+v", a, b)
	}
	// Refused by the concurrency layer (its Period, 1 s, is the hint):
	// GCRA is not charged.
	c, _ := s.Allow(ctx, "k", 1)
	if c.Allowed || c.Limit.Name != "inflight" || c.RetryAfter != time.Second || !c.Lease.IsZero() {
		t.Fatalf("third: %+v", c)
	}
	a.Lease.Release(ctx)
	a.Lease.Release(ctx) // once
	d, _ := s.Allow(ctx, "k", 1)
	if !d.Allowed || d.Limit.Name != "inflight" || d.Remaining != 0 {
		t.Fatalf("after a release: %+v", d)
	}
	// GCRA holds 3 of 5: a cost-2 request is refused by the concurrency
	// layer (nothing free) and charges GCRA nothing either.
	if e, _ := s.Allow(ctx, "k", 2); e.Allowed {
		t.Fatalf("cost 2 with nothing free: %+v", e)
	}
	b.Lease.Release(ctx)
	d.Lease.Release(ctx)
	// Both slots free; GCRA has 2 left, so a cost-2 request passes and
	// leaves both layers at 0.
	e, _ := s.Allow(ctx, "k", 2)
	if !e.Allowed || e.Remaining != 0 {
		t.Fatalf("cost 2 after the releases: %+v", e)
	}
	// Refused by GCRA now (200 ms): the concurrency layer is not charged,
	// so once GCRA refills, releasing e's 2 units leaves room for 2.
	if f, _ := s.Allow(ctx, "k", 1); f.Allowed || f.Limit.Name != "inflight" {
		t.Fatalf("both full: %+v", f)
	}
	e.Lease.Release(ctx)
	if f, _ := s.Allow(ctx, "k", 1); f.Allowed || f.Limit.Name != "rate" || f.RetryAfter != 200*ms {
		t.Fatalf("GCRA empty, slots free: %+v", f)
	}
	clk.Advance(400 * ms)
	g, _ := s.Allow(ctx, "k", 2)
	if !g.Allowed || g.Lease.IsZero() {
		t.Fatalf("after GCRA refilled: %+v", g)
	}
}

// TestStackSlidingLogLayer: an exact sliding log (3 per second) stacked
// first on a fixed window (5 per 10 s): each checks before either charges.
func TestStackSlidingLogLayer(t *testing.T) {
	t.Parallel()
	for _, cache := range []bool{true, false} {
		clk := coretest.NewClock(t0)
		s, err := core.NewStack([]core.Limit{
			core.PerSecond(3).WithName("log").WithAlgorithm(core.SlidingLog),
			(core.Limit{Events: 5, Period: 10 * time.Second, Name: "ten"}).WithAlgorithm(core.FixedWindow),
			core.PerSecond(4).WithName("sub").WithAlgorithm(core.SlidingWindow).WithSubWindows(4),
		}, core.WithClock(clk), core.WithDenyCache(cache))
		if err != nil {
			t.Fatal(err)
		}
		type want struct {
			at      time.Duration
			cost    int
			allowed bool
			limit   string
			rem     int
			retry   time.Duration
		}
		for i, w := range []want{
			{0, 2, true, "log", 1, 0},                  // log 0:2, ten 2, sub 0:2
			{300 * ms, 1, true, "log", 0, 0},           // log 0:2 300:1, ten 3, sub 0:2 250:1
			{400 * ms, 1, false, "log", 0, 600 * ms},   // 0:2 leaves the log at 1 s
			{1000 * ms, 2, true, "log", 0, 0},          // log 300:1 1000:2 and ten 5 both leave 0: the first is named
			{1400 * ms, 1, false, "ten", 0, 8600 * ms}, // the window is full until 10 s; the log would admit
			{10 * time.Second, 3, true, "log", 0, 0},   // nothing charged by the refusal above
			{10 * time.Second, 1, false, "log", 0, 1000 * ms},
		} {
			clk.Set(t0.Add(w.at))
			d, err := s.Allow(ctx, "k", w.cost)
			if err != nil {
				t.Fatal(err)
			}
			got := want{w.at, w.cost, d.Allowed, d.Limit.Name, d.Remaining, d.RetryAfter}
			if got != w {
				t.Errorf("cache=%v step %d:\n got %+v\nwant %+v", cache, i, got, w)
			}
		}
	}
}
