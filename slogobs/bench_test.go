package slogobs_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/slogobs"
)

// BenchmarkObserve measures the paths a busy server takes: an admitted
// request (not logged), and a refusal under a flood, which the sampler
// drops (all but 10 lines a second), from all cores at once.
func BenchmarkObserve(b *testing.B) {
	obs, err := slogobs.New(slog.New(slog.NewTextHandler(discard{}, nil)))
	if err != nil {
		b.Fatal(err)
	}
	limit := core.PerSecond(10).WithName("api")
	keys := make([]string, 256)
	for i := range keys {
		keys[i] = fmt.Sprintf("10.0.%d.%d", i/256, i%256)
	}
	for _, bc := range []struct {
		name string
		e    core.Event
	}{
		{"allowed", core.Event{Transport: "http", Outcome: core.OutcomeAllowed, Admitted: true, Cost: 1, Decision: core.Decision{Allowed: true, Limit: limit}}},
		{"denied-flood", core.Event{Transport: "http", Outcome: core.OutcomeDenied, Cost: 1, Decision: core.Decision{Limit: limit}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				e, i := bc.e, 0
				for pb.Next() {
					e.Key = keys[i&255]
					obs.Observe(context.Background(), e)
					i++
				}
			})
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
