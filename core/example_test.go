package core_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/core/coretest"
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
	// core: limit period "fortnight" is not a unit (s, min, h, d) or a positive duration like 10s
}

// The token bucket follows x/time/rate's float arithmetic, which admits a
// request once its wait truncates to zero nanoseconds; its waits can be a
// nanosecond short of the ideal, and are exact all the same: a request at
// that instant is admitted. Headers round waits up to whole seconds.
func ExampleNew_algorithms() {
	clock := coretest.NewClock(time.Unix(60, 0))
	for _, alg := range []core.Algorithm{core.TokenBucket, core.GCRA, core.FixedWindow, core.SlidingWindow} {
		lim := core.MustNew(core.PerMinute(3), core.WithAlgorithm(alg), core.WithClock(clock))
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
