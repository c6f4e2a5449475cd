package rlstrace

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"go.opentelemetry.io/contrib/propagators/b3"
	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Config is envoyproxy/ratelimit's TRACING_* settings.
type Config struct {
	// Protocol is how spans reach the collector: "http" (OTLP over HTTP,
	// the default) or "grpc". The collector's address, headers and TLS
	// come from the standard OTEL_EXPORTER_OTLP_* variables.
	Protocol string
	// ServiceName, ServiceNamespace and ServiceInstanceID are the
	// resource's service.name (default "RateLimit", upstream's),
	// service.namespace and service.instance.id (default: random, one per
	// process).
	ServiceName, ServiceNamespace, ServiceInstanceID string
	// SamplingRate is the share of root calls traced, from 0 to 1; a call
	// whose caller's trace is sampled is always traced.
	SamplingRate float64
	// Exporter replaces the OTLP exporter (tests pass an in-memory one);
	// nil: OTLP per Protocol.
	Exporter sdktrace.SpanExporter
}

// Tracing makes the spans of one service process.
type Tracing struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
}

// New starts tracing per c. The exporter connects lazily: a collector that
// is not up yet delays no call, its spans are dropped after the
// exporter's retries.
func New(ctx context.Context, c Config) (*Tracing, error) {
	if c.SamplingRate < 0 || c.SamplingRate > 1 {
		return nil, fmt.Errorf("rlstrace: sampling rate %v: use a value from 0 to 1", c.SamplingRate)
	}
	exp := c.Exporter
	if exp == nil {
		var err error
		switch strings.ToLower(c.Protocol) {
		case "", "http":
			exp, err = otlptracehttp.New(ctx)
		case "grpc":
			exp, err = otlptracegrpc.New(ctx)
		default:
			return nil, fmt.Errorf("rlstrace: exporter protocol %q: use http or grpc", c.Protocol)
		}
		if err != nil {
			return nil, fmt.Errorf("rlstrace: the OTLP exporter: %w", err)
		}
	}
	name := c.ServiceName
	if name == "" {
		name = "RateLimit"
	}
	instance := c.ServiceInstanceID
	if instance == "" {
		var b [16]byte
		_, _ = rand.Read(b[:])
		instance = hex.EncodeToString(b[:])
	}
	attrs := []attribute.KeyValue{
		attribute.String("service.name", name),
		attribute.String("service.instance.id", instance),
	}
	if c.ServiceNamespace != "" {
		attrs = append(attrs, attribute.String("service.namespace", c.ServiceNamespace))
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(c.SamplingRate))),
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(resource.NewSchemaless(attrs...)),
	)
	return &Tracing{
		tp:     tp,
		tracer: tp.Tracer("github.com/floodgate/floodgate/cmd/floodgate-ratelimit"),
		prop:   propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, b3.New(), propagation.Baggage{}),
	}, nil
}

// Shutdown exports the spans still buffered and stops the exporter.
func (t *Tracing) Shutdown(ctx context.Context) error {
	return t.tp.Shutdown(ctx)
}

// Service returns srv with every ShouldRateLimit call traced. A call
// over gRPC takes its parent from the caller's metadata; one through the
// /json endpoint from the context HTTP gave it.
func (t *Tracing) Service(srv rlsv3.RateLimitServiceServer) rlsv3.RateLimitServiceServer {
	return traced{t: t, srv: srv}
}

type traced struct {
	rlsv3.UnimplementedRateLimitServiceServer
	t   *Tracing
	srv rlsv3.RateLimitServiceServer
}

func (s traced) ShouldRateLimit(ctx context.Context, req *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	var extra []attribute.KeyValue
	if md, ok := metadata.FromIncomingContext(ctx); ok && !trace.SpanContextFromContext(ctx).IsValid() {
		ctx = s.t.prop.Extract(ctx, metadataCarrier(md))
		extra = append(extra, attribute.String("rpc.system", "grpc"))
	}
	ctx, span := s.t.start(ctx, rlsv3.RateLimitService_ShouldRateLimit_FullMethodName, req, extra...)
	defer span.End()
	resp, err := s.srv.ShouldRateLimit(ctx, req)
	s.t.end(span, resp, err)
	return resp, err
}

// HTTP wraps the /json handler h: each request gets a span, child of the
// caller's (traceparent or B3 headers), in the context h's request
// carries, so the ShouldRateLimit call it makes is that span's child.
func (t *Tracing) HTTP(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := t.prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := t.tracer.Start(ctx, r.Method+" "+r.URL.Path, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path)))
		defer span.End()
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(sw, r.WithContext(ctx))
		span.SetAttributes(attribute.Int("http.response.status_code", sw.code))
		if sw.code >= 500 {
			span.SetStatus(otelcodes.Error, http.StatusText(sw.code))
		}
	})
}

// start begins the span of one ShouldRateLimit call.
func (t *Tracing) start(ctx context.Context, method string, req *rlsv3.RateLimitRequest, extra ...attribute.KeyValue) (context.Context, trace.Span) {
	service, name, _ := strings.Cut(strings.TrimPrefix(method, "/"), "/")
	attrs := append([]attribute.KeyValue{
		attribute.String("rpc.service", service),
		attribute.String("rpc.method", name),
		attribute.String("ratelimit.domain", req.GetDomain()),
		attribute.Int("ratelimit.descriptors", len(req.GetDescriptors())),
	}, extra...)
	if h := req.GetHitsAddend(); h > 0 {
		attrs = append(attrs, attribute.Int64("ratelimit.hits_addend", int64(h)))
	}
	return t.tracer.Start(ctx, strings.TrimPrefix(method, "/"), trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
}

// end records resp's verdict, or err, on span.
func (t *Tracing) end(span trace.Span, r *rlsv3.RateLimitResponse, err error) {
	if err != nil {
		st, _ := status.FromError(err)
		span.SetAttributes(attribute.String("rpc.grpc.status_code", st.Code().String()))
		span.SetStatus(otelcodes.Error, st.Message())
		return
	}
	over := 0
	for _, s := range r.GetStatuses() {
		if s.GetCode() == rlsv3.RateLimitResponse_OVER_LIMIT {
			over++
		}
	}
	span.SetAttributes(
		attribute.String("ratelimit.overall_code", r.GetOverallCode().String()),
		attribute.Int("ratelimit.over_limit_descriptors", over),
	)
}

// metadataCarrier reads gRPC metadata as a propagation carrier.
type metadataCarrier metadata.MD

func (m metadataCarrier) Get(key string) string {
	if v := metadata.MD(m).Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (m metadataCarrier) Set(key, value string) { metadata.MD(m).Set(key, value) }

func (m metadataCarrier) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// statusWriter remembers the status code written.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}
