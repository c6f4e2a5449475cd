package overloadsim_test

import (
	"fmt"
	"time"

	"github.com/floodgate/floodgate/internal/overloadsim"
)

// Twice what the server can serve: with no protection the queue grows and
// nothing is answered in time; a static limit of the workers keeps the
// queue empty and answers what the workers can, at the idle server's p99
// (a request that finds every worker busy is refused, so a worker idles
// until the next arrival: 93 %, as Erlang's loss formula says).
func Example() {
	cfg := overloadsim.Config{
		Seed:     1,
		Workers:  10,
		Duration: 3 * time.Second,
		Load:     []overloadsim.Step{{At: 0, Load: 2}},
	}
	fmt.Printf("capacity %.0f req/s, SLO %v, unloaded p99 %v\n", cfg.Capacity(), cfg.SLO(), cfg.UnloadedP99().Round(time.Millisecond))
	for _, f := range []overloadsim.Factory{overloadsim.NewUnprotected, overloadsim.NewStatic} {
		r, err := overloadsim.Run(cfg, f)
		if err != nil {
			fmt.Println(err)
			return
		}
		from, to := time.Second, 3*time.Second
		fmt.Printf("goodput %.0f%%, p99 %v\n", 100*r.Goodput(from, to), r.P99(from, to).Round(time.Millisecond))
	}
	// Output:
	// capacity 2000 req/s, SLO 25ms, unloaded p99 14ms
	// goodput 0%, p99 1.502s
	// goodput 93%, p99 14ms
}
