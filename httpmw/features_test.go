package httpmw_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/internal/httpmwtest"
)

func TestCostByContentLength(t *testing.T) {
	t.Parallel()
	kib := httpmw.CostByContentLength(1024, 64)
	refuse := httpmw.CostByContentLength(1024, httpmw.RefuseUnknownLength)
	bytes := httpmw.CostByContentLength(1, 1)
	tests := []struct {
		f      func(*http.Request) (int, error)
		length int64
		want   int
		bad    bool
	}{
		{kib, 0, 1, false}, // no body still counts
		{kib, 1, 1, false},
		{kib, 1024, 1, false},
		{kib, 1025, 2, false},
		{kib, 10 << 20, 10 << 10, false},
		{kib, -1, 64, false}, // unknown: the configured cost
		{refuse, -1, 0, true},
		{refuse, 2048, 2, false},
		{bytes, 5, 5, false},
		{bytes, math.MaxInt64, math.MaxInt, false},
	}
	for _, tc := range tests {
		r := httptest.NewRequest("POST", "/", nil)
		r.ContentLength = tc.length
		got, err := tc.f(r)
		if got != tc.want || (err != nil) != tc.bad || tc.bad && !errors.Is(err, core.ErrInvalidCost) {
			t.Errorf("length %d: cost %d, %v; want %d, error %v", tc.length, got, err, tc.want, tc.bad)
		}
	}
	for _, args := range [][2]int{{0, 1}, {1024, 0}, {1024, -2}} {
		func() {
			defer func() {
				if p := recover(); p == nil || !strings.Contains(p.(string), "CostByContentLength") {
					t.Errorf("CostByContentLength(%d, %d): panic %v, want one naming the call", args[0], args[1], p)
				}
			}()
			httpmw.CostByContentLength(int64(args[0]), args[1])
		}()
	}
	// Refused unknown lengths are the client's fault: 400.
	k, _ := newKeyed(t, demo)
	r := httptest.NewRequest("POST", "/", strings.NewReader("x"))
	r.ContentLength = -1
	if w := do(mustMiddleware(t, k, byAddr, httpmw.WithCost(refuse)), r); w.Code != 400 {
		t.Errorf("unknown length refused with %d, want 400", w.Code)
	}
}

func TestFeatureOptions(t *testing.T) {
	t.Parallel()
	k, _ := newKeyed(t, demo)
	for _, tc := range []struct {
		opt  httpmw.Option
		want string
	}{
		{httpmw.WithDenialHold(0, 1), "WithDenialHold(0s, 1): the hold must be positive"},
		{httpmw.WithDenialHold(time.Second, 0), "WithDenialHold(1s, 0): at least 1 refusal"},
		{httpmw.WithLimiterFunc(nil), "WithLimiterFunc(nil)"},
	} {
		if _, err := httpmw.New(k, byAddr, tc.opt); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one containing %q", err, tc.want)
		}
	}
}

// leased admits every request with a lease and counts those not released.
type leased struct {
	out      atomic.Int64
	released chan struct{}
}

func (l *leased) Allow(context.Context, string, int) (core.Decision, error) {
	l.out.Add(1)
	return core.Decision{Allowed: true, Limit: demo, Remaining: 1, Lease: core.NewLease(func(context.Context, core.Ending) error {
		l.out.Add(-1)
		select {
		case l.released <- struct{}{}:
		default:
		}
		return nil
	})}, nil
}
func (l *leased) Refund(context.Context, string, int) error { return nil }

// TestLeaseEntryPoints checks that every way in ends the lease: Handler
// when the handler returns or panics, Enter and Check through
// Admission.End.
func TestLeaseEntryPoints(t *testing.T) {
	t.Parallel()
	lim := &leased{released: make(chan struct{}, 3)}
	l := httpmw.MustNew(lim, byAddr)
	h := l.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if lim.out.Load() != 1 {
			t.Errorf("%d leases out while the handler runs, want 1", lim.out.Load())
		}
		if r.Header.Get("X-Panic") != "" {
			panic(http.ErrAbortHandler)
		}
	}))
	do(h, nil)
	func() {
		defer func() { _ = recover() }()
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("X-Panic", "1")
		do(h, r)
	}()
	if n := lim.out.Load(); n != 0 {
		t.Fatalf("Handler: %d leases out", n)
	}
	a := l.Enter(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	if !a.Admitted() || a.Decision.Lease.IsZero() || lim.out.Load() != 1 {
		t.Fatalf("Enter: admitted %v, lease %v", a.Admitted(), a.Decision.Lease)
	}
	a.End()
	a, err := l.Check(http.Header{}, httptest.NewRequest("GET", "/", nil))
	if !a.Admitted() || err != nil || a.Decision.Lease.IsZero() || a.Status() != 0 {
		t.Fatalf("Check: %v %v, lease %v, status %d", a.Admitted(), err, a.Decision.Lease, a.Status())
	}
	a.End()
	if n := lim.out.Load(); n != 0 {
		t.Fatalf("Enter, Check: %d leases out", n)
	}
}

// stackLimiter decides with d and lists two policies.
type stackLimiter struct {
	*fakeLimiter
	ls []core.Limit
}

func (s stackLimiter) Policies() []core.Limit { return s.ls }

// TestStackedHeaders checks RateLimit-Policy for a stack, for the limiter
// given to New and for one WithLimiterFunc picks, and that listing costs
// no allocation over a single limit.
func TestStackedHeaders(t *testing.T) {
	ls := []core.Limit{core.PerSecond(5).WithName("burst"), demo}
	d := core.Decision{Allowed: true, Limit: demo, Remaining: 2, ResetAfter: 40 * time.Second}
	var stacked core.Limiter = stackLimiter{decide(d, nil), ls}
	single := decide(d, nil)
	wantPolicy := `"burst";q=5;w=1, "demo";q=6;w=60`
	direct := httpmw.MustNew(stacked, byAddr).Handler(ok)
	picked := httpmw.MustNew(nil, byAddr, httpmw.WithLimiterFunc(func(*http.Request) core.Limiter { return stacked })).Handler(ok)
	for name, h := range map[string]http.Handler{"direct": direct, "picked": picked} {
		w := do(h, nil)
		if got := w.Header().Get("RateLimit-Policy"); got != wantPolicy || w.Header().Get("RateLimit") != `"demo";r=2;t=40` {
			t.Errorf("%s: RateLimit-Policy %q, RateLimit %q", name, got, w.Header().Get("RateLimit"))
		}
	}
	r := httptest.NewRequest("GET", "/", nil)
	w := httpmwtest.NewWriter()
	allocs := func(h http.Handler) float64 {
		return testing.AllocsPerRun(200, func() { w.Reset(); h.ServeHTTP(w, r) })
	}
	base := allocs(httpmw.MustNew(single, byAddr).Handler(ok))
	for name, h := range map[string]http.Handler{"direct": direct, "picked": picked} {
		if n := allocs(h); n > base {
			t.Errorf("%s: %v allocs per stacked request, %v per single", name, n, base)
		}
	}
}

// TestLimiterFunc checks that the choice decides, and that nil leaves a
// request unlimited: skipped before the key function, with no headers.
func TestLimiterFunc(t *testing.T) {
	t.Parallel()
	reads, _ := newKeyed(t, core.PerMinute(100).WithName("reads"))
	writes, _ := newKeyed(t, core.PerMinute(2).WithName("writes"))
	keyed := 0
	h := mustMiddleware(t, nil, func(r *http.Request) (string, error) { keyed++; return r.RemoteAddr, nil },
		httpmw.WithLimiterFunc(func(r *http.Request) core.Limiter {
			switch r.Method {
			case http.MethodGet:
				return reads
			case http.MethodPost:
				return writes
			}
			return nil
		}))
	for range 3 {
		w := do(h, httptest.NewRequest(http.MethodOptions, "/", nil))
		if w.Code != 200 || len(w.Header().Values("RateLimit")) != 0 || keyed != 0 {
			t.Fatalf("unlimited OPTIONS: %d, RateLimit %q, %d keys; want 200, no fields, no key", w.Code, w.Header().Values("RateLimit"), keyed)
		}
	}
	for i, tc := range []struct {
		method, policy string
		code           int
	}{{"GET", "reads", 200}, {"POST", "writes", 200}, {"POST", "writes", 200}, {"POST", "writes", 429}, {"GET", "reads", 200}} {
		w := do(h, httptest.NewRequest(tc.method, "/", nil))
		if w.Code != tc.code || !strings.HasPrefix(w.Header().Get("RateLimit"), `"`+tc.policy+`"`) {
			t.Errorf("request %d (%s): %d %q, want %d from %s", i+1, tc.method, w.Code, w.Header().Get("RateLimit"), tc.code, tc.policy)
		}
	}
}
