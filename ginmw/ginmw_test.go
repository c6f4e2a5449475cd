package ginmw_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/ginmw"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/internal/httpmwtest"
	"github.com/floodgate/floodgate/keyfunc"
)

func init() { gin.SetMode(gin.TestMode) }

// t0 is where every fake clock starts.
var t0 = time.Unix(1_699_999_200, 0)

// byAddr keys by the socket peer as keyfunc.ClientIP does by default,
// without the parsing.
func byAddr(r *http.Request) (string, error) { return r.RemoteAddr, nil }

// noContent is the route handler behind Gin and net/http alike; its
// status says that it ran.
var noContent = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })

var (
	api   = core.PerMinute(3).WithName("api")
	login = core.PerMinute(2).WithName("login")
)

// site is the application under test: a global limiter on every route and
// a stricter one on POST /login, served by Gin or, as the reference, by
// httpmw in front of a ServeMux. Each site has its own limiters on its own
// fake clock.
type site struct {
	h     http.Handler
	clock *coretest.Clock
}

// newSites builds the Gin site and its httpmw reference with the same
// configuration: the global limiter enforces *global by key, with opts, or
// has a failed store when global is nil.
func newSites(t *testing.T, global *core.Limit, key keyfunc.Func, opts ...httpmw.Option) (g, ref site) {
	t.Helper()
	limiters := func() (core.Limiter, core.Limiter, *coretest.Clock) {
		clock := coretest.NewClock(t0)
		all := coretest.StoreDown(errors.New("boom: redis at 10.0.0.7"))
		if global != nil {
			all = core.MustNew(*global, core.WithClock(clock))
		}
		return all, core.MustNew(login, core.WithClock(clock)), clock
	}

	gl, l, clock := limiters()
	mw, err := httpmw.New(gl, key, opts...)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /", noContent)
	mux.Handle("POST /login", httpmw.MustNew(l, byAddr).Handler(noContent))
	ref = site{mw.Handler(mux), clock}

	gl, l, clock = limiters()
	l2, err := httpmw.New(gl, key, opts...)
	if err != nil {
		t.Fatal(err)
	}
	e := gin.New()
	e.Use(ginmw.New(l2))
	e.GET("/", gin.WrapH(noContent))
	e.GET("/healthz", gin.WrapH(noContent))
	e.POST("/login", ginmw.New(httpmw.MustNew(l, byAddr)), gin.WrapH(noContent))
	return site{e, clock}, ref
}

type step struct {
	advance   time.Duration
	method    string // "" is GET
	path      string // "" is /
	peer      string // "" is 192.0.2.1:1234
	status    int
	rateLimit string // the exact RateLimit header; "" when absent
}

func (s step) request() *http.Request {
	method, path, peer := s.method, s.path, s.peer
	if method == "" {
		method = http.MethodGet
	}
	if path == "" {
		path = "/"
	}
	if peer == "" {
		peer = "192.0.2.1:1234"
	}
	r := httptest.NewRequest(method, path, nil)
	r.RemoteAddr = peer
	return r
}

func serve(s site, st step) *httptest.ResponseRecorder {
	s.clock.Advance(st.advance)
	w := httptest.NewRecorder()
	s.h.ServeHTTP(w, st.request())
	return w
}

// TestSameAsHTTPMW runs each scenario through Gin and through httpmw and
// checks that every response is the same to the byte (status, every
// header, body), and that it is the expected one.
func TestSameAsHTTPMW(t *testing.T) {
	t.Parallel()
	const (
		r2  = `"api";r=2;t=20`
		r1  = `"api";r=1;t=40`
		r0  = `"api";r=0;t=60`
		out = `"api";r=0;t=20`
	)
	burst := []step{{status: 204, rateLimit: r2}, {status: 204, rateLimit: r1}, {status: 204, rateLimit: r0}}
	tests := []struct {
		name   string
		global *core.Limit // nil: the store fails
		key    keyfunc.Func
		opts   []httpmw.Option
		steps  []step
	}{
		{name: "burst then deny then refill", global: &api, steps: append(burst[:3:3],
			step{status: 429, rateLimit: out},
			step{advance: 19 * time.Second, status: 429, rateLimit: `"api";r=0;t=1`},
			step{advance: time.Second, status: 204, rateLimit: r0},
			step{advance: time.Minute, status: 204, rateLimit: r2},
		)},
		{name: "keys are independent", global: &api, steps: append(burst[:3:3],
			step{status: 429, rateLimit: out},
			step{peer: "198.51.100.9:1", status: 204, rateLimit: r2},
		)},
		{name: "per-route limit", global: &api, steps: []step{
			{method: "POST", path: "/login", status: 204, rateLimit: `"login";r=1;t=30`},
			{status: 204, rateLimit: r1},
			{method: "POST", path: "/login", status: 204, rateLimit: `"login";r=0;t=60`},
			// The global limit covers /login too, and is checked first.
			{method: "POST", path: "/login", status: 429, rateLimit: out},
			// The global limit admits, the route's refuses.
			{method: "POST", path: "/login", advance: 20 * time.Second, status: 429, rateLimit: `"login";r=0;t=10`},
			{status: 429, rateLimit: out},
		}},
		{name: "cost 2", global: &api, opts: []httpmw.Option{httpmw.WithCost(func(*http.Request) (int, error) { return 2, nil })}, steps: []step{
			{status: 204, rateLimit: `"api";r=1;t=40`},
			{status: 429, rateLimit: `"api";r=1;t=20`},
			{advance: 20 * time.Second, status: 204, rateLimit: `"api";r=0;t=60`},
		}},
		{name: "cost never admissible", global: &api, opts: []httpmw.Option{httpmw.WithCost(func(*http.Request) (int, error) { return 4, nil })}, steps: []step{
			{status: 413},
		}},
		{name: "key error", global: &api, key: func(*http.Request) (string, error) { return "", errors.New("secret: db at 10.0.0.7") }, steps: []step{
			{status: 500},
		}},
		{name: "store error, fail closed", steps: []step{{status: 429}}},
		{name: "store error, fail open", opts: []httpmw.Option{httpmw.WithFailureMode(core.FailOpen)}, steps: []step{{status: 204}}},
		{name: "skip", global: &api, opts: []httpmw.Option{httpmw.WithSkip(func(r *http.Request) bool { return r.URL.Path == "/healthz" })}, steps: []step{
			{path: "/healthz", status: 204}, {path: "/healthz", status: 204}, {path: "/healthz", status: 204}, {path: "/healthz", status: 204},
			{status: 204, rateLimit: r2},
		}},
		{name: "problem+json", global: &api, opts: []httpmw.Option{httpmw.WithDenyHandler(httpmw.ProblemDetails)}, steps: append(burst[:3:3],
			step{status: 429, rateLimit: out},
		)},
		{name: "legacy headers", global: &api, opts: []httpmw.Option{httpmw.WithHeaders(core.HeadersLegacy)}, steps: []step{
			{status: 204}, {status: 204}, {status: 204}, {status: 429},
		}},
		{name: "deny handler", global: &api, opts: []httpmw.Option{httpmw.WithDenyHandler(func(w http.ResponseWriter, r *http.Request, d core.Decision) {
			w.WriteHeader(http.StatusServiceUnavailable)
		})}, steps: append(burst[:3:3],
			step{status: 503, rateLimit: out},
		)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			key := tt.key
			if key == nil {
				key = byAddr
			}
			g, ref := newSites(t, tt.global, key, tt.opts...)
			for i, st := range tt.steps {
				got, want := serve(g, st), serve(ref, st)
				httpmwtest.SameResponse(t, got, want)
				if got.Code != st.status || got.Header().Get("RateLimit") != st.rateLimit {
					t.Fatalf("step %d: got %d RateLimit %q, want %d %q", i, got.Code, got.Header().Get("RateLimit"), st.status, st.rateLimit)
				}
				if strings.Contains(got.Body.String(), "10.0.0.7") {
					t.Fatalf("step %d: the body leaks the error: %q", i, got.Body.String())
				}
			}
		})
	}
}

// TestExactDenial pins one denial's bytes, so that TestSameAsHTTPMW does
// not merely compare two equally wrong answers.
func TestExactDenial(t *testing.T) {
	t.Parallel()
	g, _ := newSites(t, &api, byAddr)
	var w *httptest.ResponseRecorder
	for range 4 {
		w = serve(g, step{})
	}
	want := http.Header{
		"Content-Type":           {"text/plain; charset=utf-8"},
		"Content-Length":         {"18"},
		"X-Content-Type-Options": {"nosniff"},
		"Retry-After":            {"20"},
		"X-Ratelimit-Limit":      {"3"},
		"X-Ratelimit-Remaining":  {"0"},
		"X-Ratelimit-Reset":      {"60"},
		"Ratelimit-Policy":       {`"api";q=3;w=60`},
		"Ratelimit":              {`"api";r=0;t=20`},
	}
	if w.Code != 429 || !reflect.DeepEqual(w.Header(), want) || w.Body.String() != "Too Many Requests\n" {
		t.Errorf("got %d %v %q", w.Code, w.Header(), w.Body.String())
	}
}

// TestChain checks where the middleware sits in Gin's chain: a denial
// aborts it (no later middleware or handler runs), headers are set before
// the handler runs and go out with any status it chooses, 404 included,
// and a limiter on a group limits only the group.
func TestChain(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	var after atomic.Int32
	e := gin.New()
	e.Use(ginmw.New(httpmw.MustNew(core.MustNew(api, core.WithClock(clock)), byAddr)))
	e.Use(func(c *gin.Context) { after.Add(1) })
	e.GET("/created", func(c *gin.Context) {
		if c.Writer.Header().Get("RateLimit") == "" {
			t.Error("RateLimit not set before the handler ran")
		}
		c.JSON(http.StatusCreated, gin.H{"ok": true})
	})
	admin := e.Group("/admin", ginmw.New(httpmw.MustNew(core.MustNew(login, core.WithClock(clock)), keyfunc.Constant("admin"))))
	admin.GET("/stats", func(c *gin.Context) { c.String(http.StatusOK, "stats") })

	steps := []struct {
		peer, path string
		status     int
		rateLimit  string
		after      int32
	}{
		{"192.0.2.1:1", "/created", 201, `"api";r=2;t=20`, 1},
		{"192.0.2.1:1", "/missing", 404, `"api";r=1;t=40`, 2},
		{"192.0.2.1:1", "/created", 201, `"api";r=0;t=60`, 3},
		{"192.0.2.1:1", "/created", 429, `"api";r=0;t=20`, 3},
		{"192.0.2.2:1", "/admin/stats", 200, `"login";r=1;t=30`, 4},
		{"192.0.2.3:1", "/admin/stats", 200, `"login";r=0;t=60`, 5},
		// The group's limiter is keyed by a constant: every peer shares it.
		{"192.0.2.4:1", "/admin/stats", 429, `"login";r=0;t=30`, 6},
	}
	for i, st := range steps {
		r := httptest.NewRequest(http.MethodGet, st.path, nil)
		r.RemoteAddr = st.peer
		w := httptest.NewRecorder()
		e.ServeHTTP(w, r)
		if w.Code != st.status || w.Header().Get("RateLimit") != st.rateLimit || after.Load() != st.after {
			t.Errorf("step %d %s: got %d %q after=%d, want %d %q after=%d",
				i, st.path, w.Code, w.Header().Get("RateLimit"), after.Load(), st.status, st.rateLimit, st.after)
		}
	}
}

// TestConstructors checks that New panics without a Limiter.
func TestConstructors(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Error("New(nil) did not panic")
		}
	}()
	ginmw.New(nil)
}
