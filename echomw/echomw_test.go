package echomw_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/echomw"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/internal/httpmwtest"
	"github.com/floodgate/floodgate/keyfunc"
)

var t0 = time.Unix(1_699_999_200, 0)

func byAddr(r *http.Request) (string, error) { return r.RemoteAddr, nil }

// leakyKey fails with text that must never reach a client.
func leakyKey(*http.Request) (string, error) { return "", errors.New("secret: db at 10.0.0.7") }

var down = coretest.StoreDown(errors.New("boom: redis at 10.0.0.7"))

// hello is the route handler behind Echo and net/http alike; its status
// says that it ran.
var hello = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })

var (
	api    = core.PerMinute(3).WithName("api")
	signin = core.PerMinute(2).WithName("signin")
)

// app is an application with a global limiter (cfg) and a stricter one on
// POST /signin, all on one fake clock.
type app struct {
	http.Handler
	clock *coretest.Clock
	errs  []error // what reached the HTTPErrorHandler
}

// config is what a test application's middleware is made of: the
// Limiter's parts, given to httpmw.New, and echomw's options.
type config struct {
	Skipper    func(echo.Context) bool
	Limiter    core.Limiter
	KeyFunc    keyfunc.Func
	Options    []httpmw.Option
	HTTPErrors bool
}

// build makes cfg's middleware.
func build(cfg config) (echo.MiddlewareFunc, error) {
	l, err := httpmw.New(cfg.Limiter, cfg.KeyFunc, cfg.Options...)
	if err != nil {
		return nil, err
	}
	var opts []echomw.Option
	if cfg.Skipper != nil {
		opts = append(opts, echomw.WithSkip(cfg.Skipper))
	}
	if cfg.HTTPErrors {
		opts = append(opts, echomw.WithHTTPErrors())
	}
	return echomw.New(l, opts...), nil
}

func mustBuild(cfg config) echo.MiddlewareFunc {
	mw, err := build(cfg)
	if err != nil {
		panic(err)
	}
	return mw
}

// limiterFor is cfg.Limiter or, when cfg has none, the limit on clock.
func limiterFor(cfg config, clock core.Clock) core.Limiter {
	if cfg.Limiter != nil {
		return cfg.Limiter
	}
	return core.MustNew(api, core.WithClock(clock))
}

// newApp serves cfg through Echo. Its HTTPErrorHandler records the error
// and hands it to Echo's default one.
func newApp(t *testing.T, cfg config) *app {
	t.Helper()
	a := &app{clock: coretest.NewClock(t0)}
	cfg.Limiter = limiterFor(cfg, a.clock)
	mw, err := build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := echo.New()
	e.HTTPErrorHandler = func(err error, c echo.Context) {
		a.errs = append(a.errs, err)
		e.DefaultHTTPErrorHandler(err, c)
	}
	e.Use(mw)
	e.GET("/", echo.WrapHandler(hello))
	e.GET("/healthz", echo.WrapHandler(hello))
	e.POST("/signin", echo.WrapHandler(hello), mustBuild(config{
		Limiter: core.MustNew(signin, core.WithClock(a.clock)), KeyFunc: byAddr, HTTPErrors: cfg.HTTPErrors,
	}))
	a.Handler = e
	return a
}

// newReference serves the same application with httpmw and a ServeMux.
func newReference(t *testing.T, cfg config) *app {
	t.Helper()
	a := &app{clock: coretest.NewClock(t0)}
	mw, err := httpmw.New(limiterFor(cfg, a.clock), cfg.KeyFunc, cfg.Options...)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /", hello)
	mux.Handle("POST /signin", httpmw.MustNew(core.MustNew(signin, core.WithClock(a.clock)), byAddr).Handler(hello))
	a.Handler = mw.Handler(mux)
	return a
}

// call is one request at some instant, and what it must get.
type call struct {
	wait      time.Duration // how far the clock moves first
	route     string        // "METHOD /path"; "" is "GET /"
	from      string        // the peer; "" is 192.0.2.1:1234
	code      int
	rateLimit string // the RateLimit header, "" when absent
	retry     string // the Retry-After header, "" when absent
}

func (a *app) do(c call) *httptest.ResponseRecorder {
	a.clock.Advance(c.wait)
	method, path, ok := strings.Cut(c.route, " ")
	if !ok {
		method, path = http.MethodGet, "/"
	}
	r := httptest.NewRequest(method, path, nil)
	r.RemoteAddr = "192.0.2.1:1234"
	if c.from != "" {
		r.RemoteAddr = c.from
	}
	w := httptest.NewRecorder()
	a.ServeHTTP(w, r)
	return w
}

// check fails t unless w is what c expects, with no trace of an error's
// text.
func (c call) check(t *testing.T, i int, w *httptest.ResponseRecorder) {
	t.Helper()
	h := w.Header()
	if w.Code != c.code || h.Get("RateLimit") != c.rateLimit || h.Get("Retry-After") != c.retry {
		t.Fatalf("call %d (%s): got %d RateLimit %q Retry-After %q, want %d %q %q",
			i, c.route, w.Code, h.Get("RateLimit"), h.Get("Retry-After"), c.code, c.rateLimit, c.retry)
	}
	if strings.Contains(w.Body.String(), "10.0.0.7") {
		t.Fatalf("call %d: the body leaks an error: %q", i, w.Body.String())
	}
}

func costOf(n int) httpmw.Option {
	return httpmw.WithCost(func(*http.Request) (int, error) { return n, nil })
}

type scenario struct {
	name  string
	cfg   config
	calls []call
}

// cases are the scenarios both answer styles run. Each call gives what the
// default style answers; under HTTPErrors only the body differs.
var cases = []scenario{
	{"burst, deny, refill", config{}, []call{
		{code: 204, rateLimit: `"api";r=2;t=20`},
		{code: 204, rateLimit: `"api";r=1;t=40`},
		{code: 204, rateLimit: `"api";r=0;t=60`},
		{code: 429, rateLimit: `"api";r=0;t=20`, retry: "20"},
		{wait: 19 * time.Second, code: 429, rateLimit: `"api";r=0;t=1`, retry: "1"},
		{wait: time.Second, code: 204, rateLimit: `"api";r=0;t=60`},
		{from: "198.51.100.9:1", code: 204, rateLimit: `"api";r=2;t=20`},
	}},
	{"per-route limiter", config{}, []call{
		{route: "POST /signin", code: 204, rateLimit: `"signin";r=1;t=30`},
		{route: "POST /signin", code: 204, rateLimit: `"signin";r=0;t=60`},
		{route: "POST /signin", code: 429, rateLimit: `"signin";r=0;t=30`, retry: "30"},
		// The global limiter counted all three and refuses everything now.
		{code: 429, rateLimit: `"api";r=0;t=20`, retry: "20"},
		{from: "198.51.100.9:1", code: 204, rateLimit: `"api";r=2;t=20`},
	}},
	{"cost 2", config{Options: []httpmw.Option{costOf(2)}}, []call{
		{code: 204, rateLimit: `"api";r=1;t=40`},
		{code: 429, rateLimit: `"api";r=1;t=20`, retry: "20"},
	}},
	{"cost never admissible", config{Options: []httpmw.Option{costOf(4)}}, []call{{code: 413}}},
	{"key error", config{KeyFunc: leakyKey}, []call{{code: 500}}},
	{"store error, fail closed", config{Limiter: down}, []call{{code: 429, retry: "1"}}},
	{"store error, fail open", config{Limiter: down, Options: []httpmw.Option{httpmw.WithFailureMode(core.FailOpen)}}, []call{{code: 204}}},
	{"httpmw skip", config{Options: []httpmw.Option{httpmw.WithSkip(func(r *http.Request) bool { return r.URL.Path == "/healthz" })}}, []call{
		{route: "GET /healthz", code: 204}, {route: "GET /healthz", code: 204}, {route: "GET /healthz", code: 204}, {route: "GET /healthz", code: 204},
		{code: 204, rateLimit: `"api";r=2;t=20`},
	}},
}

// TestSameAsHTTPMW checks the default style: every response is the one
// httpmw's middleware writes for the same requests, to the byte.
func TestSameAsHTTPMW(t *testing.T) {
	t.Parallel()
	all := append(cases[:len(cases):len(cases)], scenario{"problem+json", config{Options: []httpmw.Option{httpmw.WithDenyHandler(httpmw.ProblemDetails)}}, []call{
		{code: 204, rateLimit: `"api";r=2;t=20`},
		{code: 204, rateLimit: `"api";r=1;t=40`},
		{code: 204, rateLimit: `"api";r=0;t=60`},
		{code: 429, rateLimit: `"api";r=0;t=20`, retry: "20"},
	}})
	for _, tt := range all {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := tt.cfg
			if cfg.KeyFunc == nil {
				cfg.KeyFunc = byAddr
			}
			got, want := newApp(t, cfg), newReference(t, cfg)
			for i, c := range tt.calls {
				g, w := got.do(c), want.do(c)
				httpmwtest.SameResponse(t, g, w)
				c.check(t, i, g)
			}
			if len(got.errs) != 0 {
				t.Errorf("the HTTPErrorHandler ran: %v", got.errs)
			}
		})
	}
}

// TestHTTPErrors checks the HTTPErrors style: the same statuses and
// headers, but refusals and errors reach the application's
// HTTPErrorHandler as *echo.HTTPError, which renders the body.
func TestHTTPErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := tt.cfg
			cfg.HTTPErrors = true
			if cfg.KeyFunc == nil {
				cfg.KeyFunc = byAddr
			}
			a := newApp(t, cfg)
			for i, c := range tt.calls {
				n := len(a.errs)
				w := a.do(c)
				c.check(t, i, w)
				if w.Code == http.StatusNoContent {
					if len(a.errs) != n {
						t.Fatalf("call %d: admitted, yet the error handler ran: %v", i, a.errs[n:])
					}
					continue
				}
				if len(a.errs) != n+1 {
					t.Fatalf("call %d: the error handler ran %d times", i, len(a.errs)-n)
				}
				var he *echo.HTTPError
				if !errors.As(a.errs[n], &he) || he.Code != w.Code || he.Message != http.StatusText(w.Code) {
					t.Fatalf("call %d: handler got %#v", i, a.errs[n])
				}
				if want := `{"message":"` + http.StatusText(w.Code) + `"}` + "\n"; w.Body.String() != want {
					t.Fatalf("call %d: body %q, want Echo's own %q", i, w.Body.String(), want)
				}
				if denied := errors.Is(he, echomw.ErrDenied); denied != (c.rateLimit != "") {
					t.Fatalf("call %d: errors.Is(err, ErrDenied) = %v", i, denied)
				}
			}
		})
	}
}

// TestHTTPErrorsCustomHandler checks that an application's own error
// handler sees the cause of an error (for its logs) and renders the answer
// with the rate-limit headers already in place.
func TestHTTPErrorsCustomHandler(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	e := echo.New()
	var causes []error
	e.HTTPErrorHandler = func(err error, c echo.Context) {
		causes = append(causes, errors.Unwrap(err))
		he := err.(*echo.HTTPError)
		if c.Response().Header().Get("Retry-After") == "" && he.Code == http.StatusTooManyRequests {
			t.Error("Retry-After not set before the error handler ran")
		}
		_ = c.String(he.Code, "custom: "+he.Message.(string))
	}
	e.GET("/", echo.WrapHandler(hello), mustBuild(config{
		Limiter: core.MustNew(core.PerMinute(1).WithName("one"), core.WithClock(clock)), KeyFunc: byAddr, HTTPErrors: true,
	}))
	e.GET("/broken", echo.WrapHandler(hello), mustBuild(config{
		Limiter: core.MustNew(api, core.WithClock(clock)), KeyFunc: leakyKey, HTTPErrors: true,
	}))

	var w *httptest.ResponseRecorder
	for range 2 {
		w = httptest.NewRecorder()
		e.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
	}
	want := http.Header{
		"Content-Type":          {"text/plain; charset=UTF-8"},
		"Retry-After":           {"60"},
		"X-Ratelimit-Limit":     {"1"},
		"X-Ratelimit-Remaining": {"0"},
		"X-Ratelimit-Reset":     {"60"},
		"Ratelimit-Policy":      {`"one";q=1;w=60`},
		"Ratelimit":             {`"one";r=0;t=60`},
	}
	if w.Code != 429 || !reflect.DeepEqual(w.Header(), want) || w.Body.String() != "custom: Too Many Requests" {
		t.Errorf("denial: got %d %v %q", w.Code, w.Header(), w.Body.String())
	}

	w = httptest.NewRecorder()
	e.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/broken", nil))
	if w.Code != 500 || w.Body.String() != "custom: Internal Server Error" {
		t.Errorf("key error: got %d %q", w.Code, w.Body.String())
	}
	if len(causes) != 2 || causes[0] != echomw.ErrDenied || !errors.Is(causes[1], core.ErrKey) || !strings.Contains(causes[1].Error(), "secret") {
		t.Errorf("causes %v", causes)
	}
}

// TestSkipper checks that WithSkip exempts requests before anything
// is counted, and that a route without the middleware is not limited.
func TestSkipper(t *testing.T) {
	t.Parallel()
	for _, httpErrors := range []bool{false, true} {
		a := newApp(t, config{
			KeyFunc:    byAddr,
			Skipper:    func(c echo.Context) bool { return c.Path() == "/healthz" },
			HTTPErrors: httpErrors,
		})
		calls := []call{
			{route: "GET /healthz", code: 204}, {route: "GET /healthz", code: 204},
			{route: "GET /healthz", code: 204}, {route: "GET /healthz", code: 204},
			{code: 204, rateLimit: `"api";r=2;t=20`},
		}
		for i, c := range calls {
			c.check(t, i, a.do(c))
		}
	}
}

// TestConstructors checks that New panics without a Limiter, that
// WithSkip(nil) skips nothing, as in httpmw and grpcmw, even after a
// Skipper that skips everything, and that a nil Option is left out.
func TestConstructors(t *testing.T) {
	t.Parallel()
	func() {
		defer func() {
			if recover() == nil {
				t.Error("New(nil) did not panic")
			}
		}()
		echomw.New(nil)
	}()
	l := httpmw.MustNew(core.MustNew(api), keyfunc.Constant("all"))
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "echomw: nil Option (argument 2)") {
				t.Errorf("New with a nil option: panic %v, want one naming the nil Option", r)
			}
		}()
		echomw.New(l, echomw.WithHTTPErrors(), nil)
	}()
	e := echo.New()
	e.GET("/", echo.WrapHandler(hello), echomw.New(l, echomw.WithSkip(func(echo.Context) bool { return true }), echomw.WithSkip(nil)))
	w := httptest.NewRecorder()
	e.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
	if w.Code != http.StatusNoContent || w.Header().Get("RateLimit") == "" {
		t.Errorf("got %d %v", w.Code, w.Header())
	}
}
