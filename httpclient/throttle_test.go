package httpclient_test

import (
	"context"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/httpclient"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/overload"
)

// sheddingServer answers 200, or status (with Retry-After: 3) while shed
// holds one, and counts the requests it receives.
func sheddingServer(t *testing.T) (srv *httptest.Server, shed, got *atomic.Int64) {
	t.Helper()
	shed, got = new(atomic.Int64), new(atomic.Int64)
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		got.Add(1)
		if code := shed.Load(); code != 0 {
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(int(code))
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return srv, shed, got
}

// Rands for a Throttle: rejecting whenever the probability is above 0,
// and never.
func zero() float64    { return 0 }
func nearOne() float64 { return math.Nextafter(1, 0) }

// throttled makes a Throttle on a fake clock drawing from rnd, and a
// client that asks it, with opts.
func throttled(t *testing.T, rnd func() float64, opts ...httpclient.Option) (*http.Client, *overload.Throttle, *coretest.Clock) {
	t.Helper()
	clock := coretest.NewClock(t0)
	th, err := overload.NewThrottle(overload.ThrottleConfig{Clock: clock, Rand: rnd})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := httpclient.NewRetryTransport(nil, append([]httpclient.Option{httpclient.WithThrottle(th)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Transport: rt}, th, clock
}

func getStatus(ctx context.Context, c *http.Client, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// A backend that sheds makes the client reject requests locally, unsent,
// with an error that says so and when the backend asked to be called
// again; once it recovers and the refusals leave the window, requests go
// through again.
func TestThrottleTransport(t *testing.T) {
	t.Parallel()
	srv, shed, got := sheddingServer(t)
	client, _, clock := throttled(t, zero, httpclient.WithMaxAttempts(1))
	ctx := context.Background()
	want := func(code int, err error, wantCode int, wantGot int64) {
		t.Helper()
		if err != nil || code != wantCode || got.Load() != wantGot {
			t.Fatalf("got %d, %v, the server saw %d; want %d and %d", code, err, got.Load(), wantCode, wantGot)
		}
	}
	for i := range 4 {
		code, err := getStatus(ctx, client, srv.URL)
		want(code, err, 200, int64(i+1))
	}
	shed.Store(http.StatusServiceUnavailable)
	// 4 accepts outweigh up to 4 refusals (K 2); the fifth tips it.
	for i := range 5 {
		code, err := getStatus(ctx, client, srv.URL)
		want(code, err, 503, int64(4+i+1))
	}
	clock.Advance(time.Second)
	_, err := getStatus(ctx, client, srv.URL)
	var te *overload.ThrottledError
	if !errors.Is(err, overload.ErrThrottled) || !errors.As(err, &te) {
		t.Fatalf("9 requests, 5 refused: got %v, want a local rejection", err)
	}
	if te.Probability != 1.0/10 || te.RetryAfter != 2*time.Second || got.Load() != 9 {
		t.Fatalf("rejection %+v, the server saw %d; want probability 1/10, RetryAfter 2s, 9", te, got.Load())
	}
	shed.Store(0)
	clock.Advance(10 * time.Second) // the refusals leave the window
	code, err := getStatus(ctx, client, srv.URL)
	want(code, err, 200, 10)
}

// Which endings count as refusals: each case is one request to a fresh
// throttle, whose probability is then 1/2 for a refusal (1 sent, none
// accepted), 0 for an accept or for an ending that is not counted (a
// second request after one refusal keeps it at 1/2 then).
func TestThrottleTransportEndings(t *testing.T) {
	t.Parallel()
	srv, shed, _ := sheddingServer(t)
	for _, code := range []int{200, 404, 500, 502, 429, 503, 504} {
		client, th, _ := throttled(t, zero, httpclient.WithMaxAttempts(1))
		shed.Store(int64(code))
		if code == 200 {
			shed.Store(0)
		}
		if _, err := getStatus(context.Background(), client, srv.URL); err != nil {
			t.Fatal(err)
		}
		want := 0.0
		if code == 429 || code == 503 || code == 504 {
			want = 0.5
		}
		if got := th.Probability(); got != want {
			t.Errorf("after a %d: probability %v, want %v", code, got, want)
		}
	}
	shed.Store(0)

	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	client, th, _ := throttled(t, zero, httpclient.WithMaxAttempts(1))
	if _, err := getStatus(context.Background(), client, closed.URL); err == nil || th.Probability() != 0.5 {
		t.Errorf("a server that is gone: %v, probability %v; want an error and 1/2", err, th.Probability())
	}
	expired, cancelExpired := context.WithDeadline(context.Background(), t0)
	defer cancelExpired()
	client, th, _ = throttled(t, zero, httpclient.WithMaxAttempts(1))
	if _, err := getStatus(expired, client, srv.URL); !errors.Is(err, context.DeadlineExceeded) || th.Probability() != 0.5 {
		t.Errorf("a request past its deadline: %v, probability %v; want DeadlineExceeded and 1/2", err, th.Probability())
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	client, th, _ = throttled(t, nearOne, httpclient.WithMaxAttempts(1))
	shed.Store(503)
	if _, err := getStatus(context.Background(), client, srv.URL); err != nil {
		t.Fatal(err)
	}
	if _, err := getStatus(cancelled, client, srv.URL); !errors.Is(err, context.Canceled) || th.Probability() != 0.5 {
		t.Errorf("a cancelled request after a refusal: %v, probability %v; want Canceled and 1/2 (not counted)", err, th.Probability())
	}
}

// Each retry asks the throttle: a shedding backend gets the first attempt,
// and the retry is rejected locally (1 sent, 1 refused: probability 1/2)
// rather than sent.
func TestThrottleTransportRetries(t *testing.T) {
	t.Parallel()
	srv, shed, got := sheddingServer(t)
	shed.Store(http.StatusServiceUnavailable)
	sl := newSleeper()
	client, _, _ := throttled(t, zero, httpclient.WithSleep(sl.sleep), httpclient.WithRand(half))
	if _, err := getStatus(context.Background(), client, srv.URL); !errors.Is(err, overload.ErrThrottled) || got.Load() != 1 {
		t.Fatalf("got %v, the server saw %d; want a local rejection of the retry, 1", err, got.Load())
	}
	if w := sl.got(); len(w) != 1 {
		t.Fatalf("waits %v, want one before the retry", w)
	}
}

func TestWithThrottleOptions(t *testing.T) {
	t.Parallel()
	if _, err := httpclient.NewRetryTransport(nil, httpclient.WithThrottle(nil)); err == nil || !strings.Contains(err.Error(), "WithThrottle(nil)") {
		t.Errorf("WithThrottle(nil): %v", err)
	}
	th, _ := overload.NewThrottle(overload.ThrottleConfig{})
	_, err := httpclient.NewLimitedTransport(nil, newLimiter(t, core.PerSecond(1), coretest.NewClock(t0)), nil, httpclient.WithThrottle(th))
	if err == nil || !strings.Contains(err.Error(), "WithThrottle does not apply to NewLimitedTransport") {
		t.Errorf("NewLimitedTransport with WithThrottle: %v", err)
	}
}

// The recovery goal through a real server: a client trying 50
// requests a second (on the throttle's fake clock) to a backend that sheds
// everything for 30s is back to at least 90 % of its throughput (a
// rejection probability of at most 0.1, from then on) within one window
// of the backend's recovery.
func TestThrottleTransportRecovery(t *testing.T) {
	t.Parallel()
	srv, shed, got := sheddingServer(t)
	src := rand.New(rand.NewPCG(7, 33))
	client, th, clock := throttled(t, src.Float64, httpclient.WithMaxAttempts(1))
	coretest.Outage{
		Clock: clock, Start: t0, Window: 10 * time.Second, // the default
		Probability: th.Probability,
		Shed: func(on bool) {
			if on {
				shed.Store(http.StatusServiceUnavailable)
			} else {
				shed.Store(0)
			}
		},
		Served: got.Load,
		Call: func() error {
			if _, err := getStatus(context.Background(), client, srv.URL); err != nil && !errors.Is(err, overload.ErrThrottled) {
				return err
			}
			return nil
		},
	}.Run(t)
}
