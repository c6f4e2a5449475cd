package fields_test

import (
	"fmt"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/fields"
)

// A denial's fields, as gRPC metadata keys.
func Example() {
	d := core.Decision{Limit: core.PerMinute(10).WithName("search"), RetryAfter: 5500 * time.Millisecond, ResetAfter: time.Minute}
	p := fields.NewPolicyText(d.Limit)
	var v fields.Values
	v.Format(d, &p, core.HeadersIETF)
	text := string(v.Text())
	for i := 0; i < v.Len(); i++ {
		f, val := v.Field(i, text)
		fmt.Printf("%s: %s\n", f.Metadata(), val)
	}
	// Output:
	// ratelimit-policy: "search";q=10;w=60
	// ratelimit: "search";r=0;t=6
	// retry-after: 6
}
