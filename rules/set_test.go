package rules

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/internal/coretest"
)

// quietly keeps reloads out of the test's log.
var quietly = WithOnReload(func(error) {})

var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })

// codes sends n requests and returns their status codes, joined.
func codes(h http.Handler, method, path string, n int, header ...string) string {
	var out []string
	for range n {
		r := httptest.NewRequest(method, path, nil)
		for i := 0; i+1 < len(header); i += 2 {
			r.Header.Set(header[i], header[i+1])
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		out = append(out, http.StatusText(w.Code)[:2])
	}
	return strings.Join(out, " ")
}

const (
	OK = "OK"
	TM = "To" // Too Many Requests
)

func rep(s string, n int) string { return strings.TrimSpace(strings.Repeat(s+" ", n)) }

func TestMatching(t *testing.T) {
	clock := coretest.NewClock(time.Unix(1_700_000_000, 0))
	s, err := New("r.yaml", []byte(`rules:
  - name: login
    match: {paths: [/login], methods: [POST]}
    limit: 1/min
  - name: api
    match: {paths: ["/api/*", /v1]}
    limit: 2/min
  - name: all
    match: {paths: ["/*"]}
    limit: 3/min
    key: header:X-Key
  - name: calls
    match: {grpc: ["/pkg.S/*"]}
    limit: 1/min
`), WithCoreOptions(core.WithClock(clock)), quietly)
	if err != nil {
		t.Fatal(err)
	}
	h := s.Middleware(ok)
	for _, tt := range []struct {
		method, path string
		n            int
		want         string
		header       []string
	}{
		{"POST", "/login", 2, OK + " " + TM, nil},
		{"GET", "/api/x", 3, OK + " " + OK + " " + TM, nil},
		{"GET", "/api/y/z", 1, TM, nil}, // one rule, one key: the same quota
		{"GET", "/v1", 1, TM, nil},
		{"GET", "/login", 4, rep(OK, 3) + " " + TM, []string{"X-Key", "k"}}, // GET is not the login rule's
		{"GET", "/other", 1, "Ba", nil},                                     // no X-Key: a bad key, 400
		{"GET", "/other", 1, OK, []string{"X-Key", "k2"}},
	} {
		if got := codes(h, tt.method, tt.path, tt.n, tt.header...); got != tt.want {
			t.Errorf("%s %s: %s, want %s", tt.method, tt.path, got, tt.want)
		}
	}
	tab := s.Table()
	if c := tab.MatchGRPC("/pkg.S/M"); c == nil || c.Rule.Name != "calls" {
		t.Errorf("MatchGRPC(/pkg.S/M) = %v", c)
	}
	if c := tab.MatchGRPC("/pkg.T/M"); c != nil {
		t.Errorf("MatchGRPC(/pkg.T/M) = %v, want none", c.Rule.Name)
	}
	if c := tab.matchHTTP("GET", "/api"); c == nil || c.Rule.Name != "all" {
		t.Errorf("/api is not under /api/*: got %v", c)
	}
}

func TestUnmatchedPassesUntouched(t *testing.T) {
	s, err := New("r.yaml", []byte("rules:\n  - name: a\n    match: {paths: [/a]}\n    limit: 1/h\n"), quietly)
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	s.Middleware(ok).ServeHTTP(w, httptest.NewRequest("GET", "/b", nil))
	if w.Code != 200 || len(w.Header()) != 0 {
		t.Errorf("unmatched request: %d %v, want 200 and no header", w.Code, w.Header())
	}
}

// TestReloadKeepsState: a rule whose policy is unchanged keeps its limiter
// and so its keys' counts; a changed rule starts fresh; an invalid file
// changes nothing and is reported; shadow mode toggles on the same
// limiter.
func TestReloadKeepsState(t *testing.T) {
	clock := coretest.NewClock(time.Unix(1_700_000_000, 0))
	var reloads []error
	const v1 = `rules:
  - name: a
    match: {paths: [/a]}
    limit: 3/min
  - name: b
    match: {paths: [/b]}
    limit: 2/min
`
	s, err := New("r.yaml", []byte(v1),
		WithCoreOptions(core.WithClock(clock)),
		WithOnReload(func(err error) { reloads = append(reloads, err) }))
	if err != nil {
		t.Fatal(err)
	}
	h := s.Middleware(ok)
	if got := codes(h, "GET", "/a", 4); got != rep(OK, 3)+" "+TM {
		t.Fatalf("/a: %s", got)
	}
	if got := codes(h, "GET", "/b", 2); got != rep(OK, 2) {
		t.Fatalf("/b: %s", got)
	}
	before := s.Table()

	// a unchanged (moved down, matched differently: still its policy), b
	// raised, c new.
	const v2 = `rules:
  - name: c
    match: {paths: [/c]}
    limit: 1/min
  - name: b
    match: {paths: [/b]}
    limit: 5/min
  - name: a
    match: {paths: [/a, /a2]}
    limit: "3/min burst=3"
`
	if err := s.Apply([]byte(v2)); err != nil {
		t.Fatal(err)
	}
	after := s.Table()
	a, b := after.Rules()[2], after.Rules()[1]
	if !a.kept || a.Limiter != before.Rules()[0].Limiter {
		t.Errorf("rule a: kept %v, same limiter %v; want its limiter kept", a.kept, a.Limiter == before.Rules()[0].Limiter)
	}
	if b.kept || after.Rules()[0].kept {
		t.Error("rules b and c kept a limiter; want fresh ones")
	}
	if got := codes(h, "GET", "/a2", 1); got != TM {
		t.Errorf("/a2 after reload: %s, want the kept count to deny", got)
	}
	if got := codes(h, "GET", "/b", 6); got != rep(OK, 5)+" "+TM {
		t.Errorf("/b after reload: %s, want a fresh 5/min", got)
	}

	// An invalid file: the rules in force stay, and it is reported.
	bad := strings.Replace(v2, "5/min", "5/minn", 1)
	err = s.Apply([]byte(bad))
	if err == nil || !strings.HasPrefix(err.Error(), `r.yaml:7: rules[1].limit: core: limit "5/minn": period "minn"`) {
		t.Fatalf("Apply(bad) = %v", err)
	}
	if s.Table() != after {
		t.Error("a bad file replaced the rules")
	}
	if len(reloads) != 2 || reloads[0] != nil || reloads[1] != err {
		t.Errorf("OnReload got %v", reloads)
	}

	// Shadow mode on the same policy: the same counts, not enforced.
	if err := s.Apply([]byte(v2 + "    shadow: true\n")); err != nil {
		t.Fatal(err)
	}
	sa := s.Table().Rules()[2]
	if !sa.Rule.Shadow || !sa.kept || sa.Limiter != a.Limiter {
		t.Errorf("shadow rule a: %T, kept %v", sa.Limiter, sa.kept)
	}
	if got := codes(h, "GET", "/a", 2); got != rep(OK, 2) {
		t.Errorf("/a in shadow: %s, want all through", got)
	}
	if err := s.Apply([]byte(v2)); err != nil {
		t.Fatal(err)
	}
	if got := codes(h, "GET", "/a", 1); got != TM {
		t.Errorf("/a enforced again: %s, want the kept count to deny", got)
	}
	clock.Advance(20 * time.Second) // one token back
	if got := codes(h, "GET", "/a", 2); got != OK+" "+TM {
		t.Errorf("/a 20s later: %s", got)
	}

	// A changed algorithm is a new policy.
	if err := s.Apply([]byte(v2 + "    algorithm: gcra\n")); err != nil {
		t.Fatal(err)
	}
	if s.Table().Rules()[2].kept {
		t.Error("rule a kept its limiter across a change of algorithm")
	}
	if err := s.Reload(); err == nil {
		t.Error("Reload on a Set made by New: no error")
	}
}

func TestStackCostAndShadowHeaders(t *testing.T) {
	clock := coretest.NewClock(time.Unix(1_700_000_000, 0))
	var mu sync.Mutex
	var shadowed int
	obs := core.ObserverFunc(func(_ context.Context, e core.Event) {
		mu.Lock()
		defer mu.Unlock()
		if e.Shadow && e.Outcome == core.OutcomeDenied {
			shadowed++
		}
	})
	s, err := New("r.yaml", []byte(`rules:
  - name: up
    match: {paths: [/up]}
    limits: ["4/s", "6/h name=hourly"]
    cost: {content-length: 1KiB, unknown: 2}
  - name: fixed
    match: {paths: [/f]}
    limit: 5/min
    cost: 2
  - name: sh
    match: {paths: [/s]}
    limit: 1/min
    shadow: true
    shadow-headers: true
`), WithCoreOptions(core.WithClock(clock)), WithHTTPOptions(httpmw.WithObserver(obs)), quietly)
	if err != nil {
		t.Fatal(err)
	}
	h := s.Middleware(ok)
	post := func(path string, size int) (int, http.Header) {
		r := httptest.NewRequest("POST", path, strings.NewReader(strings.Repeat("x", size)))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code, w.Header()
	}
	// 2 KiB + 1 byte costs 3 of the 4 per second.
	if code, hd := post("/up", 2*1024+1); code != 200 || hd.Get("X-RateLimit-Remaining") != "1" {
		t.Errorf("first upload: %d remaining %q", code, hd.Get("X-RateLimit-Remaining"))
	}
	if code, _ := post("/up", 2*1024); code != 429 {
		t.Errorf("second upload: %d, want 429 (2 > 1 left in 4/s)", code)
	}
	clock.Advance(time.Second)
	if code, hd := post("/up", 3*1024); code != 200 || !strings.Contains(hd.Get("RateLimit-Policy"), `"hourly"`) {
		t.Errorf("third upload: %d policy %q", code, hd.Get("RateLimit-Policy"))
	}
	clock.Advance(time.Second)
	if code, hd := post("/up", 1); code != 429 || !strings.Contains(hd.Get("RateLimit"), `"hourly"`) {
		t.Errorf("fourth upload: %d RateLimit %q, want the hourly layer to refuse", code, hd.Get("RateLimit"))
	}
	if got := codes(h, "GET", "/f", 3); got != OK+" "+OK+" "+TM {
		t.Errorf("/f at cost 2 of 5: %s", got)
	}
	w := httptest.NewRecorder()
	for range 2 {
		w = httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/s", nil))
	}
	if w.Code != 200 || w.Header().Get("X-RateLimit-Remaining") != "0" || w.Header().Get("Retry-After") != "" {
		t.Errorf("shadow: %d %v", w.Code, w.Header())
	}
	if shadowed != 1 {
		t.Errorf("observer heard %d shadow denials, want 1", shadowed)
	}
}

func TestAttach(t *testing.T) {
	s, err := New("r.yaml", []byte("rules:\n  - name: a\n    match: {paths: [/a]}\n    limit: 1/s\n"), quietly)
	if err != nil {
		t.Fatal(err)
	}
	get, err := s.Attach(func(t *Table) (any, error) {
		if len(t.Rules()) > 1 {
			return nil, errors.New("refused")
		}
		return t.Rules()[0].Rule.Name, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := get(s.Table()); got != "a" {
		t.Errorf("Attached = %v", got)
	}
	if err := s.Apply([]byte("rules:\n  - name: b\n    match: {paths: [/a]}\n    limit: 1/s\n")); err != nil {
		t.Fatal(err)
	}
	if got := get(s.Table()); got != "b" {
		t.Errorf("Attached after Apply = %v", got)
	}
	err = s.Apply([]byte("rules:\n  - name: c\n    match: {paths: [/a]}\n    limit: 1/s\n  - name: d\n    match: {paths: [/d]}\n    limit: 1/s\n"))
	if err == nil || err.Error() != "refused" || s.Table().Rules()[0].Rule.Name != "b" {
		t.Errorf("Apply with a refusing attachment: %v", err)
	}
}

// TestReloadLogsByDefault: without WithOnReload, reloads are logged to
// slog.Default(), a success with how many rules kept their state, a
// failure at Error with where the file is wrong.
func TestReloadLogsByDefault(t *testing.T) {
	var logs bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
	defer slog.SetDefault(prev)

	const v1 = "rules:\n  - name: a\n    match: {paths: [/a]}\n    limit: 1/s\n"
	s, err := New("r.yaml", []byte(v1))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply([]byte(v1 + "  - name: b\n    match: {paths: [/b]}\n    limit: 1/s\n")); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply([]byte(v1 + "    algorithm: fast\n")); err == nil {
		t.Fatal("a bad file was applied")
	}
	for _, want := range []string{
		`level=INFO msg="rules: reloaded" file=r.yaml rules=2 kept=1`,
		`level=ERROR msg="rules: reload failed; the rules in force stay" file=r.yaml err="r.yaml:5: rules[0].algorithm: unknown algorithm`,
	} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, logs.String())
		}
	}
}

// TestKeyReplacesIP: WithKey("ip", f) replaces the built-in client address
// wherever a rule says ip, alone or joined.
func TestKeyReplacesIP(t *testing.T) {
	byTenant := func(r *http.Request) (string, error) { return r.Header.Get("X-Tenant"), nil }
	s, err := New("r.yaml", []byte(`rules:
  - name: a
    match: {paths: [/a]}
    limit: 1/min
  - name: b
    match: {paths: [/b]}
    limit: 1/min
    key: ip+method
`), WithKey("ip", byTenant), quietly)
	if err != nil {
		t.Fatal(err)
	}
	h := s.Middleware(ok)
	// httptest requests all come from 192.0.2.1: only the replaced key
	// tells the tenants apart.
	for _, path := range []string{"/a", "/b"} {
		if got := codes(h, "GET", path, 2, "X-Tenant", "t1"); got != OK+" "+TM {
			t.Errorf("%s tenant t1: %s", path, got)
		}
		if got := codes(h, "GET", path, 1, "X-Tenant", "t2"); got != OK {
			t.Errorf("%s tenant t2: %s, want its own count", path, got)
		}
	}
}
