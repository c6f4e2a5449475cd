package obstest

import (
	"context"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/overload"
)

// Shed is a shed of a concurrency limit named "adaptive", over HTTP.
var Shed = core.Event{Transport: "http", Outcome: core.OutcomeShed, Key: "a", Cost: 1,
	Decision: core.Decision{Shed: true, Limit: core.InFlight(8).WithName("adaptive"), RetryAfter: time.Second}}

// ObserveSheds has obs observe six sheds: two Sheddable, one Normal, one
// Critical, one of priority 5 and one whose context carries none (which
// counts as Normal). An observer counting sheds by priority then has
// sheddable 2, normal 2, critical 1 and 5 1.
func ObserveSheds(obs core.Observer) {
	for _, p := range []overload.Priority{overload.Sheddable, overload.Sheddable, overload.Normal, overload.Critical, 5} {
		obs.Observe(overload.NewContext(context.Background(), p), Shed)
	}
	obs.Observe(context.Background(), Shed)
}

// ShedNoAllocs fails t if obs allocates to count a shed of each named
// priority once that priority's series exist: sheds are the overloaded
// path.
func ShedNoAllocs(t testing.TB, obs core.Observer) {
	t.Helper()
	ctxs := []context.Context{context.Background(), overload.NewContext(context.Background(), overload.Sheddable), overload.NewContext(context.Background(), overload.Critical)}
	for _, ctx := range ctxs {
		obs.Observe(ctx, Shed)
	}
	if n := testing.AllocsPerRun(200, func() {
		for _, ctx := range ctxs {
			obs.Observe(ctx, Shed)
		}
	}); n != 0 {
		t.Errorf("%v allocations for a shed of each named priority", n)
	}
}
