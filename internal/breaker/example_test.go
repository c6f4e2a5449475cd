package breaker_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/floodgate/floodgate/internal/breaker"
	"github.com/floodgate/floodgate/internal/coretest"
)

// A breaker that needs two calls in its window, half of them failed: two
// failures open it; after the open period one caller probes, and its
// success closes it again.
func Example() {
	clk := coretest.NewClock(time.Unix(1_700_000_000, 0))
	b, err := breaker.New(breaker.Config{
		Rule: breaker.Rule{
			Window: 10 * time.Second, MinCalls: 2, FailureRate: 50,
			OpenFor: time.Second, MaxOpenFor: 4 * time.Second,
		},
		Clock:         clk,
		OnStateChange: func(from, to breaker.State) { fmt.Printf("%v -> %v\n", from, to) },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	down := errors.New("connection refused")
	b.Failure(down, false)
	b.Failure(down, false)
	fmt.Println("closed:", b.Closed(), "probe now:", b.TryProbe())

	clk.Advance(time.Second)
	probe := b.TryProbe()
	fmt.Println("probe:", probe, "second probe:", b.TryProbe())
	b.Success(probe)
	fmt.Println(b.State(), "opens:", b.Opens(), "failures:", b.Failures())
	// Output:
	// closed -> open
	// closed: false probe now: false
	// open -> half-open
	// probe: true second probe: false
	// half-open -> closed
	// closed opens: 1 failures: 2
}
