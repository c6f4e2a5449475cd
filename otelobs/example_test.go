package otelobs_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/keyfunc"
	"github.com/floodgate/floodgate/otelobs"
)

// stopped is a clock that stands still, so that the example's retry-after
// is exact.
type stopped int64

func (s stopped) Now() int64 { return int64(s) }

// An Observer records what the middleware reports on a MeterProvider, and
// the refusal on the request's span. Here the provider is the SDK's with a
// ManualReader, and the spans go to an in-memory exporter; a service
// would export both (OTLP, or Prometheus through an exporter).
func Example() {
	reader := sdkmetric.NewManualReader()
	meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	spans := tracetest.NewInMemoryExporter()
	tracer := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans)).Tracer("app")

	obs, err := otelobs.New(otelobs.WithMeterProvider(meters))
	if err != nil {
		panic(err)
	}
	lim, err := core.New(core.PerMinute(2).WithName("api"), core.WithClock(stopped(1_700_000_000e9)))
	if err != nil {
		panic(err)
	}
	app := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {})
	limited := httpmw.MustNew(lim, keyfunc.Header("X-API-Key"), httpmw.WithObserver(obs)).Handler(app)
	// What otelhttp.NewHandler does: a span in the request's context.
	traced := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, span := tracer.Start(r.Context(), "GET /")
		defer span.End()
		limited.ServeHTTP(w, r.WithContext(ctx))
	})

	for range 3 {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("X-API-Key", "k1")
		traced.ServeHTTP(httptest.NewRecorder(), r)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if m.Name != "floodgate.requests" {
			continue
		}
		var lines []string
		for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
			lines = append(lines, fmt.Sprintf("%s %s: %d", m.Name, p.Attributes.Encoded(attribute.DefaultEncoder()), p.Value))
		}
		slices.Sort(lines)
		for _, l := range lines {
			fmt.Println(l)
		}
	}
	for _, s := range spans.GetSpans() {
		for _, e := range s.Events {
			fmt.Printf("span %q: %s", s.Name, e.Name)
			for _, a := range e.Attributes {
				fmt.Printf(" %s=%s", a.Key, a.Value.Emit())
			}
			fmt.Println()
		}
	}
	// Output:
	// floodgate.requests limit=api,outcome=allowed,shadow=false,transport=http: 2
	// floodgate.requests limit=api,outcome=denied,shadow=false,transport=http: 1
	// span "GET /": floodgate.denied floodgate.limit=api floodgate.remaining=0 floodgate.retry_after=30
}
