package core_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
)

func Example() {
	clock := coretest.NewClock(time.Unix(0, 0))
	lim, err := core.New(core.PerSecond(2).WithName("api"), core.WithClock(clock))
	if err != nil {
		panic(err)
	}
	for i := 0; i < 3; i++ {
		d, _ := lim.Allow(context.Background(), "203.0.113.7", 1)
		fmt.Printf("allowed=%v remaining=%d retry-after=%v\n", d.Allowed, d.Remaining, d.RetryAfter)
	}
	clock.Advance(500 * time.Millisecond)
	d, _ := lim.Allow(context.Background(), "203.0.113.7", 1)
	fmt.Printf("after 500ms: allowed=%v\n", d.Allowed)
	// Output:
	// allowed=true remaining=1 retry-after=0s
	// allowed=true remaining=0 retry-after=0s
	// allowed=false remaining=0 retry-after=500ms
	// after 500ms: allowed=true
}

func ExampleParseLimit() {
	l, err := core.ParseLimit("1000/h burst=50 name=search")
	fmt.Println(l.Events, l.Period, l.Burst, l.Name, err)
	_, err = core.ParseLimit("100/fortnight")
	fmt.Println(err)
	// Output:
	// 1000 1h0m0s 50 search <nil>
	// core: limit "100/fortnight": period "fortnight" is not a unit (s, min, h, d) or a positive duration like 10s
}

// A policy is one comparable value: the same one built fluently or parsed
// from configuration, given to any store.
func ExampleLimit() {
	api := core.PerMinute(100).WithBurst(20).WithName("api").WithAlgorithm(core.GCRA)
	parsed := core.MustParseLimit("100/min burst=20 name=api algorithm=gcra")
	fmt.Println(api == parsed, api)
	smooth := core.PerSecond(10).WithMaxDelay(2 * time.Second)
	fmt.Println(smooth.Algorithm, smooth)
	bad := core.PerSecond(10).WithAlgorithm(core.GCRA)
	bad.MaxDelay = time.Second
	fmt.Println(bad.Validate())
	// Output:
	// true 100/min burst=20 name=api algorithm=gcra
	// leaky-bucket 10/s algorithm=leaky-bucket max-delay=2s
	// core: MaxDelay applies to LeakyBucket only, not gcra
}

// The token bucket follows x/time/rate's float arithmetic, which admits a
// request once its wait truncates to zero nanoseconds; its waits can be a
// nanosecond short of the ideal, and are exact all the same: a request at
// that instant is admitted. Headers round waits up to whole seconds.
func ExampleNew_algorithms() {
	clock := coretest.NewClock(time.Unix(60, 0))
	for _, alg := range []core.Algorithm{core.TokenBucket, core.GCRA, core.FixedWindow, core.SlidingWindow} {
		lim := core.MustNew(core.PerMinute(3).WithAlgorithm(alg), core.WithClock(clock))
		var d core.Decision
		for i := 0; i < 4; i++ {
			d, _ = lim.Allow(context.Background(), "k", 1)
		}
		fmt.Printf("%-14s 4th request: allowed=%v retry-after=%v reset-after=%v\n", alg, d.Allowed, d.RetryAfter, d.ResetAfter)
	}
	// Output:
	// token-bucket   4th request: allowed=false retry-after=20s reset-after=59.999999999s
	// gcra           4th request: allowed=false retry-after=20s reset-after=1m0s
	// fixed-window   4th request: allowed=false retry-after=1m0s reset-after=1m0s
	// sliding-window 4th request: allowed=false retry-after=1m20s reset-after=2m0s
}

func ExampleErrInvalidCost() {
	lim := core.MustNew(core.PerSecond(10).WithBurst(5))
	_, err := lim.Allow(context.Background(), "k", 6)
	fmt.Println(errors.Is(err, core.ErrInvalidCost))
	fmt.Println(err)
	// Output:
	// true
	// core: invalid cost: more than the limit can ever admit at once: cost 6, at most 5 under 10/s burst=5
}

// A leaky bucket shapes: 4 per second, so one request every 250 ms, each
// admitted with the wait for its turn, up to 600 ms.
func ExampleLimit_WithMaxDelay() {
	clock := coretest.NewClock(time.Unix(0, 0))
	lim, err := core.New(core.PerSecond(4).WithAlgorithm(core.LeakyBucket).WithMaxDelay(600*time.Millisecond), core.WithClock(clock))
	if err != nil {
		panic(err)
	}
	for i := 0; i < 4; i++ {
		d, _ := lim.Allow(context.Background(), "batch-job", 1)
		fmt.Printf("allowed=%v delay=%v retry-after=%v\n", d.Allowed, d.Delay, d.RetryAfter)
	}
	// Output:
	// allowed=true delay=0s retry-after=0s
	// allowed=true delay=250ms retry-after=0s
	// allowed=true delay=500ms retry-after=0s
	// allowed=false delay=0s retry-after=150ms
}

// A warm-up limiter starts a cold key at a third of its rate (Guava's
// default cold factor) and reaches the full rate over the warm-up period.
func ExampleLimit_WithWarmUp() {
	clock := coretest.NewClock(time.Unix(0, 0))
	lim, err := core.New(core.PerSecond(10).WithAlgorithm(core.WarmUp).WithWarmUp(time.Second, 3), core.WithClock(clock))
	if err != nil {
		panic(err)
	}
	for i := 0; i < 7; i++ {
		d, _ := lim.Allow(context.Background(), "cold-key", 1)
		d2, _ := lim.Allow(context.Background(), "cold-key", 1)
		fmt.Printf("at %v: allowed=%v, next in %v\n", time.Duration(clock.Now()), d.Allowed, d2.RetryAfter)
		clock.Advance(d2.RetryAfter)
	}
	// Output:
	// at 0s: allowed=true, next in 280ms
	// at 280ms: allowed=true, next in 240ms
	// at 520ms: allowed=true, next in 200ms
	// at 720ms: allowed=true, next in 160ms
	// at 880ms: allowed=true, next in 120ms
	// at 1s: allowed=true, next in 100ms
	// at 1.1s: allowed=true, next in 100ms
}

// A stack enforces 3 per second and 5 per minute on every key, all or
// nothing: a request one limit refuses is charged to none.
func ExampleNewStack() {
	clock := coretest.NewClock(time.Unix(0, 0))
	s, err := core.NewStack([]core.Limit{
		core.PerSecond(3).WithName("burst"),
		core.PerMinute(5).WithName("minute").WithAlgorithm(core.FixedWindow),
	}, core.WithClock(clock))
	if err != nil {
		panic(err)
	}
	for i := 0; i < 4; i++ {
		d, _ := s.Allow(context.Background(), "user-1", 1)
		fmt.Printf("allowed=%v limit=%s remaining=%d retry-after=%v\n", d.Allowed, d.Limit.Name, d.Remaining, d.RetryAfter)
	}
	clock.Advance(time.Second)
	for i := 0; i < 3; i++ {
		d, _ := s.Allow(context.Background(), "user-1", 1)
		fmt.Printf("allowed=%v limit=%s remaining=%d retry-after=%v\n", d.Allowed, d.Limit.Name, d.Remaining, d.RetryAfter)
	}
	// Output:
	// allowed=true limit=burst remaining=2 retry-after=0s
	// allowed=true limit=burst remaining=1 retry-after=0s
	// allowed=true limit=burst remaining=0 retry-after=0s
	// allowed=false limit=burst remaining=0 retry-after=333.333333ms
	// allowed=true limit=minute remaining=1 retry-after=0s
	// allowed=true limit=minute remaining=0 retry-after=0s
	// allowed=false limit=minute remaining=0 retry-after=59s
}

// A concurrency limit counts requests in flight: each admission holds a
// Lease until it is released, whenever the request ends. A refusal's
// RetryAfter is the limit's Period, a hint: no one knows when a request in
// flight will end.
func ExampleInFlight() {
	lim := core.MustNew(core.InFlight(2).WithName("reports").WithAlgorithm(core.Concurrency))
	ctx := context.Background()
	first, _ := lim.Allow(ctx, "tenant-7", 1)
	second, _ := lim.Allow(ctx, "tenant-7", 1)
	fmt.Printf("allowed=%v remaining=%d, allowed=%v remaining=%d\n", first.Allowed, first.Remaining, second.Allowed, second.Remaining)
	third, _ := lim.Allow(ctx, "tenant-7", 1)
	fmt.Printf("third: allowed=%v retry-after=%v lease=%v\n", third.Allowed, third.RetryAfter, !third.Lease.IsZero())

	// The first request ends; releasing twice gives its slot back once.
	first.Lease.Release(ctx)
	first.Lease.Release(ctx)
	again, _ := lim.Allow(ctx, "tenant-7", 1)
	fmt.Printf("after a release: allowed=%v remaining=%d\n", again.Allowed, again.Remaining)
	fourth, _ := lim.Allow(ctx, "tenant-7", 1)
	fmt.Printf("and then: allowed=%v\n", fourth.Allowed)
	second.Lease.Release(ctx)
	again.Lease.Release(ctx)
	// Output:
	// allowed=true remaining=1, allowed=true remaining=0
	// third: allowed=false retry-after=1s lease=false
	// after a release: allowed=true remaining=0
	// and then: allowed=false
}

// The exact sliding log: 3 per second over any second, not per clock
// window. A request waits for the oldest admission to leave the window.
func ExampleSlidingLog() {
	clock := coretest.NewClock(time.Unix(0, 0))
	lim := core.MustNew(core.PerSecond(3).WithAlgorithm(core.SlidingLog), core.WithClock(clock))
	for _, at := range []time.Duration{0, 400 * time.Millisecond, 900 * time.Millisecond, 950 * time.Millisecond, 1000 * time.Millisecond} {
		clock.Set(time.Unix(0, int64(at)))
		d, _ := lim.Allow(context.Background(), "k", 1)
		fmt.Printf("at %v: allowed=%v remaining=%d retry-after=%v\n", at, d.Allowed, d.Remaining, d.RetryAfter)
	}
	// Output:
	// at 0s: allowed=true remaining=2 retry-after=0s
	// at 400ms: allowed=true remaining=1 retry-after=0s
	// at 900ms: allowed=true remaining=0 retry-after=0s
	// at 950ms: allowed=false remaining=0 retry-after=50ms
	// at 1s: allowed=true remaining=0 retry-after=0s
}

// Four sub-windows of 250 ms: the current one and the three before it
// count, so an admission stops counting when its sub-window is a second
// old, up to 250 ms before the exact log would let it go.
func ExampleLimit_WithSubWindows() {
	clock := coretest.NewClock(time.Unix(0, 0))
	lim := core.MustNew(core.PerSecond(3).WithAlgorithm(core.SlidingWindow).WithSubWindows(4), core.WithClock(clock))
	for _, at := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 600 * time.Millisecond, 800 * time.Millisecond, 1000 * time.Millisecond} {
		clock.Set(time.Unix(0, int64(at)))
		d, _ := lim.Allow(context.Background(), "k", 1)
		fmt.Printf("at %v: allowed=%v remaining=%d retry-after=%v\n", at, d.Allowed, d.Remaining, d.RetryAfter)
	}
	// Output:
	// at 100ms: allowed=true remaining=2 retry-after=0s
	// at 200ms: allowed=true remaining=1 retry-after=0s
	// at 600ms: allowed=true remaining=0 retry-after=0s
	// at 800ms: allowed=false remaining=0 retry-after=200ms
	// at 1s: allowed=true remaining=1 retry-after=0s
}

// A log needs an entry per admission it may hold: the cap bounds memory
// per key, and a limit beyond it fails at New.
func ExampleLimit_WithMaxEntries() {
	_, err := core.New(core.PerMinute(5000).WithAlgorithm(core.SlidingLog))
	fmt.Println(err)
	_, err = core.New(core.PerMinute(5000).WithAlgorithm(core.SlidingLog).WithMaxEntries(5000))
	fmt.Println(err)
	// Output:
	// core: SlidingLog: 5000 events per period need up to 5000 log entries per key (16 bytes each), more than MaxEntries allows (1024); raise the cap with WithMaxEntries(5000) or use SlidingWindow (with sub-windows for a closer count)
	// <nil>
}

// Two observers hear of the same events: one counts refusals, the other
// logs them.
func ExampleJoinObservers() {
	refused := 0
	count := core.ObserverFunc(func(_ context.Context, e core.Event) {
		if e.Outcome == core.OutcomeDenied {
			refused++
		}
	})
	log := core.ObserverFunc(func(_ context.Context, e core.Event) {
		fmt.Println(e.Transport, e.Outcome)
	})
	obs := core.JoinObservers(count, nil, log)
	obs.Observe(context.Background(), core.Event{Transport: "http", Outcome: core.OutcomeDenied})
	obs.Observe(context.Background(), core.Event{Transport: "grpc", Outcome: core.OutcomeAllowed})
	fmt.Println("refused:", refused, "none joined:", core.JoinObservers(nil) == nil)
	// Output:
	// http denied
	// grpc allowed
	// refused: 1 none joined: true
}
