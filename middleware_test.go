package floodgate_test

// The cross-adapter conformance suite, in uber-go/ratelimit's runTest style:
// one table of scenarios, run against every adapter (net/http, Gin, Echo and
// gRPC), each built fresh per scenario from one configuration, on a fake clock.
// Every step states the exact answer, and all four adapters must give it.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/labstack/echo/v4"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/echomw"
	"github.com/floodgate/floodgate/ginmw"
	"github.com/floodgate/floodgate/grpcclient"
	"github.com/floodgate/floodgate/grpcmw"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/keyfunc"
)

func init() { gin.SetMode(gin.TestMode) }

// The configuration every target is built from, per API key:
//   - global limits the default route: HTTP GET / and gRPC Health/Check;
//   - login replaces it on HTTP GET /login and gRPC Health/List;
//   - HTTP GET /health (skipped) and gRPC Health/Watch (exempt) are never limited;
//   - a call costs its X-Cost header (x-cost metadata), 1 without one.
var (
	global = core.PerMinute(3).WithName("global")
	login  = core.PerMinute(1).WithName("login")
)

// config is what scenarios vary.
type config struct {
	down bool             // global's store fails with storeErr (login's works)
	mode core.FailureMode // for both limiters; core.FailureMode is the same type
}

var storeErr = &core.StoreError{Op: "allow", Err: errors.New("redis: connection refused")}

// leaks are pieces of internal error text that no answer may carry.
var leaks = []string{"redis", "refused", "keyfunc", "no key", "not a number", "invalid cost", "core:"}

type request struct {
	route  string // "/", "/login" or "/health"
	key    string // the API key; "" sends none
	cost   string // the cost; "" sends none
	behave string // what the handler does: "" answers, see behaving
}

// response is an answer normalized across transports.
type response struct {
	status int               // HTTP status; gRPC codes mapped by httpStatus
	fields map[string]string // rate-limit fields present, by lower-case name
	delay  time.Duration     // gRPC RetryInfo's delay (0 without one); not compared for HTTP
	text   string            // everything else the client sees, checked for leaks only
	events []string          // what the observer heard: outcome, "+admitted", "+overflow"
	probe  string            // what a "probe" handler reported
}

type step struct {
	advance time.Duration // the clock moves this much before the request
	request
	want response
}

var fieldNames = []string{"x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "ratelimit-policy", "ratelimit", "retry-after"}

// pass is an admitted answer under l: r left, the quota whole in reset seconds.
func pass(l core.Limit, r, reset int) response {
	return response{status: 200, fields: fields(l, r, reset, reset)}
}

// deny is a refusal under l: r left, whole in reset seconds, Retry-After
// and t retryAfter seconds, and a RetryInfo (and Decision.RetryAfter) of delay.
func deny(l core.Limit, r, reset, retryAfter int, delay time.Duration) response {
	f := fields(l, r, reset, retryAfter)
	f["retry-after"] = strconv.Itoa(retryAfter)
	return response{status: 429, fields: f, delay: delay}
}

// fields are the rate-limit fields of a per-minute policy (w=60).
func fields(l core.Limit, r, reset, t int) map[string]string {
	return map[string]string{
		"x-ratelimit-limit":     strconv.Itoa(l.Events),
		"x-ratelimit-remaining": strconv.Itoa(r),
		"x-ratelimit-reset":     strconv.Itoa(reset),
		"ratelimit-policy":      fmt.Sprintf("%q;q=%d;w=60", l.Name, l.Events),
		"ratelimit":             fmt.Sprintf("%q;r=%d;t=%d", l.Name, r, t),
	}
}

// bare is an answer without rate-limit fields.
func bare(status int) response { return response{status: status, fields: map[string]string{}} }

// unavailable is the fail-closed answer to a store failure.
var unavailable = response{status: 429, fields: map[string]string{"retry-after": "1"}, delay: time.Second}

func get(route, key string) request        { return request{route: route, key: key} }
func costs(key, cost string) request       { return request{route: "/", key: key, cost: cost} }
func at(d time.Duration, s step) step      { s.advance = d; return s }
func expect(r request, want response) step { return step{request: r, want: want} }

// burst is alice spending the global quota on GET /.
var burst = []step{
	expect(get("/", "alice"), pass(global, 2, 20)),
	expect(get("/", "alice"), pass(global, 1, 40)),
	expect(get("/", "alice"), pass(global, 0, 60)),
}

func then(steps ...step) []step { return append(append([]step(nil), burst...), steps...) }

var scenarios = []struct {
	name  string
	cfg   config
	steps []step
}{
	{"burst then deny, fields on both", config{}, then(
		expect(get("/", "alice"), deny(global, 0, 60, 20, 20*time.Second)),
		expect(get("/", "alice"), deny(global, 0, 60, 20, 20*time.Second)), // a denial charges nothing
	)},
	{"retry exactly after RetryAfter", config{}, then(
		expect(get("/", "alice"), deny(global, 0, 60, 20, 20*time.Second)),
		at(20*time.Second, expect(get("/", "alice"), pass(global, 0, 60))),
		expect(get("/", "alice"), deny(global, 0, 60, 20, 20*time.Second)),
		at(20*time.Second-time.Nanosecond, expect(get("/", "alice"), deny(global, 0, 41, 1, time.Nanosecond))),
		at(time.Nanosecond, expect(get("/", "alice"), pass(global, 0, 60))),
	)},
	{"Retry-After rounds up, never 0", config{}, then(
		at(5*time.Second, expect(get("/", "alice"), deny(global, 0, 55, 15, 15*time.Second))),
		at(14500*time.Millisecond, expect(get("/", "alice"), deny(global, 0, 41, 1, 500*time.Millisecond))),
		at(500*time.Millisecond, expect(get("/", "alice"), pass(global, 0, 60))),
	)},
	{"keys are independent", config{}, then(
		expect(get("/", "alice"), deny(global, 0, 60, 20, 20*time.Second)),
		expect(get("/", "bob"), pass(global, 2, 20)),
		expect(get("/", "bob"), pass(global, 1, 40)),
		expect(get("/", "bob"), pass(global, 0, 60)),
		expect(get("/", "bob"), deny(global, 0, 60, 20, 20*time.Second)),
		at(10*time.Second, expect(get("/", "alice"), deny(global, 0, 50, 10, 10*time.Second))),
	)},
	{"per-route override", config{}, []step{
		expect(get("/login", "alice"), pass(login, 0, 60)),
		expect(get("/login", "alice"), deny(login, 0, 60, 60, time.Minute)),
		expect(get("/login", "bob"), pass(login, 0, 60)),
		expect(get("/", "alice"), pass(global, 2, 20)), // login spent none of global
		expect(get("/", "alice"), pass(global, 1, 40)),
		expect(get("/", "alice"), pass(global, 0, 60)),
		expect(get("/", "alice"), deny(global, 0, 60, 20, 20*time.Second)),
		at(30*time.Second, expect(get("/login", "alice"), deny(login, 0, 30, 30, 30*time.Second))),
		at(30*time.Second, expect(get("/login", "alice"), pass(login, 0, 60))),
	}},
	{"cost above 1", config{}, []step{
		expect(costs("alice", "2"), pass(global, 1, 40)),
		expect(costs("alice", "2"), deny(global, 1, 40, 20, 20*time.Second)),
		expect(costs("alice", "1"), pass(global, 0, 60)),
		at(40*time.Second, expect(costs("alice", "2"), pass(global, 0, 60))),
		expect(costs("alice", "2"), deny(global, 0, 60, 40, 40*time.Second)),
		at(40*time.Second, expect(costs("alice", "2"), pass(global, 0, 60))),
	}},
	{"invalid cost charges nothing, free costs nothing", config{}, []step{
		expect(costs("alice", "4"), bare(413)),  // more than the burst: retrying will not help
		expect(costs("alice", "0"), bare(200)),  // free: passes, no fields, nothing charged
		expect(costs("alice", "x"), bare(400)),  // the cost function's own ErrInvalidCost: the client's
		expect(costs("alice", "-1"), bare(500)), // a negative cost is the cost function's bug
		expect(request{route: "/login", key: "alice", cost: "2"}, bare(413)),
		expect(costs("alice", "3"), pass(global, 0, 60)),
		expect(costs("alice", "4"), bare(413)), // still 413, not 429: waiting would not help
		expect(get("/login", "alice"), pass(login, 0, 60)),
	}},
	{"missing key is the client's error", config{}, []step{
		expect(get("/", ""), bare(400)),
		expect(get("/login", ""), bare(400)),
		expect(get("/", "alice"), pass(global, 2, 20)),
	}},
	{"store down, fail closed", config{down: true, mode: core.FailClosed}, []step{
		expect(get("/", "alice"), unavailable),
		expect(get("/", "alice"), unavailable),
		expect(get("/", ""), bare(400)), // the key is needed before the store is asked
		expect(costs("alice", "x"), bare(400)),
		expect(get("/login", "alice"), pass(login, 0, 60)), // login's store works
		expect(get("/health", "alice"), bare(200)),
	}},
	{"store down, fail open", config{down: true, mode: core.FailOpen}, []step{
		expect(get("/", "alice"), bare(200)),
		expect(get("/", "alice"), bare(200)),
		expect(get("/", "alice"), bare(200)),
		expect(get("/", "alice"), bare(200)),
		expect(get("/", ""), bare(400)), // key failures are never admitted
		expect(get("/login", "alice"), pass(login, 0, 60)),
	}},
	{"skipped route is never limited", config{}, then(
		expect(get("/health", "alice"), bare(200)),
		expect(get("/health", "alice"), bare(200)),
		expect(get("/health", ""), bare(200)),                                 // skipped before the key function
		expect(request{route: "/health", key: "alice", cost: "x"}, bare(200)), // and the cost function
		expect(get("/", "alice"), deny(global, 0, 60, 20, 20*time.Second)),    // health charged nothing
		at(20*time.Second, expect(get("/", "alice"), pass(global, 0, 60))),
	)},
}

// target is one adapter: build serves the configuration from limiters a.
type target struct {
	name  string
	grpc  bool // its answers carry RetryInfo
	build func(t *testing.T, a app) client
}

type app struct {
	global, login core.Limiter
	mode          core.FailureMode
	obs           core.Observer
	// The features of the scenarios in features_test.go; zero elsewhere.
	layered  bool                          // global on every route (but /health) outside login, refunded when login refuses
	hold     time.Duration                 // WithDenialHold(hold, 1) on every limiter
	pick     func(key string) core.Limiter // WithLimiterFunc by API key
	shadow   bool                          // WithShadow on every limiter, WithHeaders on login's
	started  chan struct{}                 // a "wait" handler sends on it once running
	inflight *inflight                     // what a "probe" handler reports
	guard    *heldGuard                    // an overload guard whose slots a step's check fills or frees
}

type client interface {
	do(t *testing.T, r request) response
}

var targets = []target{
	{name: "net/http", build: buildHTTP},
	{name: "gin", build: buildGin},
	{name: "echo", build: buildEcho},
	{name: "grpc", grpc: true, build: buildGRPC},
}

func TestConformance(t *testing.T) {
	t.Parallel()
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			got := make([][]response, len(targets))
			t.Cleanup(func() { sameAcrossTargets(t, sc.steps, got) })
			for i, tg := range targets {
				t.Run(tg.name, func(t *testing.T) {
					t.Parallel()
					got[i] = run(t, sc.cfg, sc.steps, tg)
				})
			}
		})
	}
}

func run(t *testing.T, cfg config, steps []step, tg target) []response {
	clock := coretest.NewClock(time.Unix(1_700_000_000, 0))
	s := &spy{}
	// GCRA decides in integer nanoseconds, so every RetryAfter in the table
	// is exact; the token bucket's float arithmetic can end a wait 1ns short.
	newLimiter := func(l core.Limit) core.Limiter {
		return s.wrap(core.MustNew(l.WithAlgorithm(core.GCRA), core.WithClock(clock)))
	}
	obs := &observed{}
	a := app{global: failing{}, login: newLimiter(login), mode: cfg.mode, obs: obs}
	if !cfg.down {
		a.global = newLimiter(global)
	}
	c := tg.build(t, a)
	var out []response
	for i, st := range steps {
		clock.Advance(st.advance)
		got := c.do(t, st.request)
		got.events = obs.take()
		out = append(out, got)
		what := fmt.Sprintf("step %d (%+v)", i+1, st.request)
		if want, ok := wantEvent(cfg, st.want); ok && (len(got.events) != 1 || got.events[0] != want) {
			t.Errorf("%s: observed %v, want [%s]", what, got.events, want)
		}
		if got.status != st.want.status || !reflect.DeepEqual(got.fields, st.want.fields) {
			t.Errorf("%s:\n got %d %v\nwant %d %v", what, got.status, got.fields, st.want.status, st.want.fields)
		}
		if tg.grpc && got.delay != st.want.delay {
			t.Errorf("%s: RetryInfo delay %v, want %v", what, got.delay, st.want.delay)
		}
		if d, ok := s.take(); ok && !d.Allowed && d.RetryAfter != st.want.delay {
			t.Errorf("%s: Decision.RetryAfter %v, want %v", what, d.RetryAfter, st.want.delay)
		}
		text := strings.ToLower(got.text)
		for _, leak := range append(slices.Clip(leaks), st.key) {
			if leak != "" && strings.Contains(text, leak) {
				t.Errorf("%s: answer carries %q: %q", what, leak, got.text)
			}
		}
	}
	return out
}

// sameAcrossTargets checks that every target answered what the first one
// did: status and fields everywhere, and for HTTP also the same text.
func sameAcrossTargets(t *testing.T, steps []step, got [][]response) {
	for i := 1; i < len(targets); i++ {
		if len(got[i]) != len(steps) || len(got[0]) != len(steps) {
			continue // a target stopped early; it failed already
		}
		for j := range steps {
			a, b := got[0][j], got[i][j]
			sameText := targets[i].grpc || a.text == b.text
			if a.status != b.status || !reflect.DeepEqual(a.fields, b.fields) || !sameText {
				t.Errorf("step %d: %s answered %d %v %q, %s answered %d %v %q", j+1,
					targets[0].name, a.status, a.fields, a.text, targets[i].name, b.status, b.fields, b.text)
			}
			if !slices.Equal(a.events, b.events) {
				t.Errorf("step %d: %s observed %v, %s observed %v", j+1, targets[0].name, a.events, targets[i].name, b.events)
			}
		}
	}
}

// spy records the latest Decision of the limiters it wraps, so that a
// denial's RetryInfo is checked against the Decision it was written from.
type spy struct {
	mu   sync.Mutex
	last *core.Decision
}

type spied struct {
	core.Limiter
	s *spy
}

func (s *spy) wrap(l core.Limiter) core.Limiter { return spied{l, s} }

func (l spied) Allow(ctx context.Context, key string, cost int) (core.Decision, error) {
	d, err := l.Limiter.Allow(ctx, key, cost)
	if err == nil {
		l.s.mu.Lock()
		l.s.last = &d
		l.s.mu.Unlock()
	}
	return d, err
}

func (s *spy) take() (core.Decision, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.last
	s.last = nil
	if d == nil {
		return core.Decision{}, false
	}
	return *d, true
}

// observed records what an adapter's core.Observer hears.
type observed struct {
	mu     sync.Mutex
	events []string
}

func (o *observed) Observe(_ context.Context, e core.Event) {
	s := e.Outcome.String()
	if e.Admitted {
		s += "+admitted"
	}
	if e.Decision.Overflow {
		s += "+overflow"
	}
	if e.Held > 0 {
		s += "+held=" + e.Held.String()
	}
	if e.Shadow {
		s += "+shadow"
	}
	if (e.Err != nil) != (e.Outcome != core.OutcomeAllowed && e.Outcome != core.OutcomeDenied && e.Outcome != core.OutcomeShaped && e.Outcome != core.OutcomeShed) {
		s += "+err-mismatch"
	}
	o.mu.Lock()
	o.events = append(o.events, s)
	o.mu.Unlock()
}

func (o *observed) take() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	e := o.events
	o.events = nil
	return e
}

// wantEvent is the one event a step's answer implies, when it implies one:
// a bare 200 may be skipped, free or failed open, which the cross-target
// comparison still checks.
func wantEvent(cfg config, r response) (string, bool) {
	switch {
	case r.status == 200 && len(r.fields) > 0:
		return "allowed+admitted", true
	case r.status == 200 && cfg.down && cfg.mode == core.FailOpen:
		return "", false
	case r.status == 429 && r.fields["ratelimit"] != "":
		return "denied", true
	case r.status == 429:
		return "store_error", true
	case r.status == 400:
		return "", false // bad key or bad cost: compared across targets
	case r.status == 413:
		return "bad_cost", true
	case r.status == 500:
		return "error", true
	}
	return "", false
}

// failing is a core.Limiter whose store is down.
type failing struct{}

func (failing) Allow(context.Context, string, int) (core.Decision, error) {
	return core.Decision{}, storeErr
}
func (failing) Refund(context.Context, string, int) error { return storeErr }

func parseCost(v string) (int, error) {
	if v == "" {
		return 1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("cost %q is not a number: %w", v, core.ErrInvalidCost)
	}
	return n, nil
}

// HTTP targets: the global limiter is installed on every route and skips
// /health (exempt) and /login (which has its own).

var apiKey = keyfunc.Header("X-Api-Key")

func httpOpts(a app) []httpmw.Option {
	opts := []httpmw.Option{
		httpmw.WithCost(func(r *http.Request) (int, error) { return parseCost(r.Header.Get("X-Cost")) }),
		httpmw.WithFailureMode(a.mode),
		httpmw.WithObserver(a.obs),
	}
	if a.hold > 0 {
		opts = append(opts, httpmw.WithDenialHold(a.hold, 1))
	}
	if a.shadow {
		opts = append(opts, httpmw.WithShadow())
	}
	return opts
}

// httpLimiter is def behind apiKey with opts or, when a.pick chooses the
// limiter by API key, the choice, def where it chooses none.
func httpLimiter(a app, def core.Limiter, opts ...httpmw.Option) *httpmw.Limiter {
	pick := a.pick
	if pick == nil {
		return httpmw.MustNew(def, apiKey, opts...)
	}
	return httpmw.MustNew(nil, apiKey, append(opts, httpmw.WithLimiterFunc(func(r *http.Request) core.Limiter {
		if l := pick(r.Header.Get("X-Api-Key")); l != nil {
			return l
		}
		return def
	}))...)
}

// loginOpts are the login limiter's options: in shadow mode it sends the
// rate-limit headers, the global one does not.
func loginOpts(a app) []httpmw.Option {
	opts := httpOpts(a)
	if a.shadow {
		opts = append(opts, httpmw.WithHeaders(core.HeadersBoth))
	}
	return opts
}

// globalSkip is what the global limiter skips: /health, and /login unless
// layered.
func globalSkip(a app) func(*http.Request) bool {
	return func(r *http.Request) bool { return r.URL.Path == "/health" || !a.layered && r.URL.Path == "/login" }
}

// globalOpts are the global limiter's options but its skip function:
// layered, it records its charges for login to refund.
func globalOpts(a app) []httpmw.Option {
	opts := httpOpts(a)
	if a.layered {
		opts = append(opts, httpmw.WithRefundOnInnerRefusal())
	}
	return opts
}

var hello = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8") // so no recorder sniffs it
	_, _ = io.WriteString(w, "hello")
})

// errBoom is what a "panic" handler panics with.
var errBoom = errors.New("boom")

// behaving is hello, or with X-Behave what the request asks for: "panic"
// panics, "wait" waits for the client to go away and answers 499, "probe"
// says in X-Probe how many requests a.inflight counts.
func behaving(a app) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Header.Get("X-Behave") {
		case "panic":
			panic(errBoom)
		case "wait":
			a.started <- struct{}{}
			<-r.Context().Done()
			w.WriteHeader(499)
			return
		case "probe":
			w.Header().Set("X-Probe", strconv.Itoa(a.inflight.count()))
		}
		hello.ServeHTTP(w, r)
	})
}

func buildHTTP(_ *testing.T, a app) client {
	h := behaving(a)
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", h)
	mux.Handle("GET /health", h)
	mux.Handle("GET /login", httpLimiter(a, a.login, loginOpts(a)...).Handler(h))
	return httpClient{httpLimiter(a, a.global, append(globalOpts(a), httpmw.WithSkip(globalSkip(a)))...).Handler(mux), a}
}

func buildGin(_ *testing.T, a app) client {
	h := gin.WrapH(behaving(a))
	e := gin.New()
	e.Use(ginmw.New(httpLimiter(a, a.global, append(globalOpts(a), httpmw.WithSkip(globalSkip(a)))...)))
	e.GET("/", h)
	e.GET("/health", h)
	e.GET("/login", ginmw.New(httpLimiter(a, a.login, loginOpts(a)...)), h)
	return httpClient{e, a}
}

func buildEcho(_ *testing.T, a app) client {
	h := echo.WrapHandler(behaving(a))
	e := echo.New()
	skip := globalSkip(a)
	e.Use(echomw.New(httpLimiter(a, a.global, globalOpts(a)...),
		echomw.WithSkip(func(c echo.Context) bool { return skip(c.Request()) })))
	e.GET("/", h)
	e.GET("/health", h)
	e.GET("/login", h, echomw.New(httpLimiter(a, a.login, loginOpts(a)...)))
	return httpClient{e, a}
}

type httpClient struct {
	h http.Handler
	a app
}

func (c httpClient) do(_ *testing.T, req request) (res response) {
	r := httptest.NewRequest(http.MethodGet, req.route, nil)
	if req.key != "" {
		r.Header.Set("X-Api-Key", req.key)
	}
	if req.cost != "" {
		r.Header.Set("X-Cost", req.cost)
	}
	if req.behave != "" {
		r.Header.Set("X-Behave", req.behave)
	}
	if req.behave == "wait" {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		r = r.WithContext(ctx)
		go func() { <-c.a.started; cancel() }()
	}
	w := httptest.NewRecorder()
	defer func() {
		// A panic goes through the middleware to the server, which would
		// log it and drop the connection: the client sees a failure, 500
		// here as gRPC's recovery answers Internal.
		if p := recover(); p != nil {
			if p != errBoom {
				panic(p)
			}
			res = response{status: 500, fields: map[string]string{}}
		}
	}()
	c.h.ServeHTTP(w, r)
	res = response{status: w.Code, fields: map[string]string{}, text: w.Body.String()}
	if v := w.Header().Get("X-Probe"); v != "" {
		res.probe = v
	}
	for _, name := range fieldNames {
		if v := w.Header().Values(name); len(v) > 0 {
			res.fields[name] = strings.Join(v, ", ")
		}
	}
	for _, name := range slices.Sorted(maps.Keys(w.Header())) {
		res.text += "\n" + name + ": " + strings.Join(w.Header()[name], ", ")
	}
	return res
}

// The gRPC target: Health/Check is the default route, List has the login
// limiter and Watch (a server stream) is exempt.

const (
	mList  = "/grpc.health.v1.Health/List"
	mWatch = "/grpc.health.v1.Health/Watch"
)

func buildGRPC(t *testing.T, a app) client {
	key := grpcmw.KeyByMetadata("x-api-key")
	opts := []grpcmw.Option{
		grpcmw.WithCost(func(ctx context.Context, _ string) (int, error) {
			return parseCost(strings.Join(metadata.ValueFromIncomingContext(ctx, "x-cost"), ""))
		}),
		grpcmw.WithFailureMode(a.mode),
		grpcmw.WithObserver(a.obs),
	}
	if !a.shadow {
		// Every call's fields, as HTTP sends them, so that the targets
		// compare field by field (grpcmw's default sends them only on
		// refusals and near the limit; in shadow mode only the login
		// limiter sends them, below, on every target).
		opts = append(opts, grpcmw.WithHeaders(core.HeadersBoth))
	}
	if a.hold > 0 {
		opts = append(opts, grpcmw.WithDenialHold(a.hold, 1))
	}
	if a.shadow {
		opts = append(opts, grpcmw.WithShadow())
	}
	// limiter is def or, when a.pick chooses the limiter by API key, the
	// choice, def where it chooses none.
	limiter := func(def core.Limiter, opts ...grpcmw.Option) *grpcmw.Limiter {
		pick := a.pick
		if pick == nil {
			return grpcmw.MustNew(def, key, opts...)
		}
		return grpcmw.MustNew(nil, key, append(opts, grpcmw.WithLimiterFunc(func(ctx context.Context, _ string) core.Limiter {
			if l := pick(strings.Join(metadata.ValueFromIncomingContext(ctx, "x-api-key"), "")); l != nil {
				return l
			}
			return def
		}))...)
	}
	// Two interceptors, as the HTTP targets have two middlewares: global
	// on every method but Watch (and List unless layered), then login on
	// List alone.
	outerOpts := append(opts[:len(opts):len(opts)], grpcmw.WithSkip(func(_ context.Context, m string) bool {
		return m == mWatch || !a.layered && m == mList
	}))
	if a.layered {
		outerOpts = append(outerOpts, grpcmw.WithRefundOnInnerRefusal())
	}
	innerOpts := append(opts[:len(opts):len(opts)], grpcmw.WithSkip(func(_ context.Context, m string) bool { return m != mList }))
	if a.shadow {
		innerOpts = append(innerOpts, grpcmw.WithHeaders(core.HeadersBoth))
	}
	outer := limiter(a.global, outerOpts...)
	inner := limiter(a.login, innerOpts...)
	unary := []grpc.UnaryServerInterceptor{outer.UnaryServerInterceptor(), inner.UnaryServerInterceptor()}
	stream := []grpc.StreamServerInterceptor{outer.StreamServerInterceptor(), inner.StreamServerInterceptor()}
	unary = append([]grpc.UnaryServerInterceptor{recovering}, append(unary, behavingRPC(a))...)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(unary...), grpc.ChainStreamInterceptor(stream...))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(lis) }()
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close(); srv.Stop(); <-done })
	return grpcClient{healthpb.NewHealthClient(cc), a}
}

// recovering answers a handler's panic with Internal, as a server's
// recovery interceptor does.
func recovering(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = status.Error(codes.Internal, "panic")
		}
	}()
	return h(ctx, req)
}

// behavingRPC is behaving for gRPC: the x-behave metadata says what the
// "handler" (an interceptor inside the limiters) does.
func behavingRPC(a app) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		switch strings.Join(metadata.ValueFromIncomingContext(ctx, "x-behave"), "") {
		case "panic":
			panic(errBoom)
		case "wait":
			a.started <- struct{}{}
			<-ctx.Done()
			return nil, status.FromContextError(ctx.Err()).Err()
		case "probe":
			_ = grpc.SetHeader(ctx, metadata.Pairs("x-probe", strconv.Itoa(a.inflight.count())))
		}
		return h(ctx, req)
	}
}

type grpcClient struct {
	c healthpb.HealthClient
	a app
}

func (c grpcClient) do(t *testing.T, req request) response {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if req.key != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "x-api-key", req.key)
	}
	if req.cost != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "x-cost", req.cost)
	}
	if req.behave != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "x-behave", req.behave)
	}
	if req.behave == "wait" {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		go func() { <-c.a.started; cancel() }()
	}
	var header, trailer metadata.MD
	var err error
	switch req.route {
	case "/":
		_, err = c.c.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Header(&header), grpc.Trailer(&trailer))
	case "/login":
		_, err = c.c.List(ctx, &healthpb.HealthListRequest{}, grpc.Header(&header), grpc.Trailer(&trailer))
	case "/health":
		var st grpc.ServerStreamingClient[healthpb.HealthCheckResponse]
		if st, err = c.c.Watch(ctx, &healthpb.HealthCheckRequest{}); err == nil {
			_, err = st.Recv()
			header, _ = st.Header()
		}
	default:
		t.Fatalf("no gRPC method for route %q", req.route)
	}
	s := status.Convert(err)
	res := response{status: httpStatus(s), fields: map[string]string{}, text: s.Message() + fmt.Sprint(s.Details()...)}
	for _, name := range fieldNames {
		switch v := header.Get(name); {
		case len(v) > 0 && c.a.layered:
			// grpc merges the metadata two interceptors set; HTTP's inner
			// middleware replaces the outer's headers. Compare the inner's.
			res.fields[name] = v[len(v)-1]
		case len(v) > 0:
			res.fields[name] = strings.Join(v, ", ")
		}
	}
	if v := header.Get("x-probe"); len(v) > 0 {
		res.probe = v[0]
	}
	res.text += fmt.Sprint(header, trailer)
	if d, ok := grpcclient.RetryDelay(err); ok {
		res.delay = d
		ms := strconv.FormatInt(int64((d+time.Millisecond-1)/time.Millisecond), 10)
		if got := trailer.Get(grpcmw.PushbackKey); len(got) != 1 || got[0] != ms {
			t.Errorf("%+v: trailer %s = %q, want [%s]", req, grpcmw.PushbackKey, got, ms)
		}
	}
	return res
}

// httpStatus maps a gRPC status to the HTTP status the other adapters
// answer for the same case; an unexpected code becomes 1000+code and
// mismatches.
func httpStatus(s *status.Status) int {
	switch s.Code() {
	case codes.OK:
		return 200
	case codes.Canceled:
		return 499 // what a "wait" handler answers over HTTP
	case codes.InvalidArgument:
		if strings.HasSuffix(s.Message(), "retrying will not help") { // grpcmw's message for ErrCostTooLarge
			return 413
		}
		return 400
	case codes.ResourceExhausted:
		return 429
	case codes.Unavailable:
		return 503 // a shed
	case codes.Internal:
		return 500
	}
	return 1000 + int(s.Code())
}
