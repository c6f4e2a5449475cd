package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/coretest"
)

// TestDemo runs the demo against a real loopback server, on a fake clock so
// that a slow machine cannot refill the bucket mid-burst, and checks the
// table: five 200s, three 429s with Retry-After 1, then a 200 once the
// (fake) wait is over.
func TestDemo(t *testing.T) {
	clock := coretest.NewClock(time.Unix(1_700_000_000, 0))
	var waited time.Duration
	var out bytes.Buffer
	err := run(context.Background(), &out, config{
		addr:  "127.0.0.1:0",
		clock: clock,
		sleep: func(d time.Duration) error { waited += d; clock.Advance(d); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if waited != time.Second {
		t.Errorf("waited %v, want the 1s Retry-After", waited)
	}
	lines := strings.Split(out.String(), "\n")
	if len(lines) < 4 || !strings.HasPrefix(lines[1], "server at http://127.0.0.1:") {
		t.Fatalf("output:\n%s", out.String())
	}
	const want = `  #  status                  X-RateLimit-Remaining  Retry-After  RateLimit
  1  200 OK                  4                      -            "demo";r=4;t=1
  2  200 OK                  3                      -            "demo";r=3;t=1
  3  200 OK                  2                      -            "demo";r=2;t=1
  4  200 OK                  1                      -            "demo";r=1;t=1
  5  200 OK                  0                      -            "demo";r=0;t=1
  6  429 Too Many Requests   0                      1            "demo";r=0;t=1
  7  429 Too Many Requests   0                      1            "demo";r=0;t=1
  8  429 Too Many Requests   0                      1            "demo";r=0;t=1
     ... waiting 1s, as Retry-After said ...
  9  200 OK                  4                      -            "demo";r=4;t=1
`
	if got := strings.Join(lines[3:], "\n"); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
}
