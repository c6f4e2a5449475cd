package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core/coretest"
)

// TestDemo runs the demo against a real loopback server on a fake clock,
// so that a slow machine cannot refill the bucket between calls, and
// checks what it prints.
func TestDemo(t *testing.T) {
	clock := coretest.NewClock(time.Unix(1_700_000_000, 0))
	var waited time.Duration
	sleep := func(_ context.Context, d time.Duration) error {
		waited += d
		clock.Advance(d)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, &out, clock, sleep); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	got := out.String()
	if !strings.HasPrefix(got, "server on 127.0.0.1:") {
		t.Fatalf("output:\n%s", got)
	}
	_, got, _ = strings.Cut(got, "\n")
	const want = `call 1: OK  x-ratelimit-remaining: 2  ratelimit: "demo";r=2;t=1
call 2: OK  x-ratelimit-remaining: 1  ratelimit: "demo";r=1;t=1
call 3: OK  x-ratelimit-remaining: 0  ratelimit: "demo";r=0;t=1
call 4: ResourceExhausted  x-ratelimit-remaining: 0  ratelimit: "demo";r=0;t=1
  message       "rate limit exceeded"
  retry-after   1
  trailer       grpc-retry-pushback-ms: 334
  RetryInfo     retry in 333.333333ms
  QuotaFailure  policy "demo": 3 per 1s
  ErrorInfo     RATE_LIMITED in floodgate, map[limit:3 policy:demo remaining:0]
retrying client: SERVING after waiting as told
`
	if got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
	if waited < 333333333*time.Nanosecond || waited > 500*time.Millisecond {
		t.Errorf("retrying client waited %v, want RetryInfo's 333.333333ms plus at most 100ms of jitter", waited)
	}
}
