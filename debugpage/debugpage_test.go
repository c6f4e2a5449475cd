package debugpage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/debugpage"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/overload"
)

var t0 = time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)

func event(key string, o core.Outcome) core.Event {
	return core.Event{Transport: "http", Outcome: o, Admitted: o == core.OutcomeAllowed || o == core.OutcomeShaped, Key: key, Cost: 1}
}

func get(t *testing.T, h http.Handler, target string) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	res := rec.Result()
	body, _ := io.ReadAll(res.Body)
	return res, string(body)
}

// raw shows keys as they are.
var raw = debugpage.WithKeyRedaction(func(k string) string { return k })

func getJSON(t *testing.T, p *debugpage.Page) (snapshot, string) {
	t.Helper()
	res, body := get(t, p, "/debug/floodgate/?format=json")
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("JSON: %d %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	var s snapshot
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatalf("JSON: %v\n%s", err, body)
	}
	return s, body
}

// TestJSON feeds a known history on a fake clock and reads every section
// back through the JSON endpoint.
func TestJSON(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	api := core.PerSecond(5).WithName("api")
	stack, err := core.NewStack([]core.Limit{
		core.PerSecond(10).WithName("burst"),
		core.PerMinute(100).WithName("sustained"),
	})
	if err != nil {
		t.Fatal(err)
	}
	redis := &reporter{h: core.Health{Breaker: "closed", StoreDecisions: 7, LocalDecisions: 3, Failures: 2, Opens: 1}}
	p, err := debugpage.New(
		debugpage.WithClock(clock),
		raw,
		debugpage.WithWindow(20*time.Second),
		debugpage.WithTop(2),
		debugpage.WithLimiter("static", core.MustNew(api)),
		debugpage.WithLimiter("stack", stack),
		debugpage.WithHealth("redis", redis),
		debugpage.WithHealth("bare", &reporter{h: core.Health{Breaker: "half-open"}}),
	)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Second 0: a 3 allowed, b 1 allowed 2 denied; second 1: c denied
	// (shadow), a bad key, d allowed on the overflow state; second 10: one
	// store error for b.
	for range 3 {
		p.Observe(ctx, event("a", core.OutcomeAllowed))
	}
	p.Observe(ctx, event("b", core.OutcomeAllowed))
	p.Observe(ctx, event("b", core.OutcomeDenied))
	p.Observe(ctx, event("b", core.OutcomeDenied))
	clock.Advance(time.Second)
	shadow := event("c", core.OutcomeDenied)
	shadow.Shadow, shadow.Admitted = true, true
	p.Observe(ctx, shadow)
	p.Observe(ctx, event("", core.OutcomeBadKey))
	overflow := event("d", core.OutcomeAllowed)
	overflow.Decision.Overflow = true
	p.Observe(ctx, overflow)
	clock.Advance(9 * time.Second)
	p.Observe(ctx, event("b", core.OutcomeStoreError))
	clock.Advance(500 * time.Millisecond)
	redis.set(core.Health{Breaker: "open", StoreDecisions: 7, LocalDecisions: 3, Failures: 2, Opens: 1, LeaseDecisions: 900, Leases: 4, Returned: 11, Returns: 3})

	s, _ := getJSON(t, p)
	wantTotals := map[string]uint64{"allowed": 5, "shaped": 0, "denied": 3, "bad_key": 1, "bad_cost": 0, "error": 0, "store_error": 1, "canceled": 0, "shed": 0, "other": 0}
	if fmt.Sprint(s.Totals) != fmt.Sprint(wantTotals) {
		t.Errorf("totals %v, want %v", s.Totals, wantTotals)
	}
	if s.ShadowDenied != 1 || s.Overflow != 1 || s.KeyForm != "custom" {
		t.Errorf("shadow %d overflow %d key form %q, want 1 1 custom", s.ShadowDenied, s.Overflow, s.KeyForm)
	}
	if !s.Since.Equal(t0) || !s.Time.Equal(t0.Add(10500*time.Millisecond)) {
		t.Errorf("since %v time %v", s.Since, s.Time)
	}
	// The window ends with second 10 and starts 19 seconds earlier.
	w := s.Window
	if w.Seconds != 20 || w.Start != t0.Unix()-9 || len(w.Counts["allowed"]) != 20 {
		t.Fatalf("window %d s from %d, %d counts; want 20 s from %d", w.Seconds, w.Start, len(w.Counts["allowed"]), t0.Unix()-9)
	}
	if a := w.Counts["allowed"]; a[9] != 3+1 || a[10] != 1 || w.Counts["denied"][9] != 2 || w.Counts["denied"][10] != 1 || w.Counts["store_error"][19] != 1 || w.Totals["allowed"] != 5 {
		t.Errorf("per-second counts: %v", w.Counts)
	}
	// The rate covers the whole seconds 0..9; second 10 is not over.
	if w.PerSecond["allowed"] != 0.5 || w.PerSecond["denied"] != 0.3 || w.PerSecond["store_error"] != 0 {
		t.Errorf("rates %v, want 0.5 allowed and 0.3 denied (5 and 3 in 10 s), no store error (current second)", w.PerSecond)
	}
	if got := fmt.Sprint(s.HotKeys); got != "{[{b 4 0} {a 3 0}] 0 512}" {
		t.Errorf("hot keys %s", got)
	}
	if got := fmt.Sprint(s.RefusedKeys); got != "{[{b 2 0} {c 1 0}] 0 512}" {
		t.Errorf("refused keys %s", got)
	}
	if got := fmt.Sprint(s.Policies); got != "[{static [{api 5 1s 5}]} {stack [{burst 10 1s 10} {sustained 100 1m0s 100}]}]" {
		t.Errorf("policies %s", got)
	}
	if len(s.Health) != 2 || s.Health[0].State != "open" || *s.Health[0].Stats != (stats{PrimaryDecisions: 7, LocalDecisions: 3, PrimaryFailures: 2, Opens: 1, LeaseDecisions: 900, Leases: 4, Returned: 11, Returns: 3}) ||
		s.Health[1].State != "half-open" || *s.Health[1].Stats != (stats{}) {
		t.Errorf("health %+v", s.Health)
	}
	// The page's table shows the same counters.
	if _, html := get(t, p, "/debug/floodgate/"); !strings.Contains(html, `id="health-primary-0">7</td>`) ||
		!strings.Contains(html, `id="health-lease-0">900</td>`) || !strings.Contains(html, `id="health-leases-0">4</td>`) ||
		!strings.Contains(html, `id="health-returned-0">11</td>`) || !strings.Contains(html, `id="health-returns-0">3</td>`) {
		t.Errorf("the page's health table does not show the counters")
	}

	// A minute later the window is empty; the totals stay.
	clock.Advance(time.Minute)
	s, _ = getJSON(t, p)
	if s.Window.Totals["allowed"] != 0 || s.Window.Totals["store_error"] != 0 || s.Totals["allowed"] != 5 {
		t.Errorf("a minute on: window %v totals %v", s.Window.Totals, s.Totals)
	}
}

// TestRedaction: by default no key leaves the page as it is, in the JSON
// or the HTML; each is shown as Redact gives it.
func TestRedaction(t *testing.T) {
	t.Parallel()
	p := debugpage.MustNew()
	ctx := context.Background()
	keys := []string{"203.0.113.7", "user:alice@example.com", "sk_live_0123456789"}
	for i, k := range keys {
		for range i + 1 {
			p.Observe(ctx, event(k, core.OutcomeDenied))
		}
	}
	s, body := getJSON(t, p)
	_, html := get(t, p, "/debug/floodgate/")
	for _, k := range keys {
		for _, part := range []string{k, strings.Split(k, ":")[0], "alice", "0123456789", "113.7"} {
			if strings.Contains(body, part) || strings.Contains(html, part) {
				t.Errorf("%q (from key %q) appears in the output", part, k)
			}
		}
	}
	hex12 := regexp.MustCompile(`^[0-9a-f]{12}$`)
	for i, kc := range s.RefusedKeys.Keys {
		want := debugpage.Redact(keys[len(keys)-1-i])
		if kc.Key != want || !hex12.MatchString(kc.Key) || kc.Count != uint64(len(keys)-i) {
			t.Errorf("refused key %d: %+v, want %s", i, kc, want)
		}
		if !strings.Contains(html, ">"+want+"<") {
			t.Errorf("HTML lacks redacted key %s", want)
		}
	}
	if s.KeyForm != "hashed" {
		t.Errorf("key_form %q by default, want hashed", s.KeyForm)
	}
	// Stable within the process, different between keys.
	if debugpage.Redact("x") != debugpage.Redact("x") || debugpage.Redact("x") == debugpage.Redact("y") || debugpage.Redact("") == debugpage.Redact("x") {
		t.Error("Redact is not a stable, key-dependent hash")
	}
}

// TestHTMLEscaping: a hostile key (raw keys on) and a hostile section
// name come out as text, never as markup or script, and the page's CSP
// nonce matches its script and style.
func TestHTMLEscaping(t *testing.T) {
	t.Parallel()
	hostile := `</script><script>alert(1)</script><img src=x onerror="alert(2)">'&`
	p := debugpage.MustNew(
		raw,
		debugpage.WithLimiter(hostile, core.MustNew(core.PerSecond(1))),
		debugpage.WithHealth(hostile, &reporter{}),
	)
	p.Observe(context.Background(), event(hostile, core.OutcomeDenied))
	res, html := get(t, p, "/debug/floodgate/")
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("%d %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	for _, bad := range []string{"<script>alert", "<img", "onerror=\"", "</script><"} {
		if strings.Contains(html, bad) {
			t.Errorf("page contains %q unescaped", bad)
		}
	}
	if n := strings.Count(html, "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;"); n < 4 {
		t.Errorf("hostile text escaped for HTML %d times, want the key twice, the limiter and the store", n)
	}
	// In the script's initial data it is JSON with <, > and & escaped.
	if !strings.Contains(html, `\u003c/script\u003e\u003cscript\u003ealert(1)`) {
		t.Error("hostile key not escaped in the embedded JSON")
	}
	// One script, one style, both carrying the CSP's nonce.
	csp := res.Header.Get("Content-Security-Policy")
	m := regexp.MustCompile(`script-src 'nonce-([0-9a-f]{32})'`).FindStringSubmatch(csp)
	if m == nil || !strings.Contains(csp, "default-src 'none'") {
		t.Fatalf("CSP %q", csp)
	}
	if strings.Count(html, "<script") != 1 || !strings.Contains(html, `<script nonce="`+m[1]+`">`) || !strings.Contains(html, `<style nonce="`+m[1]+`">`) {
		t.Errorf("script or style without the nonce %s", m[1])
	}
	_, again := get(t, p, "/debug/floodgate/")
	if strings.Contains(again, m[1]) {
		t.Error("the nonce was reused")
	}
}

func TestHTTP(t *testing.T) {
	t.Parallel()
	p := debugpage.MustNew()
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/debug/floodgate/", nil))
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: %d, Allow %q", rec.Code, rec.Header().Get("Allow"))
	}
	res, html := get(t, p, "/debug/floodgate/")
	for _, h := range []string{"Cache-Control", "X-Content-Type-Options", "Referrer-Policy"} {
		if res.Header.Get(h) == "" {
			t.Errorf("no %s header", h)
		}
	}
	for _, id := range []string{`id="total-allowed"`, `id="total-denied"`, `id="refused-body"`, `id="hot-body"`, `id="chart"`} {
		if !strings.Contains(html, id) {
			t.Errorf("page lacks %s", id)
		}
	}
	s, _ := getJSON(t, p)
	if s.HotKeys.Keys == nil || s.Policies == nil || s.Health == nil {
		t.Errorf("empty lists must be [] in JSON for the script: %+v", s)
	}
}

func TestOptionErrors(t *testing.T) {
	t.Parallel()
	lim := core.MustNew(core.PerSecond(1))
	for _, c := range []struct {
		opts []debugpage.Option
		want string
	}{
		{[]debugpage.Option{debugpage.WithWindow(time.Second)}, "debugpage: WithWindow(1s): the window must be a whole number of seconds from 10s to 1h"},
		{[]debugpage.Option{debugpage.WithWindow(10500 * time.Millisecond)}, "WithWindow(10.5s)"},
		{[]debugpage.Option{debugpage.WithTop(0)}, "WithTop(0)"},
		{[]debugpage.Option{debugpage.WithTop(101)}, "WithTop(101)"},
		{[]debugpage.Option{debugpage.WithKeyRedaction(nil)}, "WithKeyRedaction(nil)"},
		{[]debugpage.Option{debugpage.WithLimiter("", lim)}, `WithLimiter("", ...): the name must not be empty`},
		{[]debugpage.Option{debugpage.WithLimiter("a", lim), debugpage.WithLimiter("a", lim)}, `WithLimiter("a", ...) names a section already`},
		{[]debugpage.Option{debugpage.WithLimiter("f", &reporter{})}, `WithLimiter("f", *debugpage_test.reporter): the limiter neither lists its policies`},
		{[]debugpage.Option{debugpage.WithHealth("h", nil)}, `WithHealth("h", nil)`},
		{[]debugpage.Option{debugpage.WithGuard("g", nil)}, `WithGuard("g", nil)`},
		{[]debugpage.Option{debugpage.WithGuard("", nil)}, `WithGuard("", ...): the name must not be empty`},
		{[]debugpage.Option{nil}, "debugpage: nil Option (argument 1)"},
	} {
		p, err := debugpage.New(c.opts...)
		if err == nil || p != nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want an error containing %q", err, c.want)
		}
	}
	// A health section and a policy section may share a name.
	if _, err := debugpage.New(debugpage.WithLimiter("redis", lim), debugpage.WithHealth("redis", &reporter{})); err != nil {
		t.Error(err)
	}
}

// TestConcurrent observes from many goroutines while the page is served;
// run with -race. The totals and the top keys come out exact, as fewer
// keys than counters are used.
func TestConcurrent(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	p := debugpage.MustNew(debugpage.WithClock(clock), raw)
	const goroutines, each = 8, 2000
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var readers sync.WaitGroup
	readers.Add(1)
	go func() {
		defer readers.Done()
		for {
			select {
			case <-stop:
				return
			default:
				get(t, p, "/?format=json")
				get(t, p, "/")
				clock.Advance(100 * time.Millisecond)
			}
		}
	}()
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				o := core.OutcomeAllowed
				if i%4 == 0 {
					o = core.OutcomeDenied
				}
				p.Observe(context.Background(), event(fmt.Sprint("k", (g*each+i)%40), o))
			}
		}()
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	s, _ := getJSON(t, p)
	if s.Totals["allowed"] != goroutines*each*3/4 || s.Totals["denied"] != goroutines*each/4 {
		t.Fatalf("totals %v", s.Totals)
	}
	if k := s.HotKeys.Keys[0]; k.Count != goroutines*each/40 || k.Error != 0 {
		t.Fatalf("hottest %+v, want %d exactly", k, goroutines*each/40)
	}
}

// reporter is a core.HealthReporter, and a limiter of nothing, whose
// health the test sets.
type reporter struct {
	core.Limiter
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

// TestGuards: a guard registered with WithGuard shows its limit, requests
// in flight and latency, read each time the JSON or the page is served.
func TestGuards(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	ad, err := overload.NewAdaptive(overload.AdaptiveConfig{Clock: clock, InitialLimit: 8})
	if err != nil {
		t.Fatal(err)
	}
	p, err := debugpage.New(debugpage.WithClock(clock), debugpage.WithGuard("api", ad))
	if err != nil {
		t.Fatal(err)
	}
	s, _ := getJSON(t, p)
	if len(s.Guards) != 1 || s.Guards[0] != (guard{Name: "api", Limit: 8}) {
		t.Fatalf("guards %+v, want api with limit 8, nothing in flight", s.Guards)
	}
	tok, _ := ad.Acquire(overload.Normal, 3)
	defer tok.End(core.EndDone)
	if s, _ = getJSON(t, p); s.Guards[0].InFlight != 3 {
		t.Fatalf("guards %+v, want 3 in flight", s.Guards)
	}
	if _, body := get(t, p, "/debug/floodgate/"); !strings.Contains(body, `id="guard-inflight-0">3<`) {
		t.Fatalf("the page does not show 3 in flight for the guard:\n%s", body)
	}
}
