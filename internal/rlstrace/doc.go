// Package rlstrace traces cmd/floodgate-ratelimit's calls with
// OpenTelemetry, as envoyproxy/ratelimit's TRACING_* settings ask: a span
// for every ShouldRateLimit call (gRPC, and the /json endpoint) carrying
// the domain, the number of descriptors and the verdict, exported over
// OTLP (HTTP or gRPC) to the collector the standard OTEL_EXPORTER_OTLP_*
// environment variables name.
//
// A call's parent comes from the caller's W3C traceparent or B3 headers
// (Envoy sends either), so the service's span joins the proxy's trace.
// Descriptor values are never recorded: they are client data (addresses,
// API keys, paths) of unbounded size.
//
//	tr, err := rlstrace.New(ctx, rlstrace.Config{Protocol: "http", ServiceName: "RateLimit", SamplingRate: 1})
//	...
//	rlsv3.RegisterRateLimitServiceServer(gs, tr.Service(svc))
//	defer tr.Shutdown(context.Background())
package rlstrace
