package otelobs_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/grpcmw"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/internal/obstest"
	"github.com/floodgate/floodgate/keyfunc"
	"github.com/floodgate/floodgate/otelobs"
	"github.com/floodgate/floodgate/overload"
)

func decided(limit string, allowed bool) core.Decision {
	return core.Decision{Allowed: allowed, Limit: core.PerSecond(5).WithName(limit)}
}

var storeErr = &core.StoreError{Op: "allow", Err: errors.New("connection refused")}

// Durations whose seconds a float64 holds exactly, so that sums compare
// exactly.
const (
	d512 = time.Second / 512 // 1.953125 ms
	d256 = time.Second / 256 // 3.90625 ms
	d64  = time.Second / 64  // 15.625 ms
	d8   = time.Second / 8   // 125 ms
)

// hist returns the _count, _sum and cumulative _bucket points of the
// histogram name whose series has attributes attrs, which recorded values
// (seconds) against the default bounds.
func hist(name, attrs string, count int, sum float64, bounds []float64, values ...float64) map[string]float64 {
	out := map[string]float64{
		name + "_count{" + attrs + "}": float64(count),
		name + "_sum{" + attrs + "}":   sum,
	}
	for _, b := range bounds {
		n := 0
		for _, v := range values {
			if v <= b {
				n++
			}
		}
		out[fmt.Sprintf("%s_bucket{%s,le=%g}", name, attrs, b)] = float64(n)
	}
	return out
}

var (
	latencyBounds = []float64{1e-6, 5e-6, 25e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 100e-3, 250e-3, 1}
	holdBounds    = []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}
)

// TestCounts feeds a known sequence of events and checks every point that
// results.
func TestCounts(t *testing.T) {
	t.Parallel()
	obs, reader := sdkObserver(t)
	ctx := context.Background()
	for _, e := range []core.Event{
		{Transport: "http", Outcome: core.OutcomeAllowed, Admitted: true, Key: "a", Cost: 1, Decision: decided("api", true), Latency: d512},
		{Transport: "http", Outcome: core.OutcomeAllowed, Admitted: true, Key: "b", Cost: 1, Decision: decided("api", true), Latency: d256},
		{Transport: "http", Outcome: core.OutcomeAllowed, Admitted: true, Key: "b", Cost: 1, Decision: core.Decision{Allowed: true, Limit: core.PerSecond(1).WithName("api"), Leased: true}},
		{Transport: "http", Outcome: core.OutcomeDenied, Key: "a", Cost: 1, Decision: decided("api", false), Latency: d64, Held: 1500 * time.Millisecond},
		{Transport: "http", Outcome: core.OutcomeDenied, Admitted: true, Shadow: true, Key: "a", Cost: 1, Decision: decided("api", false), Latency: d512},
		{Transport: "grpc", Outcome: core.OutcomeShaped, Admitted: true, Key: "c", Cost: 2, Decision: core.Decision{Allowed: true, Limit: core.PerSecond(1).WithName("login"), Delay: time.Millisecond, Overflow: true}, Latency: 500 * time.Nanosecond},
		{Transport: "grpc", Outcome: core.OutcomeBadKey, Err: core.ErrEmptyKey},
		{Transport: "http", Outcome: core.OutcomeStoreError, Failure: core.FailOpen, Admitted: true, Key: "d", Cost: 1, Err: storeErr, Latency: d8},
		{Transport: "http", Outcome: core.OutcomeStoreError, Failure: core.FailClosed, Key: "d", Cost: 1, Err: storeErr, Latency: d8},
		{Transport: "http", Outcome: core.OutcomeStoreError, Failure: core.FailClosed, Key: "e", Cost: 1, Err: storeErr},
		{Transport: "envoy-rls", Outcome: core.OutcomeCanceled, Key: "f", Cost: 1, Err: core.ErrWaitCanceled},
	} {
		obs.Observe(ctx, e)
	}
	const (
		req  = "floodgate.requests"
		lat  = "floodgate.decision.duration"
		hold = "floodgate.denial.hold"
	)
	want := map[string]float64{
		req + "{limit=api,outcome=allowed,shadow=false,transport=http}":    3,
		req + "{limit=api,outcome=denied,shadow=false,transport=http}":     1,
		req + "{limit=api,outcome=denied,shadow=true,transport=http}":      1,
		req + "{limit=login,outcome=shaped,shadow=false,transport=grpc}":   1,
		req + "{limit=,outcome=bad_key,shadow=false,transport=grpc}":       1,
		req + "{limit=,outcome=store_error,shadow=false,transport=http}":   3,
		req + "{limit=,outcome=canceled,shadow=false,transport=envoy-rls}": 1,
		"floodgate.overflow_decisions{limit=login,transport=grpc}":         1,
		"floodgate.leased_decisions{limit=api,transport=http}":             1,
		"floodgate.store.errors{failure=fail-open,transport=http}":         1,
		"floodgate.store.errors{failure=fail-closed,transport=http}":       2,
	}
	for _, h := range []map[string]float64{
		hist(lat, "limit=api,transport=http", 4, 12.0/512, latencyBounds, 1.0/512, 1.0/256, 1.0/64, 1.0/512),
		hist(lat, "limit=login,transport=grpc", 1, 5e-7, latencyBounds, 5e-7),
		hist(lat, "limit=,transport=http", 2, 0.25, latencyBounds, 0.125, 0.125),
		hist(hold, "limit=api,transport=http", 1, 1.5, holdBounds, 1.5),
	} {
		for k, v := range h {
			want[k] = v
		}
	}
	got, _ := collect(t, reader)
	diff(t, got, want)
}

// TestInstruments: each instrument's kind, unit, bounds and meter; every
// one has a description and accumulates from the start (a reader's
// default temporality).
func TestInstruments(t *testing.T) {
	t.Parallel()
	obs, reader := sdkObserver(t, otelobs.WithHealth("redis", &reporter{}))
	obs.Observe(context.Background(), core.Event{Transport: "http", Outcome: core.OutcomeStoreError, Failure: core.FailOpen,
		Decision: core.Decision{Limit: core.PerSecond(1).WithName("api"), Overflow: true, Leased: true}, Latency: d8, Held: d8})
	_, fams := collect(t, reader)
	type want struct {
		kind, unit string
		bounds     []float64
	}
	wants := map[string]want{
		"floodgate.requests":                  {"counter", "{request}", nil},
		"floodgate.overflow_decisions":        {"counter", "{decision}", nil},
		"floodgate.leased_decisions":          {"counter", "{decision}", nil},
		"floodgate.store.errors":              {"counter", "{request}", nil},
		"floodgate.decision.duration":         {"histogram", "s", latencyBounds},
		"floodgate.denial.hold":               {"histogram", "s", holdBounds},
		"floodgate.breaker.state":             {"gauge", "", nil},
		"floodgate.fallback.decisions":        {"counter", "{decision}", nil},
		"floodgate.fallback.primary_failures": {"counter", "{call}", nil},
		"floodgate.breaker.opens":             {"counter", "{open}", nil},
		"floodgate.store.leases":              {"counter", "{lease}", nil},
		"floodgate.store.returned_units":      {"counter", "{unit}", nil},
		"floodgate.store.returns":             {"counter", "{call}", nil},
	}
	for name, w := range wants {
		f, ok := fams[name]
		if !ok {
			t.Errorf("no %s", name)
			continue
		}
		if f.kind != w.kind || f.unit != w.unit || !slices.Equal(f.bounds, w.bounds) || f.desc == "" || !f.cumulative ||
			f.scope != "github.com/floodgate/floodgate/otelobs" {
			t.Errorf("%s: %+v, want %+v, a description, cumulative, in otelobs's meter", name, f, w)
		}
	}
	if len(fams) != len(wants) {
		t.Errorf("%d instruments, want %d", len(fams), len(wants))
	}
}

// reporter is a core.HealthReporter whose health the test sets.
type reporter struct {
	mu sync.Mutex
	h  core.Health
}

func (r *reporter) Health() core.Health {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.h
}

func (r *reporter) set(h core.Health) {
	r.mu.Lock()
	r.h = h
	r.mu.Unlock()
}

// TestHealth: each store's breaker state and counters, read at each
// collection.
func TestHealth(t *testing.T) {
	t.Parallel()
	redis, payments := &reporter{h: core.Health{Breaker: "closed"}}, &reporter{h: core.Health{Breaker: "closed"}}
	_, reader := sdkObserver(t, otelobs.WithHealth("redis", redis), otelobs.WithHealth("payments", payments))
	want := func(r, p core.Health) map[string]float64 {
		m := map[string]float64{}
		for name, h := range map[string]core.Health{"redis": r, "payments": p} {
			m["floodgate.fallback.decisions{breaker="+name+",side=primary}"] = float64(h.StoreDecisions)
			m["floodgate.fallback.decisions{breaker="+name+",side=local}"] = float64(h.LocalDecisions)
			m["floodgate.fallback.decisions{breaker="+name+",side=lease}"] = float64(h.LeaseDecisions)
			m["floodgate.fallback.primary_failures{breaker="+name+"}"] = float64(h.Failures)
			m["floodgate.breaker.opens{breaker="+name+"}"] = float64(h.Opens)
			m["floodgate.store.leases{breaker="+name+"}"] = float64(h.Leases)
			m["floodgate.store.returned_units{breaker="+name+"}"] = float64(h.Returned)
			m["floodgate.store.returns{breaker="+name+"}"] = float64(h.Returns)
			for _, s := range []string{"closed", "open", "half-open"} {
				v := 0.0
				if s == h.Breaker {
					v = 1
				}
				m["floodgate.breaker.state{breaker="+name+",state="+s+"}"] = v
			}
		}
		return m
	}
	got, _ := collect(t, reader)
	diff(t, got, want(redis.Health(), payments.Health()))
	redis.set(core.Health{Breaker: "open", StoreDecisions: 7, LocalDecisions: 3, Failures: 2, Opens: 1, LeaseDecisions: 900, Leases: 4, Returned: 11, Returns: 3})
	payments.set(core.Health{Breaker: "half-open", StoreDecisions: 1})
	got, _ = collect(t, reader)
	diff(t, got, want(redis.Health(), payments.Health()))
}

// TestSpanEvents: refusals and store errors add an event to the span of
// the context, with the limit, what was left and when to retry; other
// outcomes add none.
func TestSpanEvents(t *testing.T) {
	t.Parallel()
	obs, _ := sdkObserver(t)
	tracer, exp := tracing()
	ctx, span := tracer.Start(context.Background(), "request")
	rls := core.PerMinute(10).WithName("descriptor")
	for _, e := range []core.Event{
		{Transport: "http", Outcome: core.OutcomeAllowed, Admitted: true, Key: "alice", Cost: 1, Decision: core.Decision{Allowed: true, Limit: rls, Remaining: 9}},
		{Transport: "http", Outcome: core.OutcomeDenied, Key: "alice", Cost: 1, Decision: core.Decision{Limit: core.PerMinute(5).WithName("login"), RetryAfter: 12 * time.Second}},
		{Transport: "grpc", Outcome: core.OutcomeDenied, Key: "alice", Cost: 3, Held: 1500 * time.Millisecond, Decision: core.Decision{Limit: rls, Remaining: 2, RetryAfter: 250 * time.Millisecond, Overflow: true}},
		{Transport: "http", Outcome: core.OutcomeDenied, Admitted: true, Shadow: true, Key: "bob", Cost: 1, Decision: core.Decision{Limit: rls, RetryAfter: 6 * time.Second}},
		{Transport: "http", Outcome: core.OutcomeShaped, Admitted: true, Key: "bob", Cost: 1, Decision: core.Decision{Allowed: true, Limit: rls, Delay: time.Second}},
		{Transport: "http", Outcome: core.OutcomeBadKey, Err: core.ErrEmptyKey},
		{Transport: "http", Outcome: core.OutcomeError, Key: "carol", Err: errors.New("lookup failed")},
		{Transport: "http", Outcome: core.OutcomeStoreError, Failure: core.FailOpen, Admitted: true, Key: "dave", Cost: 1, Err: storeErr},
		{Transport: "envoy-rls", Outcome: core.OutcomeStoreError, Failure: core.FailClosed, Key: "dave", Cost: 1, Err: storeErr, Decision: core.Decision{Limit: rls}},
		{Transport: "http", Outcome: core.OutcomeCanceled, Key: "erin", Cost: 1, Err: core.ErrWaitCanceled},
	} {
		obs.Observe(ctx, e)
	}
	span.End()
	got := events(exp)
	want := []string{
		"request: floodgate.denied floodgate.limit=login floodgate.remaining=0 floodgate.retry_after=12",
		"request: floodgate.denied floodgate.limit=descriptor floodgate.remaining=2 floodgate.retry_after=0.25 floodgate.held=1.5",
		"request: floodgate.denied floodgate.limit=descriptor floodgate.remaining=0 floodgate.retry_after=6 floodgate.shadow=true",
		"request: floodgate.store_error floodgate.failure=fail-open floodgate.admitted=true",
		"request: floodgate.store_error floodgate.failure=fail-closed floodgate.admitted=false floodgate.limit=descriptor",
	}
	if !slices.Equal(got, want) {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestNoSpan: without a span, or with one that is not recording, a
// refusal is still counted and nothing fails.
func TestNoSpan(t *testing.T) {
	t.Parallel()
	obs, reader := sdkObserver(t)
	deny := core.Event{Transport: "http", Outcome: core.OutcomeDenied, Key: "a", Cost: 1, Decision: decided("api", false)}
	fail := core.Event{Transport: "http", Outcome: core.OutcomeStoreError, Failure: core.FailClosed, Key: "a", Cost: 1, Err: storeErr}
	notRecording := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}, TraceFlags: trace.FlagsSampled,
	}))
	for _, ctx := range []context.Context{context.Background(), notRecording} {
		obs.Observe(ctx, deny)
		obs.Observe(ctx, fail)
	}
	got, _ := collect(t, reader)
	diff(t, only(got, "floodgate.requests"), map[string]float64{
		"floodgate.requests{limit=api,outcome=denied,shadow=false,transport=http}":   2,
		"floodgate.requests{limit=,outcome=store_error,shadow=false,transport=http}": 2,
	})
}

// TestAdapters: the adapters hand the observer the request's context, so
// the span an application's tracing started there gets the refusal: an
// HTTP request through httpmw (whose context carries the span, as
// otelhttp's handler sets it) and a gRPC call through grpcmw.Limit.
func TestAdapters(t *testing.T) {
	t.Parallel()
	obs, reader := sdkObserver(t)
	tracer, exp := tracing()
	clock := coretest.NewClock(time.Unix(1_700_000_000, 0))
	newLim := func(name string) *core.Keyed {
		lim, err := core.New(core.PerMinute(2).WithName(name), core.WithClock(clock))
		if err != nil {
			t.Fatal(err)
		}
		return lim
	}
	mw := httpmw.MustNew(newLim("per-client"), keyfunc.Header("X-Client"), httpmw.WithObserver(obs)).Handler(
		http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	traced := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, span := tracer.Start(r.Context(), "GET /")
		defer span.End()
		mw.ServeHTTP(w, r.WithContext(ctx))
	})
	var codes []int
	for range 3 {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("X-Client", "alice")
		w := httptest.NewRecorder()
		traced.ServeHTTP(w, r)
		codes = append(codes, w.Code)
	}
	if want := []int{204, 204, 429}; !slices.Equal(codes, want) {
		t.Fatalf("status codes %v, want %v", codes, want)
	}
	grpcLim := grpcmw.MustNew(newLim("per-service"), grpcmw.Constant("svc"), grpcmw.WithObserver(obs))
	for range 3 {
		ctx, span := tracer.Start(context.Background(), "/svc.Echo/Say")
		err := grpcLim.Limit(ctx)
		span.End()
		if err != nil && !strings.Contains(err.Error(), "ResourceExhausted") {
			t.Fatal(err)
		}
	}
	want := []string{
		"GET /: floodgate.denied floodgate.limit=per-client floodgate.remaining=0 floodgate.retry_after=30",
		"/svc.Echo/Say: floodgate.denied floodgate.limit=per-service floodgate.remaining=0 floodgate.retry_after=30",
	}
	if got := events(exp); !slices.Equal(got, want) {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	got, _ := collect(t, reader)
	diff(t, only(got, "floodgate.requests"), map[string]float64{
		"floodgate.requests{limit=per-client,outcome=allowed,shadow=false,transport=http}":  2,
		"floodgate.requests{limit=per-client,outcome=denied,shadow=false,transport=http}":   1,
		"floodgate.requests{limit=per-service,outcome=allowed,shadow=false,transport=grpc}": 2,
		"floodgate.requests{limit=per-service,outcome=denied,shadow=false,transport=grpc}":  1,
	})
}

// TestKeyNeverAnAttribute: whatever the outcome, no instrument, attribute
// or span event holds the event's key.
func TestKeyNeverAnAttribute(t *testing.T) {
	t.Parallel()
	const key = "198.51.100.23-api-key-9f8e"
	obs, reader := sdkObserver(t, otelobs.WithHealth("redis", &reporter{}))
	tracer, exp := tracing()
	ctx, span := tracer.Start(context.Background(), "request")
	for o := core.Outcome(0); o <= core.OutcomeCanceled+1; o++ {
		for _, shadow := range []bool{false, true} {
			obs.Observe(ctx, core.Event{
				Transport: "http", Outcome: o, Key: key, Cost: 1, Shadow: shadow, Failure: core.FailOpen,
				Decision: core.Decision{Limit: core.PerSecond(1).WithName("api"), Overflow: true, Leased: true},
				Latency:  time.Millisecond, Held: time.Second, Err: fmt.Errorf("store failed for %s: %w", key, storeErr),
			})
		}
	}
	span.End()
	got, fams := collect(t, reader)
	if len(got) < 40 || len(events(exp)) != 4 {
		t.Fatalf("%d points and %d events: the test observed less than it should", len(got), len(events(exp)))
	}
	for k := range got {
		if strings.Contains(k, key) {
			t.Errorf("point %s holds the key", k)
		}
	}
	for _, f := range fams {
		if strings.Contains(f.desc, key) {
			t.Errorf("%s's description holds the key", f.name)
		}
	}
	for _, e := range events(exp) {
		if strings.Contains(e, key) {
			t.Errorf("span event %s holds the key", e)
		}
	}
}

// TestUnknownOutcome: an outcome or a failure mode newer than this package
// is still counted, under its String.
func TestUnknownOutcome(t *testing.T) {
	t.Parallel()
	obs, reader := sdkObserver(t)
	obs.Observe(context.Background(), core.Event{Transport: "http", Outcome: core.OutcomeCanceled + 3, Failure: core.FailOpen + 1})
	obs.Observe(context.Background(), core.Event{Transport: "http", Outcome: core.OutcomeStoreError, Failure: core.FailOpen + 1})
	got, _ := collect(t, reader)
	diff(t, got, map[string]float64{
		"floodgate.requests{limit=,outcome=Outcome(10),shadow=false,transport=http}": 1,
		"floodgate.requests{limit=,outcome=store_error,shadow=false,transport=http}": 1,
		"floodgate.store.errors{failure=FailureMode(2),transport=http}":              1,
	})
}

// TestNoAllocs: once a limit's attribute sets exist, observing allocates
// nothing on the SDK, on every path, with no span or with a sampled one
// (exemplars included); only the span events of refusals and store
// errors, which the tracing SDK stores, allocate.
func TestNoAllocs(t *testing.T) {
	obs, _ := sdkObserver(t)
	all := benchEvents(512)
	var quiet []core.Event // no span event
	for _, e := range all {
		obs.Observe(context.Background(), e)
		if e.Outcome != core.OutcomeDenied && e.Outcome != core.OutcomeStoreError {
			quiet = append(quiet, e)
		}
	}
	for _, tc := range []struct {
		name   string
		ctx    context.Context
		events []core.Event
	}{
		{"no span", context.Background(), all},
		{"sampled span", sampledSpan(t), quiet},
	} {
		// Each run observes every event, so that one allocation anywhere
		// shows (AllocsPerRun truncates its average to an integer).
		n := testing.AllocsPerRun(20, func() {
			for _, e := range tc.events {
				obs.Observe(tc.ctx, e)
			}
		})
		if n != 0 {
			t.Errorf("%s: %v allocations for %d events", tc.name, n, len(tc.events))
		}
	}
}

// TestConcurrent: goroutines that meet new limits at once count every
// event once.
func TestConcurrent(t *testing.T) {
	t.Parallel()
	obs, reader := sdkObserver(t)
	const goroutines, each = 8, 500
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				out := []core.Outcome{core.OutcomeAllowed, core.OutcomeDenied}[(g+i)%2]
				obs.Observe(context.Background(), core.Event{
					Transport: "grpc", Outcome: out, Shadow: i%3 == 0,
					Decision: decided(fmt.Sprintf("l%d", i%10), out == core.OutcomeAllowed),
				})
			}
		})
	}
	wg.Wait()
	var total float64
	got, _ := collect(t, reader)
	for _, v := range got {
		total += v
	}
	if total != goroutines*each || len(got) != 10*2*2 {
		t.Errorf("%v events counted in %d series, want %d in 40", total, len(got), goroutines*each)
	}
}

// refusing is a MeterProvider whose meter refuses the instrument named
// bad.
type refusing struct {
	noop.MeterProvider
	bad string
}

func (p refusing) Meter(string, ...metric.MeterOption) metric.Meter { return refusingMeter{bad: p.bad} }

type refusingMeter struct {
	noop.Meter
	bad string
}

func (m refusingMeter) Int64Counter(name string, opts ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	c, _ := noop.Meter{}.Int64Counter(name, opts...)
	return c, m.err(name)
}

func (m refusingMeter) Float64Histogram(name string, opts ...metric.Float64HistogramOption) (metric.Float64Histogram, error) {
	h, _ := noop.Meter{}.Float64Histogram(name, opts...)
	return h, m.err(name)
}

func (m refusingMeter) Int64ObservableCounter(name string, opts ...metric.Int64ObservableCounterOption) (metric.Int64ObservableCounter, error) {
	c, _ := noop.Meter{}.Int64ObservableCounter(name, opts...)
	return c, m.err(name)
}

func (m refusingMeter) Int64ObservableGauge(name string, opts ...metric.Int64ObservableGaugeOption) (metric.Int64ObservableGauge, error) {
	g, _ := noop.Meter{}.Int64ObservableGauge(name, opts...)
	return g, m.err(name)
}

func (m refusingMeter) RegisterCallback(f metric.Callback, insts ...metric.Observable) (metric.Registration, error) {
	r, _ := noop.Meter{}.RegisterCallback(f, insts...)
	return r, m.err("callback")
}

func (m refusingMeter) err(name string) error {
	if name == m.bad {
		return fmt.Errorf("%s refused", name)
	}
	return nil
}

func TestInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts []otelobs.Option
		want string
	}{
		{"nil option", []otelobs.Option{nil}, "otelobs: nil Option (argument 1)"},
		{"nil provider", []otelobs.Option{otelobs.WithMeterProvider(nil)}, "otelobs: WithMeterProvider(nil); leave the option out for the global MeterProvider"},
		{"nil health", []otelobs.Option{otelobs.WithHealth("redis", nil)}, `otelobs: WithHealth("redis", nil)`},
		{"no name", []otelobs.Option{otelobs.WithHealth("", &reporter{})}, "otelobs: breaker name is empty"},
		{"same name", []otelobs.Option{otelobs.WithHealth("redis", &reporter{}), otelobs.WithHealth("redis", &reporter{})},
			`otelobs: two breakers are named "redis"`},
	}
	withHealth := otelobs.WithHealth("redis", &reporter{})
	for _, bad := range []string{"floodgate.requests", "floodgate.denial.hold", "floodgate.breaker.state", "floodgate.store.returned_units", "callback"} {
		tests = append(tests, struct {
			name string
			opts []otelobs.Option
			want string
		}{"refused " + bad, []otelobs.Option{otelobs.WithMeterProvider(refusing{bad: bad}), withHealth},
			"otelobs: making the instruments: " + bad + " refused"})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obs, err := otelobs.New(tc.opts...)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) || obs != nil {
				t.Fatalf("got %v, %v; want an error starting %q", obs, err, tc.want)
			}
		})
	}
	if _, err := otelobs.New(otelobs.WithMeterProvider(refusing{bad: "none"}), withHealth); err != nil {
		t.Errorf("a provider that refuses nothing: %v", err)
	}
}

// TestGlobalProvider: without WithMeterProvider, the instruments are the
// global provider's, also when the application sets it after New (the
// global provider forwards to the one set). It sets the process's global
// provider, so it does not run in parallel.
func TestGlobalProvider(t *testing.T) {
	obs, err := otelobs.New()
	if err != nil {
		t.Fatal(err)
	}
	reader := sdkmetric.NewManualReader()
	otel.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	obs.Observe(context.Background(), core.Event{Transport: "http", Outcome: core.OutcomeDenied, Decision: decided("api", false)})
	got, _ := collect(t, reader)
	diff(t, got, map[string]float64{
		"floodgate.requests{limit=api,outcome=denied,shadow=false,transport=http}": 1,
	})
}

// TestGuard: WithGuard reports each guard's limit, requests in flight and
// latency, read at each collection, as promobs's does; a nil guard, an
// empty name and a name given twice are refused.
func TestGuard(t *testing.T) {
	t.Parallel()
	clk := coretest.NewClock(coretest.T0)
	ad, err := overload.NewAdaptive(overload.AdaptiveConfig{Clock: clk, InitialLimit: 8})
	if err != nil {
		t.Fatal(err)
	}
	_, reader := sdkObserver(t, otelobs.WithGuard("api", ad))
	want := func(in float64) map[string]float64 {
		return map[string]float64{
			"floodgate.guard.limit{guard=api}":     8,
			"floodgate.guard.in_flight{guard=api}": in,
			"floodgate.guard.latency{guard=api}":   0,
		}
	}
	got, _ := collect(t, reader)
	diff(t, got, want(0))
	tok, _ := ad.Acquire(overload.Normal, 3)
	got, _ = collect(t, reader)
	diff(t, got, want(3))
	tok.End(core.EndDone)
	for _, tt := range []struct {
		opts []otelobs.Option
		want string
	}{
		{[]otelobs.Option{otelobs.WithGuard("api", nil)}, "nil"},
		{[]otelobs.Option{otelobs.WithGuard("", ad)}, "empty"},
		{[]otelobs.Option{otelobs.WithGuard("api", ad), otelobs.WithGuard("api", ad)}, "two guards"},
	} {
		if _, err := otelobs.New(tt.opts...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: want an error saying %q", err, tt.want)
		}
	}
}

// TestShedByPriority: a shed counts in floodgate.requests as outcome
// "shed" and in floodgate.shed by the priority its request's context
// carried, as promobs counts it.
func TestShedByPriority(t *testing.T) {
	t.Parallel()
	obs, reader := sdkObserver(t)
	obstest.ObserveSheds(obs)
	got, _ := collect(t, reader)
	const s = "floodgate.shed"
	diff(t, only(got, s+"{"), map[string]float64{
		s + "{limit=adaptive,priority=sheddable,transport=http}": 2,
		s + "{limit=adaptive,priority=normal,transport=http}":    2,
		s + "{limit=adaptive,priority=critical,transport=http}":  1,
		s + "{limit=adaptive,priority=5,transport=http}":         1,
	})
	if n := got["floodgate.requests{limit=adaptive,outcome=shed,shadow=false,transport=http}"]; n != 6 {
		t.Errorf("floodgate.requests with outcome shed: %v, want 6", n)
	}
}

// TestShedNoAllocs: once a limit's series exist, a shed of a named
// priority is counted with no allocation (sheds are the overloaded path).
func TestShedNoAllocs(t *testing.T) {
	obs, _ := sdkObserver(t)
	obstest.ShedNoAllocs(t, obs)
}
