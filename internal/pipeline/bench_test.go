package pipeline_test

import (
	"context"
	"testing"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/pipeline"
)

// BenchmarkObserveCost measures what an observer costs a request through
// the pipeline, apart from the observer's own work: none, a no-op one
// (building the event, the sampling draw, one request in TimingEvery
// timed), and a no-op one with every request timed (two clock readings).
func BenchmarkObserveCost(b *testing.B) {
	lim := &fixed{d: core.Decision{Allowed: true, Limit: core.PerSecond(10).WithName("x"), Remaining: 5}}
	for _, name := range []string{"nil", "noop", "noop-timed"} {
		var obs core.Observer
		if name != "nil" {
			obs = core.ObserverFunc(func(context.Context, core.Event) {})
		}
		p := newPipeline(core.FailClosed, obs)
		if name == "noop-timed" {
			pipeline.TimeEvery(p)
		}
		b.Run(name, func(b *testing.B) {
			var res pipeline.Result
			ctx := context.Background()
			for b.Loop() {
				p.Run(ctx, req{key: "k", cost: 1}, lim, 0, &res)
			}
		})
	}
}
