package rlstrace_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/floodgate/floodgate/internal/rlstrace"
)

// fixed answers every call with resp, or err.
type fixed struct {
	rlsv3.UnimplementedRateLimitServiceServer
	resp *rlsv3.RateLimitResponse
	err  error
}

func (f fixed) ShouldRateLimit(context.Context, *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	return f.resp, f.err
}

var overLimit = &rlsv3.RateLimitResponse{
	OverallCode: rlsv3.RateLimitResponse_OVER_LIMIT,
	Statuses: []*rlsv3.RateLimitResponse_DescriptorStatus{
		{Code: rlsv3.RateLimitResponse_OK}, {Code: rlsv3.RateLimitResponse_OVER_LIMIT},
	},
}

func request() *rlsv3.RateLimitRequest {
	return &rlsv3.RateLimitRequest{Domain: "edge", HitsAddend: 3, Descriptors: []*rlcommon.RateLimitDescriptor{
		{Entries: []*rlcommon.RateLimitDescriptor_Entry{{Key: "remote_address", Value: "203.0.113.9"}}},
		{Entries: []*rlcommon.RateLimitDescriptor_Entry{{Key: "api_key", Value: "secret-key-value"}}},
	}}
}

// kept is an in-memory exporter whose spans outlive the tracing's
// Shutdown (tracetest's own forgets them there).
type kept struct{ *tracetest.InMemoryExporter }

func (kept) Shutdown(context.Context) error { return nil }

func newTracing(t *testing.T, rate float64) (*rlstrace.Tracing, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tr, err := rlstrace.New(context.Background(), rlstrace.Config{SamplingRate: rate, Exporter: kept{exp}, ServiceInstanceID: "i-1"})
	if err != nil {
		t.Fatal(err)
	}
	return tr, exp
}

func attrs(kvs []attribute.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

func TestSpanPerCall(t *testing.T) {
	tr, exp := newTracing(t, 1)
	const parent = "4bf92f3577b34da6a3ce929d0e0e4736"
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("traceparent", "00-"+parent+"-00f067aa0ba902b7-01"))
	resp, err := tr.Service(fixed{resp: overLimit}).ShouldRateLimit(ctx, request())
	if err != nil || resp != overLimit {
		t.Fatalf("the call: %v, %v", resp, err)
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	s := spans[0]
	if s.Name != "envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit" {
		t.Errorf("name %q", s.Name)
	}
	if got := s.SpanContext.TraceID().String(); got != parent {
		t.Errorf("trace %s, want the caller's %s", got, parent)
	}
	if got := s.Parent.SpanID().String(); got != "00f067aa0ba902b7" {
		t.Errorf("parent span %s", got)
	}
	want := map[string]string{
		"ratelimit.domain": "edge", "ratelimit.descriptors": "2", "ratelimit.hits_addend": "3",
		"ratelimit.overall_code": "OVER_LIMIT", "ratelimit.over_limit_descriptors": "1",
		"rpc.system": "grpc", "rpc.service": "envoy.service.ratelimit.v3.RateLimitService", "rpc.method": "ShouldRateLimit",
	}
	got := attrs(s.Attributes)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("attribute %s = %q, want %q", k, got[k], v)
		}
	}
	for k, v := range got {
		if strings.Contains(v, "203.0.113.9") || strings.Contains(v, "secret-key-value") {
			t.Errorf("attribute %s carries a descriptor value: %q", k, v)
		}
	}
	res := attrs(s.Resource.Attributes())
	if res["service.name"] != "RateLimit" || res["service.instance.id"] != "i-1" {
		t.Errorf("resource %v", res)
	}
}

func TestB3Parent(t *testing.T) {
	tr, exp := newTracing(t, 0) // only the caller's sampling decision traces
	const parent = "80f198ee56343ba864fe8b2a57d3eff7"
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs(
		"x-b3-traceid", parent, "x-b3-spanid", "e457b5a2e4d86bd1", "x-b3-sampled", "1"))
	if _, err := tr.Service(fixed{resp: &rlsv3.RateLimitResponse{}}).ShouldRateLimit(ctx, request()); err != nil {
		t.Fatal(err)
	}
	// A root call at rate 0 is not traced.
	if _, err := tr.Service(fixed{resp: &rlsv3.RateLimitResponse{}}).ShouldRateLimit(context.Background(), request()); err != nil {
		t.Fatal(err)
	}
	_ = tr.Shutdown(context.Background())
	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want the B3-sampled call's alone", len(spans))
	}
	if got := spans[0].SpanContext.TraceID().String(); got != parent {
		t.Errorf("trace %s, want %s", got, parent)
	}
}

func TestErrorStatus(t *testing.T) {
	tr, exp := newTracing(t, 1)
	_, err := tr.Service(fixed{err: status.Error(codes.Unavailable, "rls: no configuration loaded yet")}).ShouldRateLimit(context.Background(), request())
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("error %v: the service's error must pass unchanged", err)
	}
	_ = tr.Shutdown(context.Background())
	s := exp.GetSpans()[0]
	if s.Status.Code != otelcodes.Error || s.Status.Description != "rls: no configuration loaded yet" {
		t.Errorf("status %+v", s.Status)
	}
	if got := attrs(s.Attributes)["rpc.grpc.status_code"]; got != "Unavailable" {
		t.Errorf("rpc.grpc.status_code %q", got)
	}
}

func TestHTTPParent(t *testing.T) {
	tr, exp := newTracing(t, 1)
	svc := tr.Service(fixed{resp: overLimit})
	h := tr.HTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := svc.ShouldRateLimit(r.Context(), request()); err != nil {
			t.Error(err)
		}
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	r := httptest.NewRequest(http.MethodPost, "/json", strings.NewReader("{}"))
	r.Header.Set("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	h.ServeHTTP(httptest.NewRecorder(), r)
	_ = tr.Shutdown(context.Background())
	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want the request's and the call's", len(spans))
	}
	call, req := spans[0], spans[1] // the inner span ends first
	if req.Name != "POST /json" || attrs(req.Attributes)["http.response.status_code"] != "429" {
		t.Errorf("request span %q %v", req.Name, attrs(req.Attributes))
	}
	if req.SpanContext.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" {
		t.Errorf("request span's trace %s", req.SpanContext.TraceID())
	}
	if call.Parent.SpanID() != req.SpanContext.SpanID() {
		t.Errorf("the call's parent %s, want the request's span %s", call.Parent.SpanID(), req.SpanContext.SpanID())
	}
	if _, ok := attrs(call.Attributes)["rpc.system"]; ok {
		t.Error("a /json call is marked as gRPC")
	}
}

func TestBadConfig(t *testing.T) {
	for _, c := range []rlstrace.Config{{Protocol: "udp", SamplingRate: 1}, {SamplingRate: 1.5}, {SamplingRate: -0.1}} {
		if _, err := rlstrace.New(context.Background(), c); err == nil || !strings.HasPrefix(err.Error(), "rlstrace: ") {
			t.Errorf("%+v: error %v", c, err)
		}
	}
}

// collector records the spans an OTLP exporter sends it.
type collector struct {
	collectorpb.UnimplementedTraceServiceServer
	mu    sync.Mutex
	names []string
	got   chan struct{}
}

func (c *collector) record(req *collectorpb.ExportTraceServiceRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				for _, a := range s.GetAttributes() {
					if a.GetKey() == "ratelimit.domain" {
						c.names = append(c.names, s.GetName()+" "+a.GetValue().GetStringValue())
					}
				}
			}
		}
	}
	select {
	case c.got <- struct{}{}:
	default:
	}
}

func (c *collector) Export(_ context.Context, req *collectorpb.ExportTraceServiceRequest) (*collectorpb.ExportTraceServiceResponse, error) {
	c.record(req)
	return &collectorpb.ExportTraceServiceResponse{}, nil
}

func (c *collector) wait(t *testing.T) []string {
	t.Helper()
	select {
	case <-c.got:
	case <-time.After(10 * time.Second):
		t.Fatal("the collector received nothing")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.names
}

// TestOTLP exports to a collector on loopback over each protocol, found
// through the standard OTEL_EXPORTER_OTLP_ENDPOINT variable.
func TestOTLP(t *testing.T) {
	t.Run("http", func(t *testing.T) {
		c := &collector{got: make(chan struct{}, 1)}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			var req collectorpb.ExportTraceServiceRequest
			if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
				http.Error(w, "not an OTLP trace export", http.StatusBadRequest)
				return
			}
			c.record(&req)
			out, _ := proto.Marshal(&collectorpb.ExportTraceServiceResponse{})
			w.Header().Set("Content-Type", "application/x-protobuf")
			_, _ = io.Copy(w, bytes.NewReader(out))
		}))
		defer srv.Close()
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
		export(t, "http", c)
	})
	t.Run("grpc", func(t *testing.T) {
		c := &collector{got: make(chan struct{}, 1)}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		gs := grpc.NewServer()
		collectorpb.RegisterTraceServiceServer(gs, c)
		go func() { _ = gs.Serve(l) }()
		defer gs.Stop()
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+l.Addr().String())
		export(t, "grpc", c)
	})
}

func export(t *testing.T, protocol string, c *collector) {
	t.Helper()
	tr, err := rlstrace.New(context.Background(), rlstrace.Config{Protocol: protocol, SamplingRate: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Service(fixed{resp: overLimit}).ShouldRateLimit(context.Background(), request()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tr.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	got := c.wait(t)
	if len(got) != 1 || got[0] != "envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit edge" {
		t.Errorf("collector got %q", got)
	}
}
