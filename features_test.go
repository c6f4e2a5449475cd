package floodgate_test

// The conformance suite's scenarios for the adapters' shared features:
// leases released however a request ends, denials held before their
// answer, layered limiters that refund the outer charge when the inner one
// refuses, stacked policies in RateLimit-Policy, and a limiter chosen per
// request. Each runs on all four targets of middleware_test.go, which must
// answer alike.

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/overload"
)

// inflight is a concurrency limiter: at most max requests per key at once,
// each holding a core.Lease until the adapter releases it.
type inflight struct {
	limit core.Limit
	max   int

	mu       sync.Mutex
	n        int
	refunds  int // Refund calls: an admission with a lease is undone by releasing it
	canceled int // releases under a cancelled context
	released chan struct{}
}

func newInflight(max int) *inflight {
	return &inflight{limit: core.PerMinute(max).WithName("inflight"), max: max, released: make(chan struct{}, 64)}
}

func (l *inflight) Allow(_ context.Context, _ string, cost int) (core.Decision, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n+cost > l.max {
		return core.Decision{Limit: l.limit, RetryAfter: time.Second, ResetAfter: time.Second}, nil
	}
	l.n += cost
	return core.Decision{Allowed: true, Limit: l.limit, Remaining: l.max - l.n, Lease: core.NewLease(func(ctx context.Context, _ core.Ending) error {
		l.mu.Lock()
		l.n -= cost
		if ctx.Err() != nil {
			l.canceled++
		}
		l.mu.Unlock()
		l.released <- struct{}{}
		return nil
	})}, nil
}

func (l *inflight) Refund(context.Context, string, int) error {
	l.mu.Lock()
	l.refunds++
	l.mu.Unlock()
	return nil
}

func (l *inflight) count() int {
	if l == nil {
		return -1
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// idle waits until no request is in flight. A gRPC client that cancels
// returns before the server's handler does, so the release can come a
// little later; the wait is bounded.
func (l *inflight) idle(t *testing.T) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for l.count() != 0 {
		select {
		case <-l.released:
		case <-deadline:
			t.Fatalf("%d requests still in flight after 5s", l.count())
		}
	}
}

// stack enforces every limit of limits on each request, all or nothing: a
// refusal by one refunds those that admitted it. Its Decision describes
// the limit that refused, or the one with the least left.
type stack struct {
	limits   []core.Limit
	limiters []core.Limiter
}

func newStack(clock core.Clock, limits ...core.Limit) *stack {
	s := &stack{limits: limits}
	for _, l := range limits {
		s.limiters = append(s.limiters, core.MustNew(l.WithAlgorithm(core.GCRA), core.WithClock(clock)))
	}
	return s
}

func (s *stack) Policies() []core.Limit { return s.limits }

func (s *stack) Allow(ctx context.Context, key string, cost int) (core.Decision, error) {
	var least core.Decision
	for i, l := range s.limiters {
		d, err := l.Allow(ctx, key, cost)
		if err == nil && !d.Allowed {
			for _, done := range s.limiters[:i] {
				_ = done.Refund(ctx, key, cost)
			}
			return d, nil
		}
		if err != nil {
			return d, err
		}
		if i == 0 || d.Remaining < least.Remaining {
			least = d
		}
	}
	return least, nil
}

func (s *stack) Refund(ctx context.Context, key string, cost int) error {
	for _, l := range s.limiters {
		if err := l.Refund(ctx, key, cost); err != nil {
			return err
		}
	}
	return nil
}

// fstep is one request of a feature scenario and what it must get.
type fstep struct {
	advance time.Duration
	request
	status int
	fields map[string]string // nil: not compared (still compared across targets)
	events []string          // nil: not compared (still compared across targets)
	probe  string            // what a "probe" handler must report; "" when none
	wall   time.Duration     // the answer takes at least this long
	check  func(t *testing.T, a app)
}

type feature struct {
	name  string
	setup func(clock *coretest.Clock) app
	steps []fstep
}

var (
	paid   = core.PerMinute(10).WithName("paid")
	minute = core.PerMinute(3).WithName("minute")
	hour   = core.PerHour(4).WithName("hour")
)

// gcra is the suite's limiter for l on clock.
func gcra(clock *coretest.Clock, l core.Limit) core.Limiter {
	return core.MustNew(l.WithAlgorithm(core.GCRA), core.WithClock(clock))
}

// fresh is the configuration of the other scenarios: global and login on
// clock.
func fresh(clock *coretest.Clock) app {
	return app{global: gcra(clock, global), login: gcra(clock, login)}
}

func idle(t *testing.T, a app) {
	a.inflight.idle(t)
	a.inflight.mu.Lock()
	defer a.inflight.mu.Unlock()
	if a.inflight.refunds != 0 || a.inflight.canceled != 0 {
		t.Errorf("%d refunds, %d releases under a cancelled context; want a release under a live one", a.inflight.refunds, a.inflight.canceled)
	}
}

func withBehave(r request, b string) request { r.behave = b; return r }

var features = []feature{
	{"lease released however the request ends", func(clock *coretest.Clock) app {
		a := fresh(clock)
		a.inflight = newInflight(1)
		a.global = a.inflight
		return a
	}, []fstep{
		{request: withBehave(get("/", "alice"), "probe"), status: 200, probe: "1", check: idle}, // held while the handler runs
		{request: withBehave(get("/", "alice"), "panic"), status: 500, check: idle},
		{request: withBehave(get("/", "alice"), "wait"), status: 499, check: idle}, // the client went away
		{request: get("/", "alice"), status: 200, events: []string{"allowed+admitted"}, check: idle},
	}},
	{"denial held up to the bound, never past RetryAfter", func(clock *coretest.Clock) app {
		a := fresh(clock)
		a.hold = 40 * time.Millisecond
		return a
	}, []fstep{
		{request: get("/", "alice"), status: 200, fields: pass(global, 2, 20).fields},
		{request: get("/", "alice"), status: 200},
		{request: get("/", "alice"), status: 200},
		{request: get("/", "alice"), status: 429, fields: deny(global, 0, 60, 20, 20*time.Second).fields,
			events: []string{"denied+held=40ms"}, wall: 40 * time.Millisecond},
		{advance: 20*time.Second - 10*time.Millisecond, request: get("/", "alice"), status: 429,
			fields: deny(global, 0, 41, 1, 10*time.Millisecond).fields, events: []string{"denied+held=10ms"}, wall: 10 * time.Millisecond},
		{advance: 10 * time.Millisecond, request: get("/", "alice"), status: 200, fields: pass(global, 0, 60).fields},
	}},
	{"inner refusal refunds the outer limiter", func(clock *coretest.Clock) app {
		a := fresh(clock)
		a.layered = true
		return a
	}, []fstep{
		{request: get("/login", "alice"), status: 200, fields: pass(login, 0, 60).fields,
			events: []string{"allowed+admitted", "allowed+admitted"}}, // global charged too
		{request: get("/login", "alice"), status: 429, fields: deny(login, 0, 60, 60, time.Minute).fields,
			events: []string{"allowed+admitted", "denied"}}, // and refunded
		{request: get("/", "alice"), status: 200, fields: pass(global, 1, 40).fields}, // 3 - 1 login - 1
		{request: get("/", "alice"), status: 200, fields: pass(global, 0, 60).fields},
		{request: get("/login", "alice"), status: 429, fields: deny(global, 0, 60, 20, 20*time.Second).fields,
			events: []string{"denied"}}, // the outer refuses first: login is not asked
		{request: get("/login", ""), status: 400},
	}},
	{"stacked policies: every policy listed, the deciding one described", func(clock *coretest.Clock) app {
		a := fresh(clock)
		a.global = newStack(clock, minute, hour)
		return a
	}, []fstep{
		{request: get("/", "alice"), status: 200, fields: stacked(minute, 2, 20, 20, 0)},
		{request: get("/", "alice"), status: 200, fields: stacked(minute, 1, 40, 40, 0)},
		{advance: time.Minute, request: get("/", "alice"), status: 200, fields: stacked(hour, 1, 2640, 2640, 0)},
		{request: get("/", "alice"), status: 200, fields: stacked(hour, 0, 3540, 3540, 0)},
		{request: get("/", "alice"), status: 429, fields: stacked(hour, 0, 3540, 840, 840)},
		// minute was refunded when hour refused: 2 left after this one.
		{request: get("/login", "alice"), status: 200, fields: pass(login, 0, 60).fields},
	}},
	{"limiter chosen per request", func(clock *coretest.Clock) app {
		a := fresh(clock)
		p := gcra(clock, paid)
		a.pick = func(key string) core.Limiter {
			if len(key) > 5 && key[:5] == "paid-" {
				return p
			}
			return nil
		}
		return a
	}, []fstep{
		{request: get("/", "paid-bob"), status: 200, fields: pass(paid, 9, 6).fields},
		{request: get("/", "alice"), status: 200, fields: pass(global, 2, 20).fields},
		{request: get("/", "paid-bob"), status: 200, fields: pass(paid, 8, 12).fields},
		{request: get("/login", "paid-bob"), status: 200, fields: pass(paid, 7, 18).fields}, // the choice overrides the route's limiter
		{request: get("/login", "alice"), status: 200, fields: pass(login, 0, 60).fields},
	}},
	{"shed by an overload guard: unavailable, Retry-After alone", func(clock *coretest.Clock) app {
		return shedBusy(clock, false)
	}, []fstep{
		// 503 (gRPC UNAVAILABLE), Retry-After from the decision and no
		// rate-limit fields: no client quota was read or charged.
		{request: get("/", "busy"), status: 503, fields: map[string]string{"retry-after": "2"}, events: []string{"shed"}},
		{request: get("/login", "busy"), status: 503, fields: map[string]string{"retry-after": "2"}, events: []string{"shed"}},
		{request: get("/", "alice"), status: 200, fields: pass(global, 2, 20).fields, events: []string{"allowed+admitted"}},
	}},
	guardFeature("overload.Adaptive through every adapter: admitted, then shed while full", 2,
		func(clock *coretest.Clock) (core.Limiter, error) {
			return overload.NewAdaptive(overload.AdaptiveConfig{Clock: clock, InitialLimit: 2, MinLimit: 2})
		}),
	// The CPU past the threshold from the start: with nothing measured
	// yet, BBR's bound is the one request it always admits.
	guardFeature("overload.BBR through every adapter: admitted, then shed while its bound is held", 1,
		func(clock *coretest.Clock) (core.Limiter, error) {
			return overload.NewBBR(overload.BBRConfig{Clock: clock, CPU: func() float64 { return 0.95 }})
		}),
	{"shed in shadow mode: observed, never enforced", func(clock *coretest.Clock) app {
		return shedBusy(clock, true)
	}, []fstep{
		{request: get("/", "busy"), status: 200, fields: map[string]string{}, events: []string{"shed+admitted+shadow"}},
	}},
	{"shadow mode: decided and observed, never enforced", func(clock *coretest.Clock) app {
		a := fresh(clock)
		a.shadow = true
		a.hold = 40 * time.Millisecond // a shadow denial is never held
		return a
	}, []fstep{
		// No fields without WithHeaders: clients see no sign of the policy.
		{request: get("/", "alice"), status: 200, fields: map[string]string{}, events: []string{"allowed+admitted+shadow"}},
		{request: get("/", "alice"), status: 200, fields: map[string]string{}},
		{request: get("/", "alice"), status: 200, fields: map[string]string{}},
		{request: get("/", "alice"), status: 200, fields: map[string]string{}, events: []string{"denied+admitted+shadow"}},
		// With WithHeaders: what enforcing would send, less Retry-After.
		{request: get("/login", "alice"), status: 200, fields: pass(login, 0, 60).fields, events: []string{"allowed+admitted+shadow"}},
		{request: get("/login", "alice"), status: 200, fields: pass(login, 0, 60).fields, events: []string{"denied+admitted+shadow"}},
		// A request with no key goes through too, and is reported.
		{request: get("/login", ""), status: 200, fields: map[string]string{}, events: []string{"bad_key+admitted+shadow"}},
		// The shadow limiter's state is the enforced one's would be:
		// denials charged nothing, 20 s on one slot comes back.
		{advance: 20 * time.Second, request: get("/", "alice"), status: 200, fields: map[string]string{}, events: []string{"allowed+admitted+shadow"}},
		{request: get("/", "alice"), status: 200, fields: map[string]string{}, events: []string{"denied+admitted+shadow"}},
	}},
}

// guardFeature runs the overload guard newGuard makes for the API key
// "busy" through an adapter: a request is admitted (its slot given back
// when it ends); with the guard's bound of slots held elsewhere, the next
// is shed: 503 / UNAVAILABLE with Retry-After (the RetryAfter of at least
// 1 ms, so 1 s) and no rate-limit fields; once they are freed, admitted.
func guardFeature(name string, bound int, newGuard func(*coretest.Clock) (core.Limiter, error)) feature {
	return feature{name, func(clock *coretest.Clock) app {
		a := fresh(clock)
		g, err := newGuard(clock)
		if err != nil {
			panic(err)
		}
		a.guard = &heldGuard{lim: g}
		a.pick = func(key string) core.Limiter {
			if key == "busy" {
				return g
			}
			return nil
		}
		return a
	}, []fstep{
		{request: get("/", "busy"), status: 200, events: []string{"allowed+admitted"}, check: func(t *testing.T, a app) { a.guard.fill(t, bound) }},
		{request: get("/", "busy"), status: 503, fields: map[string]string{"retry-after": "1"}, events: []string{"shed"}, check: func(t *testing.T, a app) { a.guard.free() }},
		{request: get("/", "busy"), status: 200, events: []string{"allowed+admitted"}},
	}}
}

// heldGuard holds slots of an overload guard outside the adapters, so
// that a step finds it full.
type heldGuard struct {
	lim    core.Limiter
	leases []core.Lease
}

// fill takes n slots at Normal priority.
func (g *heldGuard) fill(t *testing.T, n int) {
	for range n {
		d, err := g.lim.Allow(context.Background(), "held", 1)
		if err != nil || !d.Allowed {
			t.Fatalf("the guard refused slot %d of %d: %+v, %v", len(g.leases)+1, n, d, err)
		}
		g.leases = append(g.leases, d.Lease)
	}
}

// free gives the slots back.
func (g *heldGuard) free() {
	for _, l := range g.leases {
		_ = l.End(context.Background(), core.EndIgnored)
	}
	g.leases = nil
}

// shedding is an overload guard that sheds every request it is asked
// about: a refusal with Shed set and a RetryAfter of 2 s.
type shedding struct{}

func (shedding) Allow(context.Context, string, int) (core.Decision, error) {
	return core.Decision{Shed: true, Limit: core.PerSecond(100).WithName("adaptive"), RetryAfter: 2 * time.Second}, nil
}

func (shedding) Refund(context.Context, string, int) error { return nil }

// stacked are the fields of a decision by l within the minute+hour stack:
// RateLimit-Policy lists both.
func stacked(l core.Limit, r, reset, t, retryAfter int) map[string]string {
	f := map[string]string{
		"x-ratelimit-limit":     fmt.Sprint(l.Events),
		"x-ratelimit-remaining": fmt.Sprint(r),
		"x-ratelimit-reset":     fmt.Sprint(reset),
		"ratelimit-policy":      `"minute";q=3;w=60, "hour";q=4;w=3600`,
		"ratelimit":             fmt.Sprintf("%q;r=%d;t=%d", l.Name, r, t),
	}
	if retryAfter > 0 {
		f["retry-after"] = fmt.Sprint(retryAfter)
	}
	return f
}

func TestConformanceFeatures(t *testing.T) {
	t.Parallel()
	for _, sc := range features {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			got := make([][]response, len(targets))
			t.Cleanup(func() {
				for i := 1; i < len(targets); i++ {
					if len(got[i]) != len(sc.steps) || len(got[0]) != len(sc.steps) {
						continue
					}
					for j := range sc.steps {
						a, b := got[0][j], got[i][j]
						if a.status != b.status || !reflect.DeepEqual(a.fields, b.fields) || !slices.Equal(a.events, b.events) || a.probe != b.probe {
							t.Errorf("step %d: %s answered %d %v %v %q, %s answered %d %v %v %q", j+1,
								targets[0].name, a.status, a.fields, a.events, a.probe, targets[i].name, b.status, b.fields, b.events, b.probe)
						}
					}
				}
			})
			for i, tg := range targets {
				t.Run(tg.name, func(t *testing.T) {
					t.Parallel()
					got[i] = runFeature(t, sc, tg)
				})
			}
		})
	}
}

func runFeature(t *testing.T, sc feature, tg target) []response {
	clock := coretest.NewClock(time.Unix(1_700_000_000, 0))
	a := sc.setup(clock)
	obs := &observed{}
	a.obs, a.started = obs, make(chan struct{}, 1)
	c := tg.build(t, a)
	var out []response
	for i, st := range sc.steps {
		clock.Advance(st.advance)
		start := time.Now()
		res := c.do(t, st.request)
		took := time.Since(start)
		res.events = obs.take()
		if st.behave == "panic" || st.behave == "wait" {
			// No answer reaches the client (a dropped connection, a
			// cancelled call); what the recorder or a recovery interceptor
			// kept is no transport's answer.
			res.fields = nil
		}
		out = append(out, res)
		what := fmt.Sprintf("step %d (%+v)", i+1, st.request)
		if res.status != st.status || st.fields != nil && !reflect.DeepEqual(res.fields, st.fields) {
			t.Errorf("%s:\n got %d %v\nwant %d %v", what, res.status, res.fields, st.status, st.fields)
		}
		if st.events != nil && !slices.Equal(res.events, st.events) {
			t.Errorf("%s: observed %v, want %v", what, res.events, st.events)
		}
		if res.probe != st.probe {
			t.Errorf("%s: the handler saw %q requests in flight, want %q", what, res.probe, st.probe)
		}
		if took < st.wall {
			t.Errorf("%s: answered after %v, want at least %v", what, took, st.wall)
		}
		if st.check != nil {
			st.check(t, a)
		}
	}
	return out
}

// shedBusy is the fresh app whose requests keyed "busy" go to a limiter
// that sheds them all (the others to the app's own), in shadow mode or
// not.
func shedBusy(clock *coretest.Clock, shadow bool) app {
	a := fresh(clock)
	a.shadow = shadow
	a.pick = func(key string) core.Limiter {
		if key == "busy" {
			return shedding{}
		}
		return nil
	}
	return a
}
