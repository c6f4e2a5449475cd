package promobs_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/internal/httpmwtest"
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

// BenchmarkAdded measures what observing adds to a whole request: the
// same httpmw middleware, on the same in-memory limiter and 1024 distinct
// client addresses, with no observer, with one that does nothing (the
// adapters' own part: building the event, the sampled timing, the call)
// and with an Observer of this package. BenchmarkObserve measures this
// package's part alone.
func BenchmarkAdded(b *testing.B) {
	const nKeys = 1 << 10
	reqs := make([]*http.Request, nKeys)
	seen := map[string]bool{}
	for i := range reqs {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = fmt.Sprintf("10.%d.%d.1:1234", i>>8, i&255)
		reqs[i] = r
		seen[r.RemoteAddr] = true
	}
	if len(seen) != nKeys {
		b.Fatalf("%d distinct clients, want %d", len(seen), nKeys)
	}
	byAddr := func(r *http.Request) (string, error) { return r.RemoteAddr, nil }
	limit := core.Limit{Events: 1000, Period: time.Second, Burst: 1 << 30, Name: "bench"}
	bare := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	for _, with := range []string{"none", "noop", "promobs"} {
		lim, err := core.New(limit, core.WithCapacity(2*nKeys))
		if err != nil {
			b.Fatal(err)
		}
		var opts []httpmw.Option
		switch with {
		case "noop":
			opts = append(opts, httpmw.WithObserver(core.ObserverFunc(func(context.Context, core.Event) {})))
		case "promobs":
			obs, err := promobs.New(prometheus.NewRegistry())
			if err != nil {
				b.Fatal(err)
			}
			opts = append(opts, httpmw.WithObserver(obs))
		}
		h := httpmw.MustNew(lim, byAddr, opts...).Handler(bare)
		b.Run(fmt.Sprintf("observer=%s/mode=seq", with), func(b *testing.B) {
			w := httpmwtest.NewWriter()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				w.Reset()
				h.ServeHTTP(w, reqs[i&(nKeys-1)])
			}
		})
		b.Run(fmt.Sprintf("observer=%s/mode=par", with), func(b *testing.B) {
			var next atomic.Int64
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				w := httpmwtest.NewWriter()
				i := int(next.Add(nKeys / 7))
				for pb.Next() {
					w.Reset()
					h.ServeHTTP(w, reqs[i&(nKeys-1)])
					i++
				}
			})
		})
	}
}
