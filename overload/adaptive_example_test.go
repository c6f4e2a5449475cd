package overload_test

import (
	"context"
	"fmt"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/overload"
)

// An adaptive limit admits up to its limit in flight (2 to start with:
// its slow start doubles it while the latency holds); what comes beyond
// is shed, with a RetryAfter, while a critical request still finds
// room. Each admission's Lease ends when the
// request does, telling the limit how long it took.
func ExampleNewAdaptive() {
	lim, err := overload.NewAdaptive(overload.AdaptiveConfig{})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	var leases []core.Lease
	for range 25 {
		d, _ := lim.Allow(ctx, "", 1)
		if d.Allowed {
			leases = append(leases, d.Lease)
		}
	}
	d, _ := lim.Allow(ctx, "", 1)
	fmt.Println("admitted:", len(leases), "then shed:", d.Shed, "by", d.Limit.Name, d.Limit.Events)
	fmt.Println("retry later:", d.RetryAfter > 0)

	crit, _ := lim.Allow(overload.NewContext(ctx, overload.Critical), "", 1)
	fmt.Println("critical admitted:", crit.Allowed)

	for _, l := range leases {
		_ = l.End(ctx, core.EndDone) // served: its latency counts
	}
	_ = crit.Lease.End(ctx, core.EndDropped) // timed out: a sign of overload
	fmt.Println("in flight:", lim.Stats().InFlight)
	// Output:
	// admitted: 2 then shed: true by adaptive 2
	// retry later: true
	// critical admitted: true
	// in flight: 0
}

// Acquire and Token.End are Allow and its Lease without the Decision
// and with no allocation, for code that ends each admission exactly
// once.
func ExampleAdaptive_Acquire() {
	lim, err := overload.NewAdaptive(overload.AdaptiveConfig{MinLimit: 2, InitialLimit: 2})
	if err != nil {
		panic(err)
	}
	a, ok1 := lim.Acquire(overload.Normal, 1)
	_, ok2 := lim.Acquire(overload.Normal, 1)
	_, ok3 := lim.Acquire(overload.Normal, 1)
	fmt.Println(ok1, ok2, ok3)
	a.End(core.EndDone)
	_, ok4 := lim.Acquire(overload.Normal, 1)
	fmt.Println(ok4, lim.Stats().Shed)
	// Output:
	// true true false
	// true [0 1 0]
}
