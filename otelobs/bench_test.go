package otelobs_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/internal/httpmwtest"
	"github.com/floodgate/floodgate/otelobs"
)

// benchEvents returns n events spread over 16 limit names, both
// transports, every outcome, shadow and not, with latencies, some
// overflow decisions, held denials and store errors: the paths Observe
// takes in production, each with its own series (promobs's benchmark
// events).
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

// sdkObserver returns an Observer on an SDK MeterProvider read by a
// ManualReader, which keeps what it aggregates until collected, as a
// periodic reader does between exports.
func sdkObserver(tb testing.TB, opts ...otelobs.Option) (*otelobs.Observer, *sdkmetric.ManualReader) {
	tb.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	obs, err := otelobs.New(append([]otelobs.Option{otelobs.WithMeterProvider(mp)}, opts...)...)
	if err != nil {
		tb.Fatal(err)
	}
	return obs, reader
}

// sampledSpan returns a context whose span is recording and sampled, as a
// traced request's is: the SDK then also offers exemplars, and refusals
// and store errors add span events.
func sampledSpan(tb testing.TB) context.Context {
	tb.Helper()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewInMemoryExporter()))
	ctx, span := tp.Tracer("bench").Start(context.Background(), "request")
	tb.Cleanup(func() { span.End() })
	return ctx
}

// BenchmarkObserve measures Observe on the SDK's MeterProvider once every
// series exists, over 1024 events of 16 limits, 2 transports, 8 outcomes
// and shadow or not: from every core at once (par) and from one goroutine
// (seq); in a context without a span, and in one with a sampled span,
// which adds exemplars and the span events of refusals and store errors.
// On the API's no-op MeterProvider (provider=noop) it measures this
// package's own part: finding the series and calling the instruments.
func BenchmarkObserve(b *testing.B) {
	for _, bc := range []struct {
		provider string
		span     bool
	}{{"sdk", false}, {"sdk", true}, {"noop", false}} {
		span := bc.span
		obs, _ := sdkObserver(b)
		if bc.provider == "noop" {
			var err error
			if obs, err = otelobs.New(otelobs.WithMeterProvider(noop.NewMeterProvider())); err != nil {
				b.Fatal(err)
			}
		}
		events := benchEvents(1024)
		ctx := context.Background()
		if span {
			ctx = sampledSpan(b)
		}
		for _, e := range events {
			obs.Observe(ctx, e) // make every series first
		}
		b.Run(fmt.Sprintf("provider=%s/span=%t/mode=seq", bc.provider, span), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				obs.Observe(ctx, events[i&1023])
			}
		})
		b.Run(fmt.Sprintf("provider=%s/span=%t/mode=par", bc.provider, span), func(b *testing.B) {
			var next atomic.Int64
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				i := int(next.Add(331))
				for pb.Next() {
					obs.Observe(ctx, events[i&1023])
					i++
				}
			})
		})
	}
}

// BenchmarkAdded measures what observing adds to a whole request: the
// same httpmw middleware, on the same in-memory limiter and 1024 distinct
// client addresses, with no observer, with one that does nothing (the
// adapters' own part) and with an Observer of this package on the SDK.
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
	for _, with := range []string{"none", "noop", "otelobs"} {
		lim, err := core.New(limit, core.WithCapacity(2*nKeys))
		if err != nil {
			b.Fatal(err)
		}
		var opts []httpmw.Option
		switch with {
		case "noop":
			opts = append(opts, httpmw.WithObserver(core.ObserverFunc(func(context.Context, core.Event) {})))
		case "otelobs":
			obs, _ := sdkObserver(b)
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
