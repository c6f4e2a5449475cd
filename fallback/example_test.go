package fallback_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/fallback"
	"github.com/floodgate/floodgate/internal/coretest"
)

// Redis is down: each request is decided by the in-process limiter, and
// once the breaker has counted two calls (its MinCalls here), all failed,
// it opens so that no request waits on Redis.
// Once the open period has passed, one request probes Redis again.
func Example() {
	clock := coretest.NewClock(time.Unix(0, 0))
	redis := coretest.StoreDown(errors.New("dial tcp 10.0.0.7:6379: connection refused"))
	local := core.MustNew(core.PerSecond(2), core.WithClock(clock))
	lim := fallback.MustNew(redis, local,
		fallback.WithClock(clock),
		fallback.WithBreaker(fallback.BreakerConfig{MinCalls: 2}),
		fallback.WithObserver(func(e fallback.Event) {
			switch e.Kind {
			case fallback.EventPrimaryFailed:
				fmt.Println("  primary failed:", e.Err)
			case fallback.EventStateChanged:
				fmt.Println("  breaker:", e.From, "->", e.To)
			}
		}),
	)
	ctx := context.Background()
	for i := 1; i <= 3; i++ {
		d, err := lim.Allow(ctx, "alice", 1)
		fmt.Printf("request %d: allowed=%v err=%v state=%v\n", i, d.Allowed, err, lim.State())
	}
	clock.Advance(time.Second)
	fmt.Println("a second later:", lim.State())
	d, _ := lim.Allow(ctx, "alice", 1)
	fmt.Printf("request 4: allowed=%v state=%v\n", d.Allowed, lim.State())
	fmt.Printf("%+v\n", lim.Stats())
	// Output:
	//   primary failed: core: store allow: dial tcp 10.0.0.7:6379: connection refused
	// request 1: allowed=true err=<nil> state=closed
	//   primary failed: core: store allow: dial tcp 10.0.0.7:6379: connection refused
	//   breaker: closed -> open
	// request 2: allowed=true err=<nil> state=open
	// request 3: allowed=false err=<nil> state=open
	// a second later: half-open
	//   breaker: open -> half-open
	//   primary failed: core: store allow: dial tcp 10.0.0.7:6379: connection refused
	//   breaker: half-open -> open
	// request 4: allowed=true state=open
	// {PrimaryDecisions:0 LocalDecisions:4 PrimaryFailures:3 Opens:2}
}
