package overload_test

import (
	"context"
	"fmt"
	"time"

	"github.com/floodgate/floodgate/core"

	"github.com/floodgate/floodgate/overload"
)

// A request's priority travels in its context; a request with none set
// is Normal.
func ExampleNewContext() {
	ctx := overload.NewContext(context.Background(), overload.Critical)
	fmt.Println(overload.PriorityOf(ctx) == overload.Critical)
	fmt.Println(overload.PriorityOf(context.Background()) == overload.Normal)
	// Output:
	// true
	// true
}

// A client's quota first, then the service's guard: a request the guard
// sheds is not charged to the client's quota.
func ExampleProtect() {
	quota := core.MustNew(core.PerMinute(2))
	busy := true
	guard := shedWhile(&busy)
	lim := overload.Protect(quota, guard)
	ctx := context.Background()

	d, _ := lim.Allow(ctx, "alice", 1)
	fmt.Println("shed:", d.Shed)
	busy = false
	d, _ = lim.Allow(ctx, "alice", 1)
	fmt.Println("allowed:", d.Allowed, "remaining:", d.Remaining)
	// Output:
	// shed: true
	// allowed: true remaining: 1
}

// shedWhile is a stand-in overload guard: it sheds while *busy.
func shedWhile(busy *bool) core.Limiter { return busyGuard{busy} }

type busyGuard struct{ busy *bool }

func (g busyGuard) Allow(context.Context, string, int) (core.Decision, error) {
	if *g.busy {
		return core.Decision{Shed: true, RetryAfter: time.Second}, nil
	}
	return core.Decision{Allowed: true}, nil
}

func (busyGuard) Refund(context.Context, string, int) error { return nil }
