package core_test

import (
	"context"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
)

func TestAdaptiveLimitAt(t *testing.T) {
	t.Parallel()
	c := core.AdaptiveConfig{
		Low: core.PerSecond(100), High: core.PerSecond(1000).WithBurst(2000),
		LowMark: 50, HighMark: 90,
	}
	for _, tc := range []struct {
		signal float64
		want   core.Limit
	}{
		{-1, c.High}, {50, c.High},
		{60, core.Limit{Events: 775, Period: time.Second, Burst: 1525}}, // a quarter of the way
		{70, core.Limit{Events: 550, Period: time.Second, Burst: 1050}}, // half
		{89, core.Limit{Events: 122, Period: time.Second, Burst: 147}},  // 1000 - round(0.975×900)
		{90, c.Low}, {1e9, c.Low}, {math.NaN(), c.Low},
	} {
		if got := c.LimitAt(tc.signal); got != tc.want {
			t.Errorf("LimitAt(%v) = %v, want %v", tc.signal, got, tc.want)
		}
	}
}

// TestAdaptiveUpdate: Update reads the signal and sets the limit; keys keep
// their state across the change (GCRA: the time owed).
func TestAdaptiveUpdate(t *testing.T) {
	t.Parallel()
	var load atomic.Int64
	clk := coretest.NewClock(t0)
	lim, err := core.NewAdaptive(core.AdaptiveConfig{
		Low: core.PerSecond(10).WithAlgorithm(core.GCRA), High: core.PerSecond(20).WithAlgorithm(core.GCRA),
		Signal:  func() float64 { return float64(load.Load()) },
		LowMark: 0, HighMark: 100,
	}, core.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	defer lim.Close()
	ctx := context.Background()
	if lim.Limit() != core.PerSecond(20).WithAlgorithm(core.GCRA) {
		t.Fatalf("idle: %v", lim.Limit())
	}
	// 20/s: 10 requests owe 500ms of a 1s span; 10 left.
	d, _ := lim.Allow(ctx, "k", 10)
	if d.Remaining != 10 {
		t.Fatalf("%+v", d)
	}
	load.Store(50)
	if l, err := lim.Update(); err != nil || l != (core.Limit{Events: 15, Period: time.Second, Burst: 15, Algorithm: core.GCRA}) {
		t.Fatalf("half load: %v %v", l, err)
	}
	load.Store(100)
	if l, _ := lim.Update(); l != core.PerSecond(10).WithAlgorithm(core.GCRA) || lim.Limit() != l {
		t.Fatalf("full load: %v", l)
	}
	// 10/s: the key still owes 500ms; one more owes 600ms of 1s: 4 left.
	d, _ = lim.Allow(ctx, "k", 1)
	if !d.Allowed || d.Remaining != 4 || d.ResetAfter != 600*ms || d.Limit != core.PerSecond(10).WithAlgorithm(core.GCRA) {
		t.Fatalf("%+v", d)
	}
}

func TestAdaptiveValidates(t *testing.T) {
	t.Parallel()
	sig := func() float64 { return 0 }
	ok := core.AdaptiveConfig{Low: core.PerSecond(1), High: core.PerSecond(2), Signal: sig, LowMark: 0, HighMark: 1}
	for name, mod := range map[string]func(c *core.AdaptiveConfig){
		"nil signal":      func(c *core.AdaptiveConfig) { c.Signal = nil },
		"marks reversed":  func(c *core.AdaptiveConfig) { c.LowMark, c.HighMark = 1, 0 },
		"marks equal":     func(c *core.AdaptiveConfig) { c.HighMark = 0 },
		"infinite mark":   func(c *core.AdaptiveConfig) { c.HighMark = math.Inf(1) },
		"NaN mark":        func(c *core.AdaptiveConfig) { c.LowMark = math.NaN() },
		"periods":         func(c *core.AdaptiveConfig) { c.Low = core.PerMinute(1) },
		"names":           func(c *core.AdaptiveConfig) { c.Low = c.Low.WithName("x") },
		"low above high":  func(c *core.AdaptiveConfig) { c.Low = core.PerSecond(3) },
		"burst above":     func(c *core.AdaptiveConfig) { c.Low = c.Low.WithBurst(5) },
		"invalid low":     func(c *core.AdaptiveConfig) { c.Low = core.Limit{} },
		"other algorithm": func(c *core.AdaptiveConfig) { c.Low = c.Low.WithAlgorithm(core.GCRA) },
		"negative every":  func(c *core.AdaptiveConfig) { c.Every = -time.Second },
	} {
		c := ok
		mod(&c)
		if _, err := core.NewAdaptive(c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := core.NewAdaptive(ok, core.WithCapacity(0)); err == nil {
		t.Error("capacity 0 accepted")
	}
	a, err := core.NewAdaptive(ok)
	if err != nil {
		t.Fatal(err)
	}
	a.Close() // no sampler: nothing to stop
}

// TestAdaptiveSampler: the background sampler reads the signal every
// interval and follows it, and Close stops it and waits for its goroutine.
// It runs on real timers, with bounded waits.
func TestAdaptiveSampler(t *testing.T) {
	before := runtime.NumGoroutine()
	var reads atomic.Int64
	var load atomic.Int64
	a, err := core.NewAdaptive(core.AdaptiveConfig{
		Low: core.PerSecond(10), High: core.PerSecond(20),
		Signal:  func() float64 { reads.Add(1); return float64(load.Load()) },
		LowMark: 0, HighMark: 1, Every: time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	load.Store(1)
	// Meanwhile, decisions go on (run with -race).
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				a.Allow(context.Background(), "k", 1)
			}
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for a.Limit() != core.PerSecond(10) || reads.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the sampler did not follow the signal: %d reads, limit %v", reads.Load(), a.Limit())
		}
		time.Sleep(time.Millisecond)
	}
	close(stop)
	wg.Wait()
	a.Close()
	a.Close()
	n := reads.Load()
	time.Sleep(20 * time.Millisecond)
	if reads.Load() != n {
		t.Fatalf("the signal was read %d times after Close", reads.Load()-n)
	}
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before; {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after Close, %d before", runtime.NumGoroutine(), before)
		}
		time.Sleep(time.Millisecond)
	}
}
