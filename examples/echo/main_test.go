package main

import (
	"bytes"
	"context"
	"regexp"
	"testing"

	"github.com/floodgate/floodgate/examples/internal/outputtest"
)

// TestRun runs the demo against its real loopback server and checks what
// each call got. The numbers come from the system clock, so the test
// allows the few milliseconds that pass between calls.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out, "127.0.0.1:0", false); err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`^Echo behind floodgate at http://127\.0\.0\.1:\d+

GET /hello: 200 OK, RateLimit "api";r=9;t=1, body "hello\\n"
POST /login: 200 OK, RateLimit "login";r=2;t=20, body "welcome\\n"
POST /login: 200 OK, RateLimit "login";r=1;t=40, body "welcome\\n"
POST /login: 200 OK, RateLimit "login";r=0;t=60, body "welcome\\n"
POST /login: 429 Too Many Requests, RateLimit "login";r=0;t=(1\d|20), body "{\\"message\\":\\"Too Many Requests\\"}\\n"

The refusal's headers:
  Retry-After: (1\d|20)
  X-RateLimit-Limit: 3
  X-RateLimit-Remaining: 0
  X-RateLimit-Reset: 60
  RateLimit-Policy: "login";q=3;w=60
  RateLimit: "login";r=0;t=(1\d|20)
$`)
	if !want.Match(out.Bytes()) {
		t.Errorf("output:\n%s", out.String())
	}
}

// TestServe: with keepServing, the server the reader is told to curl has
// spent nothing on the demo, and it stops when its context ends.
func TestServe(t *testing.T) { outputtest.CheckFreshLogin(t, run) }
