package obstest_test

import (
	"context"
	"fmt"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/obstest"
	"github.com/floodgate/floodgate/overload"
)

// counter counts sheds by priority, as the metrics observers do.
type counter map[overload.Priority]int

func (c counter) Observe(ctx context.Context, e core.Event) {
	if e.Outcome == core.OutcomeShed {
		c[overload.PriorityOf(ctx)]++
	}
}

func Example() {
	c := counter{}
	obstest.ObserveSheds(c)
	fmt.Println(c[overload.Sheddable], c[overload.Normal], c[overload.Critical], c[5])
	// Output: 2 2 1 1
}
