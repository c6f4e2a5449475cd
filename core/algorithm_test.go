package core_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
)

// t0 is on a whole second, so fixed and sliding windows start there.
var t0 = coretest.T0

const ms = time.Millisecond

// TestDecisionTables plays the decision tables every store shares
// (coretest.Tables) with the deny cache on and off: the in-memory limiter
// must match them exactly.
func TestDecisionTables(t *testing.T) {
	t.Parallel()
	for _, tab := range coretest.Tables() {
		for _, cache := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/cache=%v", tab.Name, cache), func(t *testing.T) {
				coretest.Run(t, tab, func(t testing.TB, tab coretest.Table, clk *coretest.Clock) core.Limiter {
					lim, err := core.New(tab.Limit, core.WithClock(clk), core.WithDenyCache(cache))
					if err != nil {
						t.Fatal(err)
					}
					return lim
				}, 0)
			})
		}
	}
}
