package promobs_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/promobs"
)

// benchEvents returns n events spread over 16 limit names, both
// transports, every outcome, shadow and not, with latencies, some
// overflow decisions, held denials and store errors: the paths Observe
// takes in production, each with its own series.
func benchEvents(n int) []core.Event {
	events := make([]core.Event, n)
	for i := range events {
		out := core.Outcome(i % (int(core.OutcomeCanceled) + 1))
		e := core.Event{
			Transport: []string{"http", "grpc"}[i/3%2],
			Outcome:   out,
			Key:       fmt.Sprintf("client-%d", i),
			Cost:      1,
			Latency:   time.Duration(200+i%5000) * time.Nanosecond,
			Shadow:    i%7 == 0,
		}
		switch out {
		case core.OutcomeAllowed, core.OutcomeShaped, core.OutcomeDenied:
			e.Decision = core.Decision{
				Allowed:  out != core.OutcomeDenied,
				Limit:    core.PerSecond(10).WithName(fmt.Sprintf("limit-%d", i/11%16)),
				Overflow: i%13 == 0,
			}
			if out == core.OutcomeDenied && i%2 == 0 {
				e.Held = time.Duration(i%900) * time.Millisecond
			}
		case core.OutcomeStoreError:
			e.Failure = core.FailureMode(i / 8 % 2)
		}
		events[i] = e
	}
	return events
}

// BenchmarkObserve measures Observe once every series exists, from all
// cores at once over 1024 events of 16 limits, 2 transports, 8 outcomes
// and shadow or not. The target is <= 50 ns and 0 allocations an event.
func BenchmarkObserve(b *testing.B) {
	obs, err := promobs.New(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	events := benchEvents(1024)
	limits := map[string]bool{}
	for _, e := range events {
		limits[e.Decision.Limit.Name] = true
		obs.Observe(context.Background(), e) // resolve every series first
	}
	if len(limits) != 17 { // 16 names and "" for the events without a decision
		b.Fatalf("%d limit names, want 17", len(limits))
	}
	ctx := context.Background()
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int(next.Add(331))
		for pb.Next() {
			obs.Observe(ctx, events[i&1023])
			i++
		}
	})
}

// BenchmarkObserveSeq is BenchmarkObserve from one goroutine: the cost of
// an observation without another core touching the same counters.
func BenchmarkObserveSeq(b *testing.B) {
	obs, err := promobs.New(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	events := benchEvents(1024)
	for _, e := range events {
		obs.Observe(context.Background(), e) // resolve every series first
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		obs.Observe(ctx, events[i&1023])
	}
}
