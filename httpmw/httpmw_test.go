package httpmw_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/keyfunc"
)

// t0 is where every fake clock starts: a whole hour, so that window
// algorithms start at a window boundary.
var t0 = time.Unix(1_699_999_200, 0)

// byAddr keys requests by their socket peer, as keyfunc.ClientIP does by
// default, without the IP parsing.
func byAddr(r *http.Request) (string, error) { return r.RemoteAddr, nil }

// ok is the handler behind the limiter; it marks that it ran.
var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Handler", "ran")
	_, _ = w.Write([]byte("ok\n"))
})

// newKeyed is a core.New in-memory limiter on a fake clock.
func newKeyed(t testing.TB, l core.Limit, opts ...core.Option) (*core.Keyed, *coretest.Clock) {
	t.Helper()
	clock := coretest.NewClock(t0)
	k, err := core.New(l, append([]core.Option{core.WithClock(clock)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return k, clock
}

func mustMiddleware(t testing.TB, lim core.Limiter, key keyfunc.Func, opts ...httpmw.Option) http.Handler {
	t.Helper()
	l, err := httpmw.New(lim, key, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return l.Handler(ok)
}

func do(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	if r == nil {
		r = httptest.NewRequest(http.MethodGet, "/", nil)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// rlHeaders are the headers this package writes.
var rlHeaders = []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "RateLimit-Policy", "RateLimit", "Retry-After"}

// got returns the rate-limit headers of a response as "Name: value" lines,
// in rlHeaders order, leaving out absent ones.
func got(h http.Header) string {
	var b strings.Builder
	for _, k := range rlHeaders {
		for _, v := range h.Values(k) {
			fmt.Fprintf(&b, "%s: %s\n", k, v)
		}
	}
	return b.String()
}

// want builds the expected header lines for a "demo" policy.
func want(limit, remaining, reset int, policy, ratelimit string, retryAfter int) string {
	s := fmt.Sprintf("X-RateLimit-Limit: %d\nX-RateLimit-Remaining: %d\nX-RateLimit-Reset: %d\nRateLimit-Policy: %s\nRateLimit: %s\n",
		limit, remaining, reset, policy, ratelimit)
	if retryAfter > 0 {
		s += fmt.Sprintf("Retry-After: %d\n", retryAfter)
	}
	return s
}

// TestExactHeaders walks a key through a burst, a denial and a refill on a
// fake clock, checking every header byte.
func TestExactHeaders(t *testing.T) {
	t.Parallel()
	const policy = `"demo";q=6;w=60`
	type step struct {
		advance time.Duration
		cost    int
		status  int
		headers string
	}
	tests := []struct {
		name  string
		alg   core.Algorithm
		steps []step
	}{
		{"token bucket, cost 1", core.TokenBucket, []step{
			{0, 1, 200, want(6, 5, 10, policy, `"demo";r=5;t=10`, 0)},
			{0, 1, 200, want(6, 4, 20, policy, `"demo";r=4;t=20`, 0)},
			{0, 1, 200, want(6, 3, 30, policy, `"demo";r=3;t=30`, 0)},
			{0, 1, 200, want(6, 2, 40, policy, `"demo";r=2;t=40`, 0)},
			{0, 1, 200, want(6, 1, 50, policy, `"demo";r=1;t=50`, 0)},
			{0, 1, 200, want(6, 0, 60, policy, `"demo";r=0;t=60`, 0)},
			// Denied: t is the wait for the next unit, Reset for all six.
			{0, 1, 429, want(6, 0, 60, policy, `"demo";r=0;t=10`, 10)},
			{4 * time.Second, 1, 429, want(6, 0, 56, policy, `"demo";r=0;t=6`, 6)},
			// A retry exactly when Retry-After said is admitted.
			{6 * time.Second, 1, 200, want(6, 0, 60, policy, `"demo";r=0;t=60`, 0)},
			{60 * time.Second, 1, 200, want(6, 5, 10, policy, `"demo";r=5;t=10`, 0)},
		}},
		{"token bucket, cost 3", core.TokenBucket, []step{
			{0, 3, 200, want(6, 3, 30, policy, `"demo";r=3;t=30`, 0)},
			{0, 3, 200, want(6, 0, 60, policy, `"demo";r=0;t=60`, 0)},
			{0, 3, 429, want(6, 0, 60, policy, `"demo";r=0;t=30`, 30)},
			{0, 1, 429, want(6, 0, 60, policy, `"demo";r=0;t=10`, 10)},
			{29*time.Second + 500*time.Millisecond, 3, 429, want(6, 2, 31, policy, `"demo";r=2;t=1`, 1)},
			{500 * time.Millisecond, 3, 200, want(6, 0, 60, policy, `"demo";r=0;t=60`, 0)},
		}},
		{"fixed window", core.FixedWindow, []step{
			{0, 5, 200, want(6, 1, 60, policy, `"demo";r=1;t=60`, 0)},
			{0, 2, 429, want(6, 1, 60, policy, `"demo";r=1;t=60`, 60)},
			{0, 1, 200, want(6, 0, 60, policy, `"demo";r=0;t=60`, 0)},
			{59*time.Second + 1, 1, 429, want(6, 0, 1, policy, `"demo";r=0;t=1`, 1)},
			{time.Second - 1, 1, 200, want(6, 5, 60, policy, `"demo";r=5;t=60`, 0)},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			k, clock := newKeyed(t, core.PerMinute(6).WithName("demo").WithAlgorithm(tt.alg))
			cost := 1
			h := mustMiddleware(t, k, byAddr, httpmw.WithCost(func(*http.Request) (int, error) { return cost, nil }))
			for i, s := range tt.steps {
				clock.Advance(s.advance)
				cost = s.cost
				w := do(h, nil)
				if w.Code != s.status {
					t.Fatalf("step %d: status %d, want %d", i, w.Code, s.status)
				}
				if g := got(w.Header()); g != s.headers {
					t.Errorf("step %d: headers\n%s\nwant\n%s", i, g, s.headers)
				}
				if ran := w.Header().Get("X-Handler") == "ran"; ran != (s.status == 200) {
					t.Errorf("step %d: handler ran = %v with status %d", i, ran, s.status)
				}
			}
		})
	}
}

// TestRetryAfterSuffices checks, for every algorithm, that Retry-After is at
// least 1, never earlier than t, and enough: a retry exactly that many
// seconds later is admitted, while the instant before (for a whole-second
// wait) is not.
func TestRetryAfterSuffices(t *testing.T) {
	t.Parallel()
	limits := []core.Limit{core.PerSecond(5), core.PerMinute(7).WithBurst(3), core.Every(1500 * time.Millisecond), core.PerHour(100)}
	algs := []core.Algorithm{core.TokenBucket, core.GCRA, core.FixedWindow, core.SlidingWindow}
	for _, l := range limits {
		for _, alg := range algs {
			t.Run(l.String()+"/"+alg.String(), func(t *testing.T) {
				t.Parallel()
				k, clock := newKeyed(t, l.WithAlgorithm(alg))
				h := mustMiddleware(t, k, byAddr)
				var w *httptest.ResponseRecorder
				for i := 0; ; i++ {
					if w = do(h, nil); w.Code == 429 {
						break
					}
					if i > l.Events+l.Burst {
						t.Fatal("never denied")
					}
				}
				ra, err := strconv.Atoi(w.Header().Get("Retry-After"))
				if err != nil || ra < 1 {
					t.Fatalf("Retry-After %q, want an integer >= 1", w.Header().Get("Retry-After"))
				}
				tParam := w.Header().Get("RateLimit")
				if i := strings.LastIndex(tParam, ";t="); i < 0 {
					t.Fatalf("RateLimit %q has no t", tParam)
				} else if tv, _ := strconv.Atoi(tParam[i+3:]); tv > ra {
					t.Fatalf("t=%d later than Retry-After %d", tv, ra)
				}
				clock.Advance(time.Duration(ra) * time.Second)
				if w := do(h, nil); w.Code != 200 {
					t.Fatalf("retry after Retry-After: %d seconds: status %d, headers\n%s", ra, w.Code, got(w.Header()))
				}
			})
		}
	}
}

// fakeLimiter answers with a scripted function and records refunds.
type fakeLimiter struct {
	allow func(key string, cost int) (core.Decision, error)

	mu      sync.Mutex
	refunds []string // "key/cost"
}

func (f *fakeLimiter) Allow(_ context.Context, key string, cost int) (core.Decision, error) {
	return f.allow(key, cost)
}

func (f *fakeLimiter) Refund(_ context.Context, key string, cost int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refunds = append(f.refunds, fmt.Sprintf("%s/%d", key, cost))
	return nil
}

var secret = errors.New("redis at 10.0.0.7:6379: connection refused (password=hunter2)")

func decide(d core.Decision, err error) *fakeLimiter {
	return &fakeLimiter{allow: func(string, int) (core.Decision, error) { return d, err }}
}

var demo = core.PerMinute(6).WithName("demo")

// TestErrors checks the default answers when no decision can be made: the
// status, a fixed body without the error's text, no rate-limit headers, and
// the next handler not run.
func TestErrors(t *testing.T) {
	t.Parallel()
	storeErr := &core.StoreError{Op: "allow", Err: secret}
	tests := []struct {
		name   string
		lim    core.Limiter
		key    keyfunc.Func
		opts   []httpmw.Option
		status int
		retry  string
	}{
		{"key error", decide(core.Decision{Allowed: true}, nil),
			func(*http.Request) (string, error) { return "", secret }, nil, 500, ""},
		{"empty key: the client's", decide(core.Decision{Allowed: true}, nil),
			func(*http.Request) (string, error) { return "", nil }, nil, 400, ""},
		{"missing key header: the client's", decide(core.Decision{Allowed: true}, nil),
			keyfunc.Header("X-Api-Key"), nil, 400, ""},
		{"oversize key header", decide(core.Decision{Allowed: true}, nil),
			func(*http.Request) (string, error) {
				return "", fmt.Errorf("%w: X-Api-Key 9000 bytes", core.ErrKeyTooLarge)
			}, nil, 431, ""},
		{"no IP peer: the server's", decide(core.Decision{Allowed: true}, nil),
			func(*http.Request) (string, error) { return "", fmt.Errorf("%w: @", keyfunc.ErrInvalidRemoteAddr) }, nil, 500, ""},
		{"negative cost: the cost function's bug", decide(core.Decision{Allowed: true}, nil), byAddr,
			[]httpmw.Option{httpmw.WithCost(func(*http.Request) (int, error) { return -1, nil })}, 500, ""},
		{"cost above the burst", decide(core.Decision{}, fmt.Errorf("%w: 7 of 6", core.ErrCostTooLarge)), byAddr, nil, 413, ""},
		{"cost function error", decide(core.Decision{Allowed: true}, nil), byAddr,
			[]httpmw.Option{httpmw.WithCost(func(*http.Request) (int, error) { return 0, secret })}, 500, ""},
		{"cost function says invalid", decide(core.Decision{Allowed: true}, nil), byAddr,
			[]httpmw.Option{httpmw.WithCost(func(*http.Request) (int, error) {
				return 0, fmt.Errorf("body too large: %w", core.ErrInvalidCost)
			})}, 400, ""},
		{"store error fails closed", decide(core.Decision{}, storeErr), byAddr, nil, 429, "1"},
		{"store error, fail closed explicitly", decide(core.Decision{}, storeErr), byAddr,
			[]httpmw.Option{httpmw.WithFailureMode(core.FailClosed)}, 429, "1"},
		{"unknown limiter error", decide(core.Decision{}, secret), byAddr, nil, 500, ""},
		{"unknown limiter error under fail open", decide(core.Decision{}, secret), byAddr,
			[]httpmw.Option{httpmw.WithFailureMode(core.FailOpen)}, 500, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := do(mustMiddleware(t, tt.lim, tt.key, tt.opts...), nil)
			if w.Code != tt.status {
				t.Errorf("status %d, want %d", w.Code, tt.status)
			}
			body := w.Body.String()
			if strings.Contains(body, "hunter2") || strings.Contains(body, "10.0.0.7") || strings.Contains(body, "body too large") {
				t.Errorf("body leaks the error: %q", body)
			}
			if body == "" || w.Header().Get("Content-Type") != "text/plain; charset=utf-8" {
				t.Errorf("body %q with type %q, want fixed plain text", body, w.Header().Get("Content-Type"))
			}
			if g := w.Header().Get("Retry-After"); g != tt.retry {
				t.Errorf("Retry-After %q, want %q", g, tt.retry)
			}
			for _, k := range rlHeaders[:5] {
				if v := w.Header().Get(k); v != "" {
					t.Errorf("%s: %q on an undecided request", k, v)
				}
			}
			if w.Header().Get("X-Handler") != "" {
				t.Error("next handler ran")
			}
		})
	}
}

// TestInvalidCost checks the real limiter's costs that cannot be charged:
// above the burst is 413 (retrying will not help), negative is the cost
// function's bug (500), and neither charges anything; 0 is free.
func TestInvalidCost(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ cost, status int }{{-1, 500}, {7, 413}, {1 << 40, 413}} {
		t.Run(strconv.Itoa(tt.cost), func(t *testing.T) {
			t.Parallel()
			k, _ := newKeyed(t, demo)
			c := tt.cost
			h := mustMiddleware(t, k, byAddr, httpmw.WithCost(func(*http.Request) (int, error) { return c, nil }))
			if w := do(h, nil); w.Code != tt.status || w.Header().Get("X-Handler") != "" || w.Header().Get("RateLimit") != "" {
				t.Fatalf("status %d, headers %v; want a bare %d", w.Code, w.Header(), tt.status)
			}
			c = 6
			if w := do(h, nil); w.Code != 200 {
				t.Fatalf("after an invalid cost, the full burst: status %d", w.Code)
			}
		})
	}
}

// TestFreeRequest checks that a cost of 0 passes without charging or
// headers.
func TestFreeRequest(t *testing.T) {
	t.Parallel()
	k, _ := newKeyed(t, demo)
	c := 0
	h := mustMiddleware(t, k, byAddr, httpmw.WithCost(func(*http.Request) (int, error) { return c, nil }))
	for range 10 {
		if w := do(h, nil); w.Code != 200 || w.Header().Get("X-Handler") == "" || w.Header().Get("RateLimit") != "" {
			t.Fatalf("free request: status %d, headers %v", w.Code, w.Header())
		}
	}
	c = 6
	if w := do(h, nil); w.Code != 200 || w.Header().Get("X-Ratelimit-Remaining") != "0" {
		t.Fatalf("free requests charged something: status %d, headers %v", w.Code, w.Header())
	}
}

// TestErrorHandler checks that a custom error handler sees every kind of
// failure, wrapped so that errors.Is tells them apart and the cause stays
// reachable.
func TestErrorHandler(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		lim  core.Limiter
		key  keyfunc.Func
		cost func(*http.Request) (int, error)
		is   []error
	}{
		{"key", decide(core.Decision{}, nil), func(*http.Request) (string, error) { return "", secret }, nil, []error{core.ErrKey, secret}},
		{"empty key", decide(core.Decision{}, nil), func(*http.Request) (string, error) { return "", nil }, nil, []error{core.ErrKey}},
		{"cost", decide(core.Decision{}, nil), byAddr, func(*http.Request) (int, error) { return 0, secret }, []error{core.ErrCost, secret}},
		{"store", decide(core.Decision{}, &core.StoreError{Op: "allow", Err: secret}), byAddr, nil, []error{core.ErrStore, secret}},
		{"invalid cost", decide(core.Decision{}, fmt.Errorf("%w: cost 0", core.ErrInvalidCost)), byAddr, nil, []error{core.ErrInvalidCost}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var seen error
			opts := []httpmw.Option{httpmw.WithErrorHandler(func(w http.ResponseWriter, r *http.Request, err error) {
				seen = err
				w.WriteHeader(http.StatusTeapot)
			})}
			if tt.cost != nil {
				opts = append(opts, httpmw.WithCost(tt.cost))
			}
			w := do(mustMiddleware(t, tt.lim, tt.key, opts...), nil)
			if w.Code != http.StatusTeapot {
				t.Fatalf("status %d, want the handler's 418", w.Code)
			}
			for _, target := range tt.is {
				if !errors.Is(seen, target) {
					t.Errorf("errors.Is(%v, %v) = false", seen, target)
				}
			}
		})
	}
}

// TestFailOpen checks that a store failure under FailOpen admits the
// request without headers and without calling the error handler.
func TestFailOpen(t *testing.T) {
	t.Parallel()
	lim := decide(core.Decision{}, &core.StoreError{Op: "allow", Err: secret})
	h := mustMiddleware(t, lim, byAddr, httpmw.WithFailureMode(core.FailOpen),
		httpmw.WithErrorHandler(func(w http.ResponseWriter, r *http.Request, err error) { t.Errorf("error handler called: %v", err) }))
	w := do(h, nil)
	if w.Code != 200 || w.Header().Get("X-Handler") != "ran" || got(w.Header()) != "" {
		t.Fatalf("status %d, headers %v; want admitted without rate-limit headers", w.Code, w.Header())
	}
}

// TestSkip checks that skipped requests are neither counted nor given
// headers, while the others are limited as usual.
func TestSkip(t *testing.T) {
	t.Parallel()
	k, _ := newKeyed(t, demo)
	h := mustMiddleware(t, k, byAddr, httpmw.WithSkip(func(r *http.Request) bool { return r.URL.Path == "/healthz" }))
	for i := 0; i < 20; i++ {
		w := do(h, httptest.NewRequest("GET", "/healthz", nil))
		if w.Code != 200 || got(w.Header()) != "" {
			t.Fatalf("skipped request %d: status %d, headers\n%s", i, w.Code, got(w.Header()))
		}
	}
	w := do(h, nil)
	if w.Code != 200 || w.Header().Get("X-RateLimit-Remaining") != "5" {
		t.Fatalf("first limited request: status %d, remaining %q; want 200 and 5 (skips not counted)", w.Code, w.Header().Get("X-RateLimit-Remaining"))
	}
}

// TestSkipNil: WithSkip(nil) skips nothing, as in grpcmw and echomw: every
// request is counted, the last one given a skip function included.
func TestSkipNil(t *testing.T) {
	t.Parallel()
	k, _ := newKeyed(t, demo)
	h := mustMiddleware(t, k, byAddr, httpmw.WithSkip(func(r *http.Request) bool { return true }), httpmw.WithSkip(nil))
	for i, want := range []string{"5", "4"} {
		w := do(h, httptest.NewRequest("GET", "/healthz", nil))
		if w.Code != 200 || w.Header().Get("X-RateLimit-Remaining") != want {
			t.Fatalf("request %d: status %d, remaining %q; want 200 and %s", i+1, w.Code, w.Header().Get("X-RateLimit-Remaining"), want)
		}
	}
}

// drained returns a handler in front of a "demo" limiter whose key has spent
// its whole burst, so the next request is denied.
func drained(t *testing.T, opts ...httpmw.Option) http.Handler {
	t.Helper()
	k, _ := newKeyed(t, demo)
	h := mustMiddleware(t, k, byAddr, opts...)
	for i := 0; i < demo.Burst; i++ {
		if w := do(h, nil); w.Code != 200 {
			t.Fatalf("request %d of the burst: %d", i, w.Code)
		}
	}
	return h
}

// TestDefaultDenial checks the plain-text 429.
func TestDefaultDenial(t *testing.T) {
	t.Parallel()
	w := do(drained(t), nil)
	if w.Code != 429 || w.Body.String() != "Too Many Requests\n" || w.Header().Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Fatalf("got %d %q (%s)", w.Code, w.Body.String(), w.Header().Get("Content-Type"))
	}
	if w.Header().Get("Content-Length") != strconv.Itoa(w.Body.Len()) {
		t.Errorf("Content-Length %q for %d bytes", w.Header().Get("Content-Length"), w.Body.Len())
	}
}

// TestProblemDetails checks the RFC 9457 body's shape.
func TestProblemDetails(t *testing.T) {
	t.Parallel()
	w := do(drained(t, httpmw.WithDenyHandler(httpmw.ProblemDetails)), nil)
	if w.Code != 429 || w.Header().Get("Content-Type") != "application/problem+json" {
		t.Fatalf("got %d (%s)", w.Code, w.Header().Get("Content-Type"))
	}
	var p struct {
		Type     string   `json:"type"`
		Title    string   `json:"title"`
		Status   int      `json:"status"`
		Detail   string   `json:"detail"`
		Violated []string `json:"violated-policies"`
	}
	dec := json.NewDecoder(w.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("body does not parse: %v", err)
	}
	if p.Type != "https://iana.org/assignments/http-problem-types#quota-exceeded" || !strings.HasSuffix(p.Type, "#quota-exceeded") || p.Title == "" || p.Status != 429 ||
		p.Detail == "" || !slices.Equal(p.Violated, []string{"demo"}) {
		t.Errorf("problem %+v", p)
	}
	if w.Header().Get("Retry-After") != "10" {
		t.Errorf("Retry-After %q, want 10", w.Header().Get("Retry-After"))
	}
}

// TestDenyHandler checks that a deny handler replaces the body and runs with
// the headers already set.
func TestDenyHandler(t *testing.T) {
	t.Parallel()
	var d core.Decision
	h := drained(t, httpmw.WithDenyHandler(httpmw.ProblemDetails), httpmw.WithDenyHandler(func(w http.ResponseWriter, r *http.Request, dd core.Decision) {
		d = dd
		if w.Header().Get("Retry-After") != "10" || w.Header().Get("RateLimit") != `"demo";r=0;t=10` {
			t.Errorf("headers not set before the deny handler: %v", w.Header())
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("slow down"))
	}))
	w := do(h, nil)
	if w.Code != 503 || w.Body.String() != "slow down" {
		t.Errorf("got %d %q", w.Code, w.Body.String())
	}
	if d.Allowed || d.Limit != demo || d.RetryAfter != 10*time.Second {
		t.Errorf("deny handler got %+v", d)
	}
}

// TestHeaderStyles checks which headers each style writes, allowed and
// denied.
func TestHeaderStyles(t *testing.T) {
	t.Parallel()
	const (
		legacyOK   = "X-RateLimit-Limit: 6\nX-RateLimit-Remaining: 5\nX-RateLimit-Reset: 10\n"
		ietfOK     = "RateLimit-Policy: \"demo\";q=6;w=60\nRateLimit: \"demo\";r=5;t=10\n"
		legacyDeny = "X-RateLimit-Limit: 6\nX-RateLimit-Remaining: 0\nX-RateLimit-Reset: 60\n"
		ietfDeny   = "RateLimit-Policy: \"demo\";q=6;w=60\nRateLimit: \"demo\";r=0;t=10\n"
		retry      = "Retry-After: 10\n"
	)
	tests := []struct {
		style         core.HeaderStyle
		allowed, deny string
	}{
		{core.HeadersBoth, legacyOK + ietfOK, legacyDeny + ietfDeny + retry},
		{core.HeadersLegacy, legacyOK, legacyDeny + retry},
		{core.HeadersIETF, ietfOK, ietfDeny + retry},
		{core.HeadersNone, "", retry},
	}
	for _, tt := range tests {
		t.Run(tt.style.String(), func(t *testing.T) {
			t.Parallel()
			k, _ := newKeyed(t, demo)
			h := mustMiddleware(t, k, byAddr, httpmw.WithHeaders(tt.style))
			if g := got(do(h, nil).Header()); g != tt.allowed {
				t.Errorf("allowed:\n%s\nwant\n%s", g, tt.allowed)
			}
			for i := 0; i < 5; i++ {
				do(h, nil)
			}
			w := do(h, nil)
			if w.Code != 429 {
				t.Fatalf("status %d, want 429", w.Code)
			}
			if g := got(w.Header()); g != tt.deny {
				t.Errorf("denied:\n%s\nwant\n%s", g, tt.deny)
			}
		})
	}
}

// TestDefaultPolicyName checks that an unnamed Limit is "default".
func TestDefaultPolicyName(t *testing.T) {
	t.Parallel()
	k, _ := newKeyed(t, core.PerSecond(100))
	w := do(mustMiddleware(t, k, byAddr), nil)
	if g := w.Header().Get("RateLimit-Policy"); g != `"default";q=100;w=1` {
		t.Errorf("RateLimit-Policy %q", g)
	}
	if g := w.Header().Get("RateLimit"); g != `"default";r=99;t=1` {
		t.Errorf("RateLimit %q", g)
	}
}

// TestHeadersBeforeHandler checks that the headers are set when the next
// handler runs, so that they survive whatever status it writes.
func TestHeadersBeforeHandler(t *testing.T) {
	t.Parallel()
	k, _ := newKeyed(t, demo)
	l := httpmw.MustNew(k, byAddr)
	h := l.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if w.Header().Get("RateLimit") == "" || w.Header().Get("X-RateLimit-Remaining") == "" {
			t.Error("headers not set when the handler runs")
		}
		http.Error(w, "boom", http.StatusInternalServerError)
	}))
	w := do(h, nil)
	if w.Code != 500 || w.Header().Get("RateLimit") != `"demo";r=5;t=10` {
		t.Errorf("status %d, RateLimit %q", w.Code, w.Header().Get("RateLimit"))
	}
}

// TestRequestHeadersNotEchoed sends rate-limit headers, and a key carrying
// CR LF, and checks that nothing of the request comes back.
func TestRequestHeadersNotEchoed(t *testing.T) {
	t.Parallel()
	k, _ := newKeyed(t, demo)
	h := mustMiddleware(t, k, func(r *http.Request) (string, error) { return r.Header.Get("X-Api-Key"), nil })
	for i := 0; i < 8; i++ {
		r := httptest.NewRequest("GET", "/", nil)
		for _, name := range rlHeaders {
			r.Header.Set(name, "evil")
		}
		r.Header.Set("X-Api-Key", "evil\r\nSet-Cookie: x=1")
		w := do(h, r)
		for name, vs := range w.Header() {
			for _, v := range vs {
				if strings.Contains(v, "evil") || strings.ContainsAny(v, "\r\n") {
					t.Fatalf("request %d: response header %s: %q echoes the request", i, name, v)
				}
			}
		}
		if w.Header().Get("Set-Cookie") != "" {
			t.Fatal("header injection")
		}
	}
}

// TestShaping checks that a delayed admission waits, and that a request
// whose context ends while waiting is refunded and not served.
func TestShaping(t *testing.T) {
	t.Parallel()
	t.Run("waits then proceeds", func(t *testing.T) {
		t.Parallel()
		lim := decide(core.Decision{Allowed: true, Limit: demo, Remaining: 2, ResetAfter: 30 * time.Second, Delay: time.Millisecond}, nil)
		start := time.Now()
		w := do(mustMiddleware(t, lim, byAddr), nil)
		if w.Code != 200 || w.Header().Get("X-Handler") != "ran" || w.Header().Get("RateLimit") != `"demo";r=2;t=30` {
			t.Fatalf("status %d, headers %v", w.Code, w.Header())
		}
		if e := time.Since(start); e < time.Millisecond {
			t.Errorf("returned after %v, before the delay", e)
		}
	})
	t.Run("context ends first", func(t *testing.T) {
		t.Parallel()
		lim := decide(core.Decision{Allowed: true, Limit: demo, Delay: time.Hour}, nil)
		var seen error
		h := mustMiddleware(t, lim, byAddr, httpmw.WithCost(func(*http.Request) (int, error) { return 3, nil }),
			httpmw.WithErrorHandler(func(w http.ResponseWriter, r *http.Request, err error) {
				seen = err
				w.WriteHeader(http.StatusServiceUnavailable)
			}))
		ctx, cancel := context.WithCancel(context.Background())
		r := httptest.NewRequest("GET", "/", nil).WithContext(ctx)
		go cancel()
		w := do(h, r)
		if w.Code != 503 || w.Header().Get("X-Handler") != "" {
			t.Fatalf("status %d, handler %q", w.Code, w.Header().Get("X-Handler"))
		}
		if !errors.Is(seen, core.ErrWaitCanceled) || !errors.Is(seen, context.Canceled) {
			t.Errorf("error %v, want ErrWaitCanceled and context.Canceled", seen)
		}
		lim.mu.Lock()
		defer lim.mu.Unlock()
		if !slices.Equal(lim.refunds, []string{r.RemoteAddr + "/3"}) {
			t.Errorf("refunds %v, want one of 3 units", lim.refunds)
		}
	})
	t.Run("default answer", func(t *testing.T) {
		t.Parallel()
		lim := decide(core.Decision{Allowed: true, Limit: demo, Delay: time.Hour}, nil)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		w := do(mustMiddleware(t, lim, byAddr), httptest.NewRequest("GET", "/", nil).WithContext(ctx))
		if w.Code != 503 || strings.Contains(w.Body.String(), "cancel") {
			t.Fatalf("status %d, body %q; want 503 with a fixed body", w.Code, w.Body.String())
		}
	})
}

// TestPieces checks that an adapter composing Check and its own denial
// gets the same headers and status Enter writes.
func TestPieces(t *testing.T) {
	t.Parallel()
	k, _ := newKeyed(t, demo)
	l := httpmw.MustNew(k, byAddr)
	k2, _ := newKeyed(t, demo)
	whole := httpmw.MustNew(k2, byAddr)
	for i := 0; i < 7; i++ {
		r := httptest.NewRequest("GET", "/", nil)
		h := http.Header{}
		a, err := l.Check(h, r)
		if err != nil {
			t.Fatal(err)
		}
		ok, d := a.Admitted(), a.Decision
		w := httptest.NewRecorder()
		whole.Enter(w, r)
		if ok != (i < 6) || d.Allowed != ok || (!ok && a.Status() != w.Code) {
			t.Fatalf("request %d: ok=%v, status %d, %+v; Enter answered %d", i, ok, a.Status(), d, w.Code)
		}
		for name, v := range h {
			if got := w.Header()[name]; !reflect.DeepEqual(got, v) {
				t.Fatalf("request %d: %s = %q from Check, %q from Enter", i, name, v, got)
			}
		}
		if (h.Get("Retry-After") != "") == ok {
			t.Fatalf("request %d: headers %v", i, h)
		}
	}
}

// TestHeaderAdd checks that adding to a header the limiter set does not
// overwrite its neighbours, which share one backing array.
func TestHeaderAdd(t *testing.T) {
	t.Parallel()
	l := httpmw.MustNew(decide(core.Decision{}, nil), byAddr)
	h := http.Header{}
	l.WriteHeaders(h, core.Decision{Limit: demo, RetryAfter: time.Second})
	before := got(h)
	h.Add("X-RateLimit-Limit", "7")
	h.Add("X-RateLimit-Remaining", "8")
	after := strings.Replace(strings.Replace(got(h), "X-RateLimit-Limit: 7\n", "", 1), "X-RateLimit-Remaining: 8\n", "", 1)
	if after != before {
		t.Errorf("after Add:\n%s\nbefore:\n%s", after, before)
	}
}

// TestManyPolicies checks decisions from more distinct Limits than the
// formatted-policy cache holds.
func TestManyPolicies(t *testing.T) {
	t.Parallel()
	l := httpmw.MustNew(decide(core.Decision{}, nil), byAddr)
	for i := 1; i <= 40; i++ {
		h := http.Header{}
		lim := core.PerSecond(i).WithName("p" + strconv.Itoa(i))
		l.WriteHeaders(h, core.Decision{Allowed: true, Limit: lim, Remaining: i - 1, ResetAfter: time.Second})
		if g, w := h.Get("RateLimit-Policy"), fmt.Sprintf(`"p%d";q=%d;w=1`, i, i); g != w {
			t.Fatalf("policy %q, want %q", g, w)
		}
	}
}

// TestNew checks constructor validation.
func TestNew(t *testing.T) {
	t.Parallel()
	lim := decide(core.Decision{}, nil)
	tests := []struct {
		name string
		lim  core.Limiter
		key  keyfunc.Func
		opts []httpmw.Option
	}{
		{"nil limiter", nil, byAddr, nil},
		{"nil key", lim, nil, nil},
		{"nil option", lim, byAddr, []httpmw.Option{nil}},
		{"nil cost", lim, byAddr, []httpmw.Option{httpmw.WithCost(nil)}},
		{"nil deny handler", lim, byAddr, []httpmw.Option{httpmw.WithDenyHandler(nil)}},
		{"nil error handler", lim, byAddr, []httpmw.Option{httpmw.WithErrorHandler(nil)}},
		{"bad style", lim, byAddr, []httpmw.Option{httpmw.WithHeaders(9)}},
		{"bad failure mode", lim, byAddr, []httpmw.Option{httpmw.WithFailureMode(7)}},
		{"nil observer", lim, byAddr, []httpmw.Option{httpmw.WithObserver(nil)}},
		{"limiter and limiter function", lim, byAddr, []httpmw.Option{httpmw.WithLimiterFunc(func(*http.Request) core.Limiter { return lim })}},
		{"nil limiter function", nil, byAddr, []httpmw.Option{httpmw.WithLimiterFunc(nil)}},
		{"bad hold", lim, byAddr, []httpmw.Option{httpmw.WithDenialHold(time.Second, 0)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := httpmw.New(tt.lim, tt.key, tt.opts...); err == nil || !strings.HasPrefix(err.Error(), "httpmw: ") {
				t.Errorf("error %v, want an httpmw error", err)
			}
			defer func() {
				if recover() == nil {
					t.Error("MustNew did not panic")
				}
			}()
			httpmw.MustNew(tt.lim, tt.key, tt.opts...)
		})
	}
}

// TestServer runs the middleware in a real server, to see the headers as a
// client gets them off the wire.
func TestServer(t *testing.T) {
	t.Parallel()
	k, _ := newKeyed(t, core.PerMinute(2).WithName("wire"))
	// The client may open a new connection per request: key by IP alone.
	byIP := func(r *http.Request) (string, error) {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		return host, err
	}
	l, err := httpmw.New(k, byIP)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(l.Handler(ok))
	defer srv.Close()
	var codes []int
	for i := 0; i < 3; i++ {
		resp, err := srv.Client().Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
		if i == 2 && (resp.Header.Get("Retry-After") != "30" || resp.Header.Get("RateLimit") != `"wire";r=0;t=30`) {
			t.Errorf("denial headers %v", resp.Header)
		}
	}
	if !slices.Equal(codes, []int{200, 200, 429}) {
		t.Errorf("statuses %v", codes)
	}
}

// TestConcurrent hammers one key from many goroutines (for -race) and checks
// that exactly the burst is admitted.
func TestConcurrent(t *testing.T) {
	t.Parallel()
	k, _ := newKeyed(t, core.PerHour(50))
	h := mustMiddleware(t, k, func(*http.Request) (string, error) { return "one", nil })
	var mu sync.Mutex
	admitted := 0
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				if do(h, nil).Code == 200 {
					mu.Lock()
					admitted++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if admitted != 50 {
		t.Errorf("admitted %d, want 50", admitted)
	}
}

// TestCheck checks Enter's answer-less half, which adapters that render
// refusals their own way call: what it reports, the status Enter would
// answer with, and that it sets the headers Enter's answer carries.
func TestCheck(t *testing.T) {
	t.Parallel()
	allowed := core.Decision{Allowed: true, Limit: demo, Remaining: 5, ResetAfter: 10 * time.Second}
	denied := core.Decision{Limit: demo, ResetAfter: time.Minute, RetryAfter: 10 * time.Second}
	storeErr := &core.StoreError{Op: "allow", Err: secret}
	tests := []struct {
		name    string
		lim     core.Limiter
		opts    []httpmw.Option
		ok      bool
		d       core.Decision
		err     error
		status  int
		headers string
	}{
		{"allowed", decide(allowed, nil), nil, true, allowed, nil, 0, want(6, 5, 10, `"demo";q=6;w=60`, `"demo";r=5;t=10`, 0)},
		{"denied", decide(denied, nil), nil, false, denied, nil, 429, want(6, 0, 60, `"demo";q=6;w=60`, `"demo";r=0;t=10`, 10)},
		{"skipped", decide(denied, nil), []httpmw.Option{httpmw.WithSkip(func(*http.Request) bool { return true })}, true, core.Decision{}, nil, 0, ""},
		{"store error", decide(core.Decision{}, storeErr), nil, false, core.Decision{}, core.ErrStore, 429, "Retry-After: 1\n"},
		{"store error, fail open", decide(core.Decision{}, storeErr), []httpmw.Option{httpmw.WithFailureMode(core.FailOpen)}, true, core.Decision{}, nil, 0, ""},
		{"bad cost", decide(allowed, nil), []httpmw.Option{httpmw.WithCost(func(*http.Request) (int, error) { return 0, core.ErrInvalidCost })}, false, core.Decision{}, core.ErrInvalidCost, 400, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			a, err := httpmw.MustNew(tt.lim, byAddr, tt.opts...).Check(h, httptest.NewRequest(http.MethodGet, "/", nil))
			ok, d := a.Admitted(), a.Decision
			if ok != tt.ok || d != tt.d || !errors.Is(err, tt.err) || (err == nil) != (tt.err == nil) || a.Status() != tt.status {
				t.Errorf("got %v, %+v, %v, status %d; want %v, %+v, %v, %d", ok, d, err, a.Status(), tt.ok, tt.d, tt.err, tt.status)
			}
			if g := got(h); g != tt.headers {
				t.Errorf("headers:\n%swant:\n%s", g, tt.headers)
			}
		})
	}
}

// TestWriteErrorHeaders checks the status and headers of each default error
// answer, for adapters that render errors their own way.
func TestWriteErrorHeaders(t *testing.T) {
	t.Parallel()
	l := httpmw.MustNew(decide(core.Decision{}, nil), byAddr)
	tests := []struct {
		err    error
		status int
		retry  string
	}{
		{fmt.Errorf("%w: %w", core.ErrKey, secret), 500, ""},
		{fmt.Errorf("%w: %w", core.ErrCost, core.ErrInvalidCost), 400, ""},
		{core.ErrInvalidCost, 400, ""},
		{fmt.Errorf("%w: %w", core.ErrCost, secret), 500, ""},
		{&core.StoreError{Op: "allow", Err: secret}, 429, "1"},
		{core.ErrWaitCanceled, 503, ""},
		{secret, 500, ""},
	}
	for _, tt := range tests {
		h := http.Header{}
		if s := l.WriteErrorHeaders(h, tt.err); s != tt.status || h.Get("Retry-After") != tt.retry || len(h) > 1 {
			t.Errorf("%v: %d %v; want %d, Retry-After %q", tt.err, s, h, tt.status, tt.retry)
		}
	}
}
