package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"testing"
	"time"
)

// TestRun runs the demo against its real loopback server and checks what
// each call got. The numbers come from the system clock, so the test
// allows the few milliseconds that pass between calls.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out, "127.0.0.1:0", false); err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`^Gin behind floodgate at http://127\.0\.0\.1:\d+

GET /hello  -> 200 OK                RateLimit: "api";r=9;t=1
POST /login -> 200 OK                RateLimit: "login";r=2;t=20
POST /login -> 200 OK                RateLimit: "login";r=1;t=40
POST /login -> 200 OK                RateLimit: "login";r=0;t=60
POST /login -> 429 Too Many Requests RateLimit: "login";r=0;t=(1\d|20)
    Retry-After: (1\d|20)
    X-RateLimit-Limit: 3
    X-RateLimit-Remaining: 0
    X-RateLimit-Reset: 60
    RateLimit-Policy: "login";q=3;w=60
    RateLimit: "login";r=0;t=(1\d|20)
    body: "Too Many Requests\\n"
$`)
	if !want.Match(out.Bytes()) {
		t.Errorf("output:\n%s", out.String())
	}
}

// TestServeShutdown: on the stop signal serve lets a request in flight
// finish and returns nil; a request still running after the grace period
// is cut off, and serve says so.
func TestServeShutdown(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		grace   time.Duration
		finish  bool // the handler finishes once shutdown has begun
		wantErr bool
	}{
		{"request in flight finishes", 10 * time.Second, true, false},
		{"request past the grace period is cut off", 50 * time.Millisecond, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			entered, release, shutdown := make(chan struct{}), make(chan struct{}), make(chan struct{})
			defer close(release)
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				close(entered)
				select {
				case <-release:
				case <-r.Context().Done():
				}
				fmt.Fprint(w, "done")
			})}
			srv.RegisterOnShutdown(func() { close(shutdown) })
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			served := make(chan error, 1)
			go func() { served <- serve(ctx, srv, ln, tc.grace) }()

			type result struct {
				body string
				err  error
			}
			got := make(chan result, 1)
			go func() {
				resp, err := (&http.Client{Timeout: 20 * time.Second}).Get("http://" + ln.Addr().String() + "/")
				if err != nil {
					got <- result{err: err}
					return
				}
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				got <- result{string(b), err}
			}()
			within(t, entered, "the request to reach the handler")
			cancel()
			within(t, shutdown, "shutdown to begin")
			if tc.finish {
				release <- struct{}{}
			}
			if err := within(t, served, "serve to return"); (err != nil) != tc.wantErr {
				t.Errorf("serve = %v, want error: %v", err, tc.wantErr)
			}
			r := within(t, got, "the request to end")
			if tc.finish && (r.err != nil || r.body != "done") {
				t.Errorf("request in flight got %q, %v; want it to finish", r.body, r.err)
			}
			if !tc.finish && r.err == nil {
				t.Errorf("request past the grace period got %q; want it cut off", r.body)
			}
		})
	}
}

// within receives from ch, failing the test if that takes more than 10s.
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("waited 10s for %s", what)
		panic("unreachable")
	}
}
