package overload_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/overload"
)

// A client's throttle after its backend accepted 4 requests and refused
// 6: it rejects (6+4 − 2·4) / (6+4 + 1) = 2/11 of new requests, and says
// so in the error it returns instead of sending one. (Rand is fixed here so
// that the rejection shows; leave it out for math/rand/v2's.)
func ExampleThrottle() {
	th, err := overload.NewThrottle(overload.ThrottleConfig{Rand: func() float64 { return 0.1 }})
	if err != nil {
		panic(err)
	}
	for i := range 10 {
		tk, ok := th.Allow()
		if !ok {
			panic("rejected")
		}
		// ... send the request, read the answer ...
		if i < 4 {
			tk.End(core.EndDone, 0) // answered
		} else {
			tk.End(core.EndDropped, 0) // refused for overload: 429, 503, …
		}
	}
	fmt.Printf("rejecting %.4f\n", th.Probability())
	if _, ok := th.Allow(); !ok {
		err := th.Rejection()
		fmt.Println(errors.Is(err, overload.ErrThrottled))
	}
	// Output:
	// rejecting 0.1818
	// true
}

// A refusal's Retry-After is remembered: a request rejected locally says
// how much of the backend's wait is left.
func ExampleThrottle_Rejection() {
	th, err := overload.NewThrottle(overload.ThrottleConfig{Rand: func() float64 { return 0 }})
	if err != nil {
		panic(err)
	}
	tk, _ := th.Allow()
	tk.End(core.EndDropped, 30*time.Second) // a 503 with Retry-After: 30
	if _, ok := th.Allow(); !ok {
		fmt.Println(th.Rejection().RetryAfter.Round(time.Second))
	}
	// Output:
	// 30s
}
