package fleetsim_test

import (
	"fmt"
	"time"

	"github.com/floodgate/floodgate/internal/fleetsim"
)

// Two regions 80 ms apart share 1,000 requests a second; each offers
// 800 a second. With a grantor per region leasing from the global store,
// every decision is made in memory or in the region, and no second
// admits more than its bound.
func Example() {
	r, err := fleetsim.Run(fleetsim.Config{
		Strategy:  fleetsim.RegionalLeases,
		Limit:     fleetsim.Limit{Events: 1000, Period: time.Second, Burst: 1000, Algorithm: fleetsim.GCRA},
		Regions:   2,
		Instances: 2,
		Local:     250 * time.Microsecond,
		Remote:    40 * time.Millisecond,
		Phases:    []fleetsim.Phase{{Start: 0, Rates: []float64{800, 800}}},
		Duration:  3 * time.Second,
		Seed:      1,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ws := r.Windows(time.Second)
	fmt.Println("admitted per second:", ws.Counts)
	fmt.Println("bound per second:", ws.Bound)
	fmt.Println("windows over the bound:", ws.OverBound(), "over the trace of charges:", ws.OverTrace())
	fmt.Println("p99 latency:", r.Latency(99))
	// Output:
	// admitted per second: [912 961 1065]
	// bound per second: [2400 2400 2400]
	// windows over the bound: 0 over the trace of charges: 0
	// p99 latency: 500µs
}
