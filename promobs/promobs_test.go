package promobs_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/internal/obstest"
	"github.com/floodgate/floodgate/keyfunc"
	"github.com/floodgate/floodgate/overload"
	"github.com/floodgate/floodgate/promobs"
)

// samples gathers reg and flattens it to "name{label=value,...}" ->
// value: counters and gauges as they are, histograms as their _count,
// _sum and cumulative _bucket counts. Labels are sorted by name, as the
// registry sorts them.
func samples(t *testing.T, reg prometheus.Gatherer) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, lp := range m.GetLabel() {
				ls = append(ls, lp.GetName()+"="+lp.GetValue())
			}
			id := func(suffix string, extra ...string) string {
				return mf.GetName() + suffix + "{" + strings.Join(append(slices.Clone(ls), extra...), ",") + "}"
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out[id("")] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[id("")] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				out[id("_count")] = float64(h.GetSampleCount())
				out[id("_sum")] = h.GetSampleSum()
				for _, b := range h.GetBucket() {
					out[id("_bucket", fmt.Sprintf("le=%g", b.GetUpperBound()))] = float64(b.GetCumulativeCount())
				}
			default:
				t.Fatalf("%s: unexpected type %v", mf.GetName(), mf.GetType())
			}
		}
	}
	return out
}

// only keeps the samples whose names start with prefix.
func only(s map[string]float64, prefix string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range s {
		if strings.HasPrefix(k, prefix) {
			out[k] = v
		}
	}
	return out
}

func diff(t *testing.T, got, want map[string]float64) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if g, ok := got[k]; !ok || g != want[k] {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, want[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected %s = %v", k, got[k])
		}
	}
}

func newObserver(t *testing.T, opts ...promobs.Option) (*promobs.Observer, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	obs, err := promobs.New(reg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return obs, reg
}

func decided(limit string, allowed bool) core.Decision {
	return core.Decision{Allowed: allowed, Limit: core.PerSecond(5).WithName(limit)}
}

var storeErr = &core.StoreError{Op: "allow", Err: errors.New("connection refused")}

// TestCounts feeds a known sequence of events and checks every sample
// that results.
func TestCounts(t *testing.T) {
	t.Parallel()
	obs, reg := newObserver(t, promobs.WithBuckets([]float64{0.001, 0.01}, []float64{1}))
	ctx := context.Background()
	ms := time.Millisecond
	for _, e := range []core.Event{
		{Transport: "http", Outcome: core.OutcomeAllowed, Admitted: true, Key: "a", Cost: 1, Decision: decided("api", true), Latency: 500 * time.Microsecond},
		{Transport: "http", Outcome: core.OutcomeAllowed, Admitted: true, Key: "b", Cost: 1, Decision: decided("api", true), Latency: 2 * ms},
		{Transport: "http", Outcome: core.OutcomeAllowed, Admitted: true, Key: "b", Cost: 1, Decision: core.Decision{Allowed: true, Limit: core.PerSecond(1).WithName("api"), Leased: true}},
		{Transport: "http", Outcome: core.OutcomeDenied, Key: "a", Cost: 1, Decision: decided("api", false), Latency: 20 * ms, Held: 1500 * ms},
		{Transport: "http", Outcome: core.OutcomeDenied, Admitted: true, Shadow: true, Key: "a", Cost: 1, Decision: decided("api", false), Latency: 1 * ms},
		{Transport: "grpc", Outcome: core.OutcomeShaped, Admitted: true, Key: "c", Cost: 2, Decision: core.Decision{Allowed: true, Limit: core.PerSecond(1).WithName("login"), Delay: ms, Overflow: true}, Latency: 3 * ms},
		{Transport: "grpc", Outcome: core.OutcomeBadKey, Err: core.ErrEmptyKey},
		{Transport: "http", Outcome: core.OutcomeStoreError, Failure: core.FailOpen, Admitted: true, Key: "d", Cost: 1, Err: storeErr, Latency: 100 * ms},
		{Transport: "http", Outcome: core.OutcomeStoreError, Failure: core.FailClosed, Key: "d", Cost: 1, Err: storeErr, Latency: 100 * ms},
		{Transport: "http", Outcome: core.OutcomeStoreError, Failure: core.FailClosed, Key: "e", Cost: 1, Err: storeErr, Latency: 100 * ms},
	} {
		obs.Observe(ctx, e)
	}
	const (
		req  = "floodgate_requests_total"
		lat  = "floodgate_decision_duration_seconds"
		hold = "floodgate_denial_hold_seconds"
	)
	diff(t, samples(t, reg), map[string]float64{
		req + "{limit=api,outcome=allowed,shadow=false,transport=http}":  3,
		req + "{limit=api,outcome=denied,shadow=false,transport=http}":   1,
		req + "{limit=api,outcome=denied,shadow=true,transport=http}":    1,
		req + "{limit=login,outcome=shaped,shadow=false,transport=grpc}": 1,
		req + "{limit=,outcome=bad_key,shadow=false,transport=grpc}":     1,
		req + "{limit=,outcome=store_error,shadow=false,transport=http}": 3,

		"floodgate_overflow_decisions_total{limit=login,transport=grpc}":   1,
		"floodgate_leased_decisions_total{limit=api,transport=http}":       1,
		"floodgate_store_errors_total{failure=fail-open,transport=http}":   1,
		"floodgate_store_errors_total{failure=fail-closed,transport=http}": 2,

		// 0.5, 2, 20 and 1 ms.
		lat + "_count{limit=api,transport=http}":           4,
		lat + "_sum{limit=api,transport=http}":             0.0235,
		lat + "_bucket{limit=api,transport=http,le=0.001}": 2,
		lat + "_bucket{limit=api,transport=http,le=0.01}":  3,
		// 3 ms.
		lat + "_count{limit=login,transport=grpc}":           1,
		lat + "_sum{limit=login,transport=grpc}":             0.003,
		lat + "_bucket{limit=login,transport=grpc,le=0.001}": 0,
		lat + "_bucket{limit=login,transport=grpc,le=0.01}":  1,
		// The store errors' 100 ms each; the bad key has no latency.
		lat + "_count{limit=,transport=http}":           3,
		lat + "_sum{limit=,transport=http}":             0.3,
		lat + "_bucket{limit=,transport=http,le=0.001}": 0,
		lat + "_bucket{limit=,transport=http,le=0.01}":  0,

		hold + "_count{limit=api,transport=http}":       1,
		hold + "_sum{limit=api,transport=http}":         1.5,
		hold + "_bucket{limit=api,transport=http,le=1}": 0,
	})
}

// TestKeyNeverALabel: whatever the outcome, no label value, help text or
// name of any metric holds the event's key.
func TestKeyNeverALabel(t *testing.T) {
	t.Parallel()
	const key = "198.51.100.23-api-key-9f8e"
	obs, reg := newObserver(t, promobs.WithHealth("redis", &reporter{}))
	for o := core.Outcome(0); o <= core.OutcomeShed+1; o++ {
		for _, shadow := range []bool{false, true} {
			obs.Observe(context.Background(), core.Event{
				Transport: "http", Outcome: o, Key: key, Cost: 1, Shadow: shadow, Failure: core.FailOpen,
				Decision: core.Decision{Limit: core.PerSecond(1).WithName("api"), Overflow: true},
				Latency:  time.Millisecond, Held: time.Second, Err: storeErr,
			})
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	labels := 0
	for _, mf := range mfs {
		if strings.Contains(mf.GetName(), key) || strings.Contains(mf.GetHelp(), key) {
			t.Errorf("%s names the key", mf.GetName())
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				labels++
				if strings.Contains(lp.GetValue(), key) || strings.Contains(lp.GetName(), key) {
					t.Errorf("%s has label %s=%q, which holds the key", mf.GetName(), lp.GetName(), lp.GetValue())
				}
			}
		}
	}
	// Every metric family is there, with labels, so that the check above
	// looked at something.
	if len(mfs) != 13 || labels < 50 {
		t.Fatalf("%d families, %d labels checked", len(mfs), labels)
	}
}

// TestHTTPEndToEnd runs requests through a real httpmw middleware and
// watches the counters move.
func TestHTTPEndToEnd(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(time.Unix(1_700_000_000, 0))
	lim := mustCore(t, core.PerMinute(2).WithName("per-client"), core.WithClock(clock))
	obs, reg := newObserver(t)
	h := httpmw.MustNew(lim, keyfunc.Header("X-Client"), httpmw.WithObserver(obs)).Handler(
		http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	srv := httptest.NewServer(h)
	defer srv.Close()
	get := func(client string) int {
		req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		if client != "" {
			req.Header.Set("X-Client", client)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	var codes []int
	for _, c := range []string{"alice", "alice", "alice", "bob", ""} {
		codes = append(codes, get(c))
	}
	if want := []int{204, 204, 429, 204, 400}; !slices.Equal(codes, want) {
		t.Fatalf("status codes %v, want %v", codes, want)
	}
	const req = "floodgate_requests_total"
	got := samples(t, reg)
	diff(t, only(got, req), map[string]float64{
		req + "{limit=per-client,outcome=allowed,shadow=false,transport=http}": 3,
		req + "{limit=per-client,outcome=denied,shadow=false,transport=http}":  1,
		req + "{limit=,outcome=bad_key,shadow=false,transport=http}":           1,
	})
	clock.Advance(30 * time.Second) // one unit back
	if code := get("alice"); code != 204 {
		t.Fatalf("status %d after the refill", code)
	}
	if n := testutil.ToFloat64(counterOf(t, reg, req, "per-client", "allowed")); n != 4 {
		t.Errorf("allowed = %v after the refill, want 4", n)
	}
	// The middleware times a sample of the decisions it asks the limiter
	// for, about one in 8 (pipeline.TimingEvery): of 400, between 15 and
	// 100 (the chance of falling outside is below 1e-7).
	for range 395 {
		get("carol")
	}
	got = samples(t, reg)
	if n := got["floodgate_decision_duration_seconds_count{limit=per-client,transport=http}"]; n < 15 || n > 100 {
		t.Errorf("%v decision latencies of 400, want about 50", n)
	}
}

// counterOf finds the requests counter of limit and outcome on the http
// transport, as a Collector testutil.ToFloat64 can read.
func counterOf(t *testing.T, reg prometheus.Gatherer, name, limit, outcome string) prometheus.Collector {
	t.Helper()
	want := fmt.Sprintf("%s{limit=%s,outcome=%s,shadow=false,transport=http}", name, limit, outcome)
	v, ok := samples(t, reg)[want]
	if !ok {
		t.Fatalf("no %s", want)
	}
	return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "x", Help: "x"}, func() float64 { return v })
}

func mustCore(t *testing.T, l core.Limit, opts ...core.Option) *core.Keyed {
	t.Helper()
	lim, err := core.New(l, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return lim
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
// scrape.
func TestHealth(t *testing.T) {
	t.Parallel()
	redis, payments := &reporter{h: core.Health{Breaker: "closed"}}, &reporter{h: core.Health{Breaker: "closed"}}
	_, reg := newObserver(t, promobs.WithHealth("redis", redis), promobs.WithHealth("payments", payments))
	const st = "floodgate_breaker_state"
	scrape := func() map[string]float64 { return samples(t, reg) }
	want := func(r, p core.Health) map[string]float64 {
		m := map[string]float64{}
		for name, h := range map[string]core.Health{"redis": r, "payments": p} {
			m["floodgate_fallback_decisions_total{breaker="+name+",side=primary}"] = float64(h.StoreDecisions)
			m["floodgate_fallback_decisions_total{breaker="+name+",side=local}"] = float64(h.LocalDecisions)
			m["floodgate_fallback_primary_failures_total{breaker="+name+"}"] = float64(h.Failures)
			m["floodgate_breaker_opens_total{breaker="+name+"}"] = float64(h.Opens)
			m["floodgate_fallback_decisions_total{breaker="+name+",side=lease}"] = float64(h.LeaseDecisions)
			m["floodgate_store_leases_total{breaker="+name+"}"] = float64(h.Leases)
			m["floodgate_store_returned_units_total{breaker="+name+"}"] = float64(h.Returned)
			m["floodgate_store_returns_total{breaker="+name+"}"] = float64(h.Returns)
			for _, s := range []string{"closed", "open", "half-open"} {
				m[fmt.Sprintf("%s{breaker=%s,state=%s}", st, name, s)] = b2f(s == h.Breaker)
			}
		}
		return m
	}
	diff(t, scrape(), want(redis.Health(), payments.Health()))
	redis.set(core.Health{Breaker: "open", StoreDecisions: 7, LocalDecisions: 3, Failures: 2, Opens: 1, LeaseDecisions: 900, Leases: 4, Returned: 11, Returns: 3})
	payments.set(core.Health{Breaker: "half-open", StoreDecisions: 1})
	diff(t, scrape(), want(redis.Health(), payments.Health()))
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// TestUnknownOutcome: an outcome newer than this package is still counted,
// under its String.
func TestUnknownOutcome(t *testing.T) {
	t.Parallel()
	obs, reg := newObserver(t)
	obs.Observe(context.Background(), core.Event{Transport: "http", Outcome: core.OutcomeCanceled + 3, Failure: core.FailOpen + 1})
	obs.Observe(context.Background(), core.Event{Transport: "http", Outcome: core.OutcomeStoreError, Failure: core.FailOpen + 1})
	diff(t, only(samples(t, reg), "floodgate_"), map[string]float64{
		"floodgate_requests_total{limit=,outcome=Outcome(10),shadow=false,transport=http}": 1,
		"floodgate_requests_total{limit=,outcome=store_error,shadow=false,transport=http}": 1,
		"floodgate_store_errors_total{failure=FailureMode(2),transport=http}":              1,
	})
}

// TestNoAllocs: once a limit's series exist, observing allocates nothing,
// on every path.
func TestNoAllocs(t *testing.T) {
	obs, _ := newObserver(t)
	events := benchEvents(512)
	for _, e := range events {
		obs.Observe(context.Background(), e)
	}
	i := 0
	if n := testing.AllocsPerRun(2000, func() { obs.Observe(context.Background(), events[i%len(events)]); i++ }); n != 0 {
		t.Errorf("%v allocations per event", n)
	}
}

// TestConcurrent: goroutines that meet new limits at once count every
// event once.
func TestConcurrent(t *testing.T) {
	t.Parallel()
	obs, reg := newObserver(t)
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
	got := only(samples(t, reg), "floodgate_requests_total")
	for _, v := range got {
		total += v
	}
	if total != goroutines*each || len(got) != 10*2*2 {
		t.Errorf("%v events counted in %d series, want %d in 40", total, len(got), goroutines*each)
	}
}

func TestInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		reg  prometheus.Registerer
		opts []promobs.Option
		want string
	}{
		{"nil registerer", nil, nil, "promobs: nil Registerer; pass prometheus.DefaultRegisterer"},
		{"nil option", prometheus.NewRegistry(), []promobs.Option{nil}, "promobs: nil Option (argument 1)"},
		{"label clash", prometheus.WrapRegistererWith(prometheus.Labels{"limit": "a"}, prometheus.NewRegistry()), nil, "promobs: registering the metrics"},
		{"buckets", prometheus.NewRegistry(), []promobs.Option{promobs.WithBuckets([]float64{0.1, 0.1}, nil)}, "promobs: WithBuckets([0.1 0.1], ...): the latency bounds must be"},
		{"no buckets", prometheus.NewRegistry(), []promobs.Option{promobs.WithBuckets(nil, []float64{})}, "promobs: WithBuckets(..., []): the hold bounds must be"},
		{"negative bucket", prometheus.NewRegistry(), []promobs.Option{promobs.WithBuckets(nil, []float64{-1, 1})}, "promobs: WithBuckets(..., [-1 1]): the hold bounds must be"},
		{"nil health", prometheus.NewRegistry(), []promobs.Option{promobs.WithHealth("redis", nil)}, `promobs: WithHealth("redis", nil)`},
		{"no name", prometheus.NewRegistry(), []promobs.Option{promobs.WithHealth("", &reporter{})}, "promobs: breaker name is empty"},
		{"same name", prometheus.NewRegistry(), []promobs.Option{
			promobs.WithHealth("redis", &reporter{}),
			promobs.WithHealth("redis", &reporter{}),
		}, `promobs: two breakers are named "redis"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obs, err := promobs.New(tc.reg, tc.opts...)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) || obs != nil {
				t.Fatalf("got %v, %v; want an error starting %q", obs, err, tc.want)
			}
		})
	}
}

// refusing registers collectors until its n-th, which it refuses, and
// records what stays registered.
type refusing struct {
	n    int
	seen int
	live map[prometheus.Collector]bool
}

func (r *refusing) Register(c prometheus.Collector) error {
	if r.seen++; r.seen == r.n {
		return errors.New("refused")
	}
	r.live[c] = true
	return nil
}

func (r *refusing) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

func (r *refusing) Unregister(c prometheus.Collector) bool {
	ok := r.live[c]
	delete(r.live, c)
	return ok
}

// TestRegisterFails: when the registry refuses one of the metrics, New
// leaves none registered, whichever it was.
func TestRegisterFails(t *testing.T) {
	t.Parallel()
	withBreaker := promobs.WithHealth("redis", &reporter{})
	for n := 1; n <= 8; n++ {
		r := &refusing{n: n, live: map[prometheus.Collector]bool{}}
		obs, err := promobs.New(r, withBreaker)
		if err == nil || obs != nil || !strings.Contains(err.Error(), "refused") {
			t.Fatalf("refusing the %d-th: %v, %v", n, obs, err)
		}
		if r.seen != n || len(r.live) != 0 {
			t.Errorf("refusing the %d-th: %d registered, %d left registered", n, r.seen, len(r.live))
		}
	}
	r := &refusing{n: 9, live: map[prometheus.Collector]bool{}}
	if _, err := promobs.New(r, withBreaker); err != nil || len(r.live) != 8 {
		t.Fatalf("%v; %d registered, want 8", err, len(r.live))
	}
}

// TestRegisterTwice: a second Observer on one registry is refused unless
// the registry is wrapped, with a prefix or with labels.
func TestRegisterTwice(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	obs, err := promobs.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := promobs.New(reg); err == nil || !strings.Contains(err.Error(), "WrapRegistererWithPrefix") {
		t.Fatalf("a second Observer with the same names: %v", err)
	}
	edge, err := promobs.New(prometheus.WrapRegistererWithPrefix("edge_", reg))
	if err != nil {
		t.Fatal(err)
	}
	obs.Observe(context.Background(), core.Event{Transport: "http", Outcome: core.OutcomeAllowed})
	edge.Observe(context.Background(), core.Event{Transport: "grpc", Outcome: core.OutcomeDenied})
	diff(t, samples(t, reg), map[string]float64{
		"floodgate_requests_total{limit=,outcome=allowed,shadow=false,transport=http}":     1,
		"edge_floodgate_requests_total{limit=,outcome=denied,shadow=false,transport=grpc}": 1,
	})
}

// TestNamesInNewMemory: a limit name is one series whatever memory holds
// it, also after names in fresh memory (more than the identity cache
// keeps) have filled the cache; and a store error that names a limit adds
// to its transport's store errors rather than making a second metric.
func TestNamesInNewMemory(t *testing.T) {
	t.Parallel()
	obs, reg := newObserver(t)
	ctx := context.Background()
	const n = 10000
	stable := core.PerSecond(1).WithName("api")
	for i := range n {
		name := strings.Clone("api")
		if i%2 == 0 {
			name = stable.Name
		}
		obs.Observe(ctx, core.Event{Transport: strings.Clone("http"), Outcome: core.OutcomeAllowed, Decision: decided(name, true)})
	}
	obs.Observe(ctx, core.Event{Transport: "http", Outcome: core.OutcomeStoreError, Failure: core.FailOpen, Decision: decided("api", false)})
	obs.Observe(ctx, core.Event{Transport: "http", Outcome: core.OutcomeStoreError, Failure: core.FailOpen})
	diff(t, samples(t, reg), map[string]float64{
		"floodgate_requests_total{limit=api,outcome=allowed,shadow=false,transport=http}":     n,
		"floodgate_requests_total{limit=api,outcome=store_error,shadow=false,transport=http}": 1,
		"floodgate_requests_total{limit=,outcome=store_error,shadow=false,transport=http}":    1,
		"floodgate_store_errors_total{failure=fail-open,transport=http}":                      2,
	})
}

// TestScrapeWhileObserving: scrapes running during observations see
// counts that only grow, and once the observers stop, every event.
func TestScrapeWhileObserving(t *testing.T) {
	t.Parallel()
	obs, reg := newObserver(t)
	const goroutines, each = 4, 2000
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				obs.Observe(context.Background(), core.Event{
					Transport: "http", Outcome: core.OutcomeDenied, Decision: decided(fmt.Sprintf("l%d", (g+i)%3), false),
					Latency: time.Duration(1+i%3) * time.Millisecond, Held: time.Second,
				})
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	total := func(s map[string]float64, prefix string) float64 {
		var n float64
		for k, v := range only(s, prefix) {
			if !strings.Contains(k, "_bucket") {
				n += v
			}
		}
		return n
	}
	last := 0.0
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		n := total(samples(t, reg), "floodgate_requests_total")
		if n < last {
			t.Fatalf("requests went from %v to %v", last, n)
		}
		last = n
	}
	s := samples(t, reg)
	if got := total(s, "floodgate_requests_total"); got != goroutines*each {
		t.Errorf("%v requests, want %d", got, goroutines*each)
	}
	if got := total(s, "floodgate_decision_duration_seconds_count"); got != goroutines*each {
		t.Errorf("%v latencies, want %d", got, goroutines*each)
	}
	if got := total(s, "floodgate_denial_hold_seconds_sum"); got != goroutines*each {
		t.Errorf("%v seconds held, want %d", got, goroutines*each)
	}
}

// TestBucketsDefaultPerHistogram: WithBuckets sets each histogram's bounds,
// and a nil slice keeps that histogram's default.
func TestBucketsDefaultPerHistogram(t *testing.T) {
	t.Parallel()
	bounds := func(reg prometheus.Gatherer, name string) int {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == name {
				return len(mf.GetMetric()[0].GetHistogram().GetBucket())
			}
		}
		t.Fatalf("no %s", name)
		return 0
	}
	for _, tt := range []struct {
		latency, hold []float64
		want          [2]int
	}{
		{nil, nil, [2]int{14, 10}},
		{[]float64{0.001}, nil, [2]int{1, 10}},
		{nil, []float64{1, 2}, [2]int{14, 2}},
	} {
		obs, reg := newObserver(t, promobs.WithBuckets(tt.latency, tt.hold))
		obs.Observe(context.Background(), core.Event{Transport: "http", Outcome: core.OutcomeDenied, Key: "a", Cost: 1,
			Decision: decided("api", false), Latency: time.Millisecond, Held: time.Second})
		got := [2]int{bounds(reg, "floodgate_decision_duration_seconds"), bounds(reg, "floodgate_denial_hold_seconds")}
		if got != tt.want {
			t.Errorf("WithBuckets(%v, %v): %v bounds, want %v", tt.latency, tt.hold, got, tt.want)
		}
	}
}

// TestShedByPriority: a shed counts in requests_total as outcome "shed"
// and in shed_total by the priority its request's context carried.
func TestShedByPriority(t *testing.T) {
	t.Parallel()
	obs, reg := newObserver(t)
	obstest.ObserveSheds(obs)
	const s = "floodgate_shed_total"
	diff(t, samples(t, reg), map[string]float64{
		"floodgate_requests_total{limit=adaptive,outcome=shed,shadow=false,transport=http}": 6,
		s + "{limit=adaptive,priority=sheddable,transport=http}":                            2,
		s + "{limit=adaptive,priority=normal,transport=http}":                               2,
		s + "{limit=adaptive,priority=critical,transport=http}":                             1,
		s + "{limit=adaptive,priority=5,transport=http}":                                    1,
	})
}

// TestGuard: WithGuard exports each guard's limit, requests in flight and
// latency, read at each scrape; a nil guard, an empty name and a name
// given twice are refused.
func TestGuard(t *testing.T) {
	t.Parallel()
	clk := coretest.NewClock(coretest.T0)
	ad, err := overload.NewAdaptive(overload.AdaptiveConfig{Clock: clk, InitialLimit: 8})
	if err != nil {
		t.Fatal(err)
	}
	cpu := 0.1
	bbr, err := overload.NewBBR(overload.BBRConfig{Clock: clk, CPU: func() float64 { return cpu }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bbr.Close() })
	_, reg := newObserver(t, promobs.WithGuard("api", ad), promobs.WithGuard("cpu", bbr))
	want := func(apiLimit, apiIn, cpuLimit float64) map[string]float64 {
		return map[string]float64{
			"floodgate_guard_limit{guard=api}":           apiLimit,
			"floodgate_guard_in_flight{guard=api}":       apiIn,
			"floodgate_guard_latency_seconds{guard=api}": 0,
			"floodgate_guard_limit{guard=cpu}":           cpuLimit,
			"floodgate_guard_in_flight{guard=cpu}":       0,
			"floodgate_guard_latency_seconds{guard=cpu}": 0,
		}
	}
	diff(t, samples(t, reg), want(8, 0, 0))
	tok, _ := ad.Acquire(overload.Normal, 3)
	cpu = 0.95 // BBR's bound now applies: one request, nothing measured yet
	diff(t, samples(t, reg), want(8, 3, 1))
	tok.End(core.EndDone)
	for _, tt := range []struct {
		opts []promobs.Option
		want string
	}{
		{[]promobs.Option{promobs.WithGuard("api", nil)}, "nil"},
		{[]promobs.Option{promobs.WithGuard("", ad)}, "empty"},
		{[]promobs.Option{promobs.WithGuard("api", ad), promobs.WithGuard("api", bbr)}, "two guards"},
	} {
		if _, err := promobs.New(prometheus.NewRegistry(), tt.opts...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: want an error saying %q", err, tt.want)
		}
	}
}

// TestShedNoAllocs: once a limit's series exist, a shed of a named
// priority is counted with no allocation (sheds are the overloaded path).
func TestShedNoAllocs(t *testing.T) {
	obs, _ := newObserver(t)
	obstest.ShedNoAllocs(t, obs)
}
