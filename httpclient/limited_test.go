package httpclient_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/httpclient"
	"github.com/floodgate/floodgate/internal/coretest"
)

// sent is a RoundTripper that records when (on the fake clock) each
// request went out, and answers 200 with a short body.
type sent struct {
	clock *coretest.Clock
	err   error
	mu    sync.Mutex
	at    []time.Duration // since t0
	rw    bool            // answer with a body that is also an io.Writer
}

type rwBody struct {
	io.Reader
	written strings.Builder
}

func (b *rwBody) Write(p []byte) (int, error) { return b.written.Write(p) }
func (b *rwBody) Close() error                { return nil }

func (s *sent) RoundTrip(req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	s.at = append(s.at, s.clock.Time().Sub(t0))
	s.mu.Unlock()
	if s.err != nil {
		return nil, s.err
	}
	var body io.ReadCloser = io.NopCloser(strings.NewReader("ok"))
	if s.rw {
		body = &rwBody{Reader: strings.NewReader("ok")}
	}
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: body, Request: req}, nil
}

func (s *sent) times() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.at)
}

func limited(t *testing.T, next http.RoundTripper, lim core.Limiter, sl *sleeper, opts ...httpclient.Option) *http.Client {
	t.Helper()
	rt, err := httpclient.NewLimitedTransport(next, lim, nil, append([]httpclient.Option{httpclient.WithSleep(sl.sleep)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Transport: rt}
}

func newLimiter(t *testing.T, l core.Limit, clock *coretest.Clock, opts ...core.Option) *core.Keyed {
	t.Helper()
	k, err := core.New(l, append([]core.Option{core.WithClock(clock)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func doGet(c *http.Client, url string) (*http.Response, error) {
	resp, err := c.Get(url)
	if err == nil {
		_, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	return resp, err
}

func TestLimitedWaitsForRefusal(t *testing.T) {
	t.Parallel()
	sl := newSleeper()
	s := &sent{clock: sl.clock}
	c := limited(t, s, newLimiter(t, core.PerMinute(1), sl.clock), sl)
	for range 3 {
		if _, err := doGet(c, "http://api.test/"); err != nil {
			t.Fatal(err)
		}
	}
	if want := []time.Duration{0, time.Minute, 2 * time.Minute}; !slices.Equal(s.times(), want) {
		t.Errorf("sent at %v, want %v", s.times(), want)
	}
	if want := []time.Duration{time.Minute, time.Minute}; !slices.Equal(sl.got(), want) {
		t.Errorf("waits %v, want %v", sl.got(), want)
	}
}

func TestLimitedKeysByHost(t *testing.T) {
	t.Parallel()
	sl := newSleeper()
	s := &sent{clock: sl.clock}
	c := limited(t, s, newLimiter(t, core.PerMinute(1), sl.clock), sl)
	for _, u := range []string{"http://a.test/x", "http://B.test/y", "http://b.test:8080/z"} {
		if _, err := doGet(c, u); err != nil {
			t.Fatal(err)
		}
	}
	if len(sl.got()) != 0 {
		t.Errorf("waits %v; three hosts should each have their own quota", sl.got())
	}
	if _, err := doGet(c, "http://b.test/again"); err != nil || len(sl.got()) != 1 {
		t.Errorf("b.test again: err %v, waits %v; want one wait (B.test and b.test are one host)", err, sl.got())
	}
}

func TestLimitedMaxWait(t *testing.T) {
	t.Parallel()
	sl := newSleeper()
	s := &sent{clock: sl.clock}
	c := limited(t, s, newLimiter(t, core.PerMinute(1), sl.clock), sl, httpclient.WithMaxWait(30*time.Second, 3*time.Minute))
	if _, err := doGet(c, "http://api.test/"); err != nil {
		t.Fatal(err)
	}
	body := &closeTracker{Reader: strings.NewReader("payload")}
	req, _ := http.NewRequest(http.MethodPost, "http://api.test/", body)
	_, err := c.Do(req)
	var le *httpclient.LimitError
	if !errors.Is(err, httpclient.ErrLimited) || !errors.As(err, &le) {
		t.Fatalf("err %v, want a *LimitError wrapping ErrLimited", err)
	}
	if le.Key != "api.test" || le.Decision.Allowed || le.Decision.RetryAfter != time.Minute {
		t.Errorf("LimitError %+v, want key api.test refused for 1m", le)
	}
	if got := len(s.times()); got != 1 || len(sl.got()) != 0 || !body.closed {
		t.Errorf("%d sent, waits %v, body closed %v; want the refused request unsent, unwaited, its body closed", got, sl.got(), body.closed)
	}
}

type closeTracker struct {
	io.Reader
	closed bool
}

func (c *closeTracker) Close() error { c.closed = true; return nil }

// TestLimitedShaping: a leaky bucket admits with a Delay, which the
// transport waits; a Delay beyond the max wait is refunded.
func TestLimitedShaping(t *testing.T) {
	t.Parallel()
	sl := newSleeper()
	s := &sent{clock: sl.clock}
	lim := newLimiter(t, core.PerSecond(1).WithAlgorithm(core.LeakyBucket).WithMaxDelay(10*time.Second), sl.clock)
	// The waits do not move the clock, so the queue builds up. The total
	// bounds retries only: the 1s wait is made although it exceeds it.
	rt, err := httpclient.NewLimitedTransport(s, lim, nil, httpclient.WithMaxWait(1500*time.Millisecond, time.Millisecond),
		httpclient.WithSleep(func(context.Context, time.Duration) error { return nil }))
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: rt}
	var errs []error
	for range 4 {
		_, err := doGet(c, "http://api.test/")
		errs = append(errs, err)
	}
	if errs[0] != nil || errs[1] != nil || !errors.Is(errs[2], httpclient.ErrLimited) || !errors.Is(errs[3], httpclient.ErrLimited) {
		t.Fatalf("errors %v; want two sent (delays 0 and 1s), then two over the 1.5s max wait", errs)
	}
	var le *httpclient.LimitError
	if errors.As(errs[3], &le); le == nil || !le.Decision.Allowed || le.Decision.Delay != 2*time.Second {
		t.Errorf("last LimitError %+v; want a shaped admission of 2s, refunded (not 3s)", le)
	}
	if len(s.times()) != 2 {
		t.Errorf("%d sent, want 2", len(s.times()))
	}
}

func TestLimitedCancelDuringWait(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	s := &sent{clock: clock}
	lim := newLimiter(t, core.PerSecond(1).WithAlgorithm(core.LeakyBucket).WithMaxDelay(10*time.Second), clock)
	cancelled := &sleeper{clock: clock, err: context.Canceled}
	c := limited(t, s, lim, cancelled)
	if _, err := doGet(c, "http://api.test/"); err != nil {
		t.Fatal(err)
	}
	if _, err := doGet(c, "http://api.test/"); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	// The cancelled request's units came back: the next one is shaped
	// by 1s, not 2s.
	d, err := lim.Allow(context.Background(), "api.test", 1)
	if err != nil || !d.Allowed || d.Delay != time.Second {
		t.Errorf("after a cancelled shaped request: %+v, %v; want admitted with a 1s delay", d, err)
	}
	if len(s.times()) != 1 {
		t.Errorf("%d sent, want 1", len(s.times()))
	}
}

// TestLimitedLease: a concurrency slot is held until the response body is
// closed or read to its end, and released when the request fails.
func TestLimitedLease(t *testing.T) {
	t.Parallel()
	sl := newSleeper()
	s := &sent{clock: sl.clock}
	lim := newLimiter(t, (core.Limit{Events: 1, Period: time.Second, Burst: 1}).WithAlgorithm(core.Concurrency), sl.clock)
	c := limited(t, s, lim, sl, httpclient.WithMaxWait(time.Millisecond, 3*time.Minute))
	open, err := c.Get("http://api.test/")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get("http://api.test/"); !errors.Is(err, httpclient.ErrLimited) {
		t.Fatalf("second request while the first is open: %v, want ErrLimited", err)
	}
	open.Body.Close()
	// Read to EOF (without Close) releases too.
	r, err := c.Get("http://api.test/")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(r.Body); string(b) != "ok" {
		t.Fatalf("body %q", b)
	}
	if _, err := doGet(c, "http://api.test/"); err != nil {
		t.Fatalf("after EOF: %v, want the slot free", err)
	}
	// A failed request releases at once.
	s.mu.Lock()
	s.err = errors.New("connection refused")
	s.mu.Unlock()
	if _, err := c.Get("http://api.test/"); err == nil || errors.Is(err, httpclient.ErrLimited) {
		t.Fatalf("failing transport: %v", err)
	}
	if d, err := lim.Allow(context.Background(), "api.test", 1); err != nil || !d.Allowed {
		t.Errorf("after a failed request: %+v, %v; want the slot free", d, err)
	}
}

func TestLimitedKeepsWriter(t *testing.T) {
	t.Parallel()
	sl := newSleeper()
	s := &sent{clock: sl.clock, rw: true}
	lim := newLimiter(t, (core.Limit{Events: 1, Period: time.Second, Burst: 1}).WithAlgorithm(core.Concurrency), sl.clock)
	rt, err := httpclient.NewLimitedTransport(s, lim, nil)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://api.test/", nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	w, ok := resp.Body.(io.ReadWriteCloser)
	if !ok {
		t.Fatalf("body %T lost its Write", resp.Body)
	}
	if _, err := w.Write([]byte("upgrade")); err != nil {
		t.Fatal(err)
	}
	w.Close()
}

func TestLimitedErrors(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	s := &sent{clock: clock}
	rt, err := httpclient.NewLimitedTransport(s, coretest.StoreDown(errors.New("redis down")), nil)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://api.test/", nil)
	if _, err := rt.RoundTrip(req); !errors.Is(err, core.ErrStore) {
		t.Errorf("store down: %v, want core.ErrStore", err)
	}
	bad := errors.New("no tenant")
	rt, err = httpclient.NewLimitedTransport(s, newLimiter(t, core.PerSecond(1), clock), func(*http.Request) (string, error) { return "", bad })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.RoundTrip(req); !errors.Is(err, bad) {
		t.Errorf("key error: %v, want it wrapped", err)
	}
	if len(s.times()) != 0 {
		t.Errorf("%d requests sent, want none", len(s.times()))
	}
}

// shapedLease admits every request with a Delay and a Lease, counting the
// releases and the refunds it gets.
type shapedLease struct {
	delay              time.Duration
	released, refunded int
}

func (l *shapedLease) Allow(context.Context, string, int) (core.Decision, error) {
	return core.Decision{Allowed: true, Delay: l.delay, Lease: core.NewLease(func(context.Context, core.Ending) error {
		l.released++
		return nil
	})}, nil
}

func (l *shapedLease) Refund(context.Context, string, int) error { l.refunded++; return nil }

// TestLimitedGivesBackOnce: a shaped admission carrying a lease (a stack
// with a shaper and a concurrency layer) that waits too long is undone
// once, by its lease, as the adapters undo one: not refunded as well.
func TestLimitedGivesBackOnce(t *testing.T) {
	t.Parallel()
	lim := &shapedLease{delay: 5 * time.Second}
	sl := newSleeper()
	c := limited(t, &sent{clock: sl.clock}, lim, sl, httpclient.WithMaxWait(time.Second, 3*time.Minute))
	if _, err := doGet(c, "http://api.test/"); !errors.Is(err, httpclient.ErrLimited) {
		t.Fatalf("err %v, want ErrLimited", err)
	}
	if lim.released != 1 || lim.refunded != 0 {
		t.Fatalf("released %d, refunded %d; want the lease released once and no refund", lim.released, lim.refunded)
	}
}
