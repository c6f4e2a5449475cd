package rlstrace_test

import (
	"context"
	"fmt"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/floodgate/floodgate/internal/rlstrace"
)

// A service's calls traced: each ShouldRateLimit is a span with the
// domain and the verdict (here exported in memory; the command exports
// over OTLP).
func Example() {
	exp := tracetest.NewInMemoryExporter()
	tr, err := rlstrace.New(context.Background(), rlstrace.Config{SamplingRate: 1, Exporter: kept{exp}})
	if err != nil {
		panic(err)
	}
	svc := tr.Service(fixed{resp: overLimit})
	_, _ = svc.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "edge"})
	_ = tr.Shutdown(context.Background())
	for _, s := range exp.GetSpans() {
		for _, a := range s.Attributes {
			if a.Key == "ratelimit.domain" || a.Key == "ratelimit.overall_code" {
				fmt.Println(a.Key, "=", a.Value.Emit())
			}
		}
	}
	// Output:
	// ratelimit.domain = edge
	// ratelimit.overall_code = OVER_LIMIT
}
