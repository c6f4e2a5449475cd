package overload_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/overload"
)

// clock is a test clock that moves only when told to.
type clock struct{ ns atomic.Int64 }

func (c *clock) Now() int64              { return c.ns.Load() }
func (c *clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// A service answers 100 requests in a 100 ms bucket, each in 5 ms: with
// the CPU past 0.8 it holds 100 × 5 ms / 100 ms = 5 in flight, and sheds
// the sixth with a wait of one completion's time.
func ExampleNewBBR() {
	clk := &clock{}
	clk.ns.Store(time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC).UnixNano())
	var cpu atomic.Value
	cpu.Store(0.3)
	lim, err := overload.NewBBR(overload.BBRConfig{
		CPU:   func() float64 { return cpu.Load().(float64) },
		Clock: clk,
	})
	if err != nil {
		panic(err)
	}
	defer lim.Close()
	ctx := context.Background()

	// A calm bucket teaches the limiter the service's throughput and
	// latency: 100 requests, each answered in 5 ms.
	var leases []core.Lease
	for range 100 {
		d, _ := lim.Allow(ctx, "", 1)
		leases = append(leases, d.Lease)
	}
	clk.Advance(5 * time.Millisecond)
	for _, l := range leases {
		l.Release(ctx) // in a server, the adapter does it when the request ends
	}
	clk.Advance(100 * time.Millisecond)

	cpu.Store(0.95)
	admitted := 0
	for {
		d, _ := lim.Allow(ctx, "", 1)
		if d.Shed {
			fmt.Println("admitted", admitted, "then shed; retry after", d.RetryAfter, "limit", d.Limit.Events)
			break
		}
		admitted++
	}
	st := lim.Stats()
	fmt.Println("in flight", st.InFlight, "min latency", st.MinLatency)
	// Output:
	// admitted 5 then shed; retry after 1ms limit 5
	// in flight 5 min latency 5ms
}
