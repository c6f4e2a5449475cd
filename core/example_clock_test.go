package core_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/floodgate/floodgate/core"
)

// testClock is the test clock core.Clock's documentation shows: a program
// outside this module writes its own, since the module's is internal.
type testClock struct{ ns atomic.Int64 }

func (c *testClock) Now() int64              { return c.ns.Load() }
func (c *testClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// ExampleWithClock drives a limiter with a clock of the program's own that
// moves only when told to, so that every wait is exact.
func ExampleWithClock() {
	clock := &testClock{}
	clock.ns.Store(time.Unix(0, 0).UnixNano())
	lim, err := core.New(core.PerSecond(10).WithAlgorithm(core.GCRA), core.WithClock(clock))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for range 10 {
		lim.Allow(ctx, "k", 1)
	}
	d, _ := lim.Allow(ctx, "k", 1)
	fmt.Println(d.Allowed, d.RetryAfter)
	clock.Advance(d.RetryAfter)
	d, _ = lim.Allow(ctx, "k", 1)
	fmt.Println(d.Allowed, d.Remaining)
	// Output:
	// false 100ms
	// true 0
}
