package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/coretest"
)

// TestRun runs the demo against the real loopback servers and checks what
// it printed: the addresses, a drawn token, the refusals, the metrics of
// Prometheus and of OpenTelemetry, the debug page refusing and then
// serving, and the shutdown; and that the refusals were logged.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	var logs coretest.Buffer
	err := run(context.Background(), config{
		api: "127.0.0.1:0", admin: "127.0.0.1:0", out: &out,
		log: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`^API at http://127\.0\.0\.1:\d+/api/hello \(10 requests a minute per client IP\)
metrics at http://127\.0\.0\.1:(\d+)/metrics
OpenTelemetry metrics at http://127\.0\.0\.1:(\d+)/otel-metrics
debug page at http://127\.0\.0\.1:(\d+)/debug/floodgate/
debug page token: [0-9a-f]{32} \(drawn at random; set FLOODGATE_DEBUG_TOKEN to choose one\)

15 requests to /api/hello: 10 answered 200, 5 answered 429

GET /metrics \(the request counters\):
  floodgate_requests_total\{limit="api",outcome="allowed",shadow="false",transport="http"\} 10
  floodgate_requests_total\{limit="api",outcome="denied",shadow="false",transport="http"\} 5

GET /otel-metrics \(the same counters, from OpenTelemetry\):
  floodgate\.requests\{limit=api,outcome=allowed,shadow=false,transport=http\} 10
  floodgate\.requests\{limit=api,outcome=denied,shadow=false,transport=http\} 5

GET /debug/floodgate/ without the token: 401
GET /debug/floodgate/ with the token: 200, 10 allowed and 5 denied so far
stopped
$`)
	if !want.Match(out.Bytes()) {
		t.Errorf("output:\n%s", out.String())
	}
	if n := strings.Count(logs.String(), `msg="rate limit: refused" outcome=denied transport=http limit=api key=h:`); n != 5 {
		t.Errorf("%d refusals logged with a hashed key, want 5:\n%s", n, logs.String())
	}
	if strings.Contains(logs.String(), "127.0.0.1") {
		t.Error("the log shows the client's address")
	}
}

// TestServe keeps the servers running as an operator would, with the
// token from the environment, and checks the admin port from outside: the
// metrics scrape, the OpenTelemetry metrics, the debug page refuses a missing or wrong token and
// serves the right one as a bearer token and as a browser's password; the
// token is never printed; stopped, the servers say so.
func TestServe(t *testing.T) {
	const token = "correct-horse-battery-staple"
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	type addrs struct{ api, admin string }
	ready := make(chan addrs, 1)
	var out coretest.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, config{
			api: "127.0.0.1:0", admin: "127.0.0.1:0", token: token, serve: true, out: &out,
			log:   slog.New(slog.NewTextHandler(io.Discard, nil)),
			ready: func(api, admin, _ string) { ready <- addrs{api, admin} },
		})
	}()
	var a addrs
	select {
	case a = <-ready:
	case err := <-done:
		t.Fatal(err)
	case <-time.After(10 * time.Second):
		t.Fatal("the servers did not start within 10s")
	}
	client := &http.Client{Timeout: 5 * time.Second}
	get := func(url string, auth func(*http.Request)) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if auth != nil {
			auth(req)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(body)
	}
	bearer := func(tok string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
	}
	// Wait for the demo, then add traffic of our own.
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for end := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("no %s within 10s; output:\n%s", what, out.String())
			}
		}
	}
	waitFor("demo", func() bool { return strings.Contains(out.String(), "serving until Ctrl-C or SIGTERM") })
	if resp, _ := get(a.api+"/api/hello", nil); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a 16th request: %d, want 429", resp.StatusCode)
	}

	resp, metrics := get(a.admin+"/metrics", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(metrics, `floodgate_requests_total{limit="api",outcome="denied",shadow="false",transport="http"} 6`) {
		t.Errorf("metrics: %d\n%s", resp.StatusCode, metrics)
	}

	resp, otelMetrics := get(a.admin+"/otel-metrics", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(otelMetrics, "floodgate.requests{limit=api,outcome=denied,shadow=false,transport=http} 6\n") {
		t.Errorf("OpenTelemetry metrics: %d\n%s", resp.StatusCode, otelMetrics)
	}

	page := a.admin + "/debug/floodgate/"
	for name, auth := range map[string]func(*http.Request){
		"no token":        nil,
		"wrong token":     bearer("correct-horse-battery-stapler"),
		"empty token":     bearer(""),
		"wrong password":  func(r *http.Request) { r.SetBasicAuth("ops", "guess") },
		"token as a user": func(r *http.Request) { r.SetBasicAuth(token, "") },
	} {
		resp, body := get(page+"?format=json", auth)
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" || strings.Contains(body, "totals") {
			t.Errorf("%s: %d %q %q, want 401 and a challenge", name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
		}
	}
	for name, auth := range map[string]func(*http.Request){
		"bearer":   bearer(token),
		"password": func(r *http.Request) { r.SetBasicAuth("ops", token) },
	} {
		resp, body := get(page+"?format=json", auth)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"denied":6`) {
			t.Errorf("%s, JSON: %d %s", name, resp.StatusCode, body)
		}
		resp, body = get(page, auth)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, "floodgate: live limiter view") {
			t.Errorf("%s, page: %d", name, resp.StatusCode)
		}
	}

	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the servers did not stop within 10s")
	}
	if !strings.HasSuffix(out.String(), "\nstopped\n") || !strings.Contains(out.String(), "debug page token: from FLOODGATE_DEBUG_TOKEN\n") || strings.Contains(out.String(), token) {
		t.Errorf("output:\n%s", out.String())
	}
}

// TestShortToken: a token from the environment must be long enough to
// resist guessing; the server does not start with a short one.
func TestShortToken(t *testing.T) {
	err := run(context.Background(), config{api: "127.0.0.1:0", admin: "127.0.0.1:0", token: "secret", out: io.Discard,
		log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err == nil || !strings.Contains(err.Error(), "FLOODGATE_DEBUG_TOKEN is 6 characters long; give at least 16") {
		t.Errorf("run with a short token: %v", err)
	}
}
