package httpclient_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/httpclient"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/internal/coretest"
)

// sleeper records the waits a transport asks for and moves a fake clock
// by them instead of sleeping.
type sleeper struct {
	clock *coretest.Clock
	err   error
	mu    sync.Mutex
	waits []time.Duration
}

func newSleeper() *sleeper { return &sleeper{clock: coretest.NewClock(t0)} }

func (s *sleeper) sleep(_ context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	s.clock.Advance(d)
	return nil
}

func (s *sleeper) got() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.waits)
}

func half() float64 { return 0.5 }

func constKey(*http.Request) (string, error) { return "k", nil }

// limitedServer serves "ok" behind floodgate's own httpmw with lim, and
// counts the requests that reach the middleware.
func limitedServer(t *testing.T, lim core.Limiter, wrap func(http.Handler) http.Handler, opts ...httpmw.Option) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	mw, err := httpmw.New(lim, constKey, opts...)
	if err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int64
	h := mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func gcra(t *testing.T, l core.Limit, clock *coretest.Clock) *core.Keyed {
	t.Helper()
	k, err := core.New(l.WithAlgorithm(core.GCRA), core.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func retryClient(t *testing.T, next http.RoundTripper, sl *sleeper, opts ...httpclient.Option) *http.Client {
	t.Helper()
	opts = append([]httpclient.Option{httpclient.WithSleep(sl.sleep), httpclient.WithRand(half), httpclient.WithClock(sl.clock)}, opts...)
	rt, err := httpclient.NewRetryTransport(next, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Transport: rt}
}

func get(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestRetryAgainstHTTPMW: the client waits exactly what floodgate's
// server asks for, in each header style, and its retry is admitted.
func TestRetryAgainstHTTPMW(t *testing.T) {
	t.Parallel()
	// stripRetryAfter leaves the RateLimit fields alone to say the wait.
	stripRetryAfter := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(&noRetryAfter{ResponseWriter: w}, r)
		})
	}
	tests := []struct {
		name string
		wrap func(http.Handler) http.Handler
		opts []httpmw.Option
	}{
		{"Retry-After and both styles", nil, nil},
		{"Retry-After only", nil, []httpmw.Option{httpmw.WithHeaders(core.HeadersNone)}},
		{"RateLimit field only", stripRetryAfter, []httpmw.Option{httpmw.WithHeaders(core.HeadersIETF)}},
		{"problem details", nil, []httpmw.Option{httpmw.WithDenyHandler(httpmw.ProblemDetails)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sl := newSleeper()
			srv, hits := limitedServer(t, gcra(t, core.PerMinute(1).WithName("minute"), sl.clock), tt.wrap, tt.opts...)
			c := retryClient(t, nil, sl)
			if code, _ := get(t, c, srv.URL); code != http.StatusOK {
				t.Fatalf("first request: %d", code)
			}
			code, body := get(t, c, srv.URL)
			if code != http.StatusOK || body != "ok" {
				t.Errorf("second request: %d %q, want 200 ok after a retry", code, body)
			}
			if want := []time.Duration{time.Minute + 50*time.Millisecond}; !slices.Equal(sl.got(), want) {
				t.Errorf("waits %v, want %v", sl.got(), want)
			}
			if hits.Load() != 3 {
				t.Errorf("server saw %d requests, want 3", hits.Load())
			}
		})
	}
}

type noRetryAfter struct{ http.ResponseWriter }

func (w *noRetryAfter) WriteHeader(code int) {
	w.Header().Del("Retry-After")
	w.ResponseWriter.WriteHeader(code)
}

func (w *noRetryAfter) Write(b []byte) (int, error) {
	w.Header().Del("Retry-After")
	return w.ResponseWriter.Write(b)
}

// TestRetryStackPolicies: against a stack of limits, the client waits for
// the policy that refused (the hourly one here, not the burst).
func TestRetryStackPolicies(t *testing.T) {
	t.Parallel()
	sl := newSleeper()
	stack, err := core.NewStack([]core.Limit{
		core.PerSecond(5).WithName("burst"),
		core.PerHour(2).WithName("hourly"),
	}, core.WithClock(sl.clock))
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := limitedServer(t, stack, nil)
	c := retryClient(t, nil, sl, httpclient.WithMaxWait(time.Hour, time.Hour))
	for range 2 {
		if code, _ := get(t, c, srv.URL); code != http.StatusOK {
			t.Fatalf("request within quota: %d", code)
		}
	}
	if code, _ := get(t, c, srv.URL); code != http.StatusOK {
		t.Errorf("third request: %d, want 200 after waiting for the hourly policy", code)
	}
	w := sl.got()
	if len(w) != 1 || w[0] < 30*time.Minute || w[0] > 30*time.Minute+time.Second {
		t.Errorf("waits %v, want one of 30m (the hourly policy's next unit) plus jitter", w)
	}
}

// step is one scripted response.
type step struct {
	status int
	header http.Header
}

// script is a RoundTripper answering with steps in order, recording each
// request's body and the responses' bodies.
type script struct {
	steps  []step
	mu     sync.Mutex
	bodies []string
	resps  []*trackedBody
}

type trackedBody struct {
	io.Reader
	closed atomic.Bool
	eof    atomic.Bool
}

func (b *trackedBody) Read(p []byte) (int, error) {
	n, err := b.Reader.Read(p)
	if err == io.EOF {
		b.eof.Store(true)
	}
	return n, err
}
func (b *trackedBody) Close() error { b.closed.Store(true); return nil }

func (s *script) RoundTrip(req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		_ = req.Body.Close()
	}
	s.bodies = append(s.bodies, string(body))
	st := s.steps[min(len(s.bodies)-1, len(s.steps)-1)]
	b := &trackedBody{Reader: strings.NewReader(strings.Repeat("x", 100))}
	s.resps = append(s.resps, b)
	h := st.header.Clone()
	if h == nil {
		h = http.Header{}
	}
	return &http.Response{StatusCode: st.status, Header: h, Body: b, Request: req}, nil
}

func TestRetryTransport(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	ra := func(v string) http.Header { return http.Header{"Retry-After": {v}} }
	post := func(body string) *http.Request {
		r, _ := http.NewRequest(http.MethodPost, "http://api.test/", strings.NewReader(body))
		return r
	}
	tests := []struct {
		name      string
		req       func() *http.Request
		steps     []step
		opts      []httpclient.Option
		wantCode  int
		wantWaits []time.Duration
		wantTries int
	}{
		{name: "retry-after seconds", steps: []step{{429, ra("2")}, {200, nil}},
			wantCode: 200, wantWaits: []time.Duration{2*time.Second + 50*ms}, wantTries: 2},
		{name: "retry-after http-date on 503", steps: []step{{503, ra(t0.Add(30 * time.Second).UTC().Format(http.TimeFormat))}, {200, nil}},
			wantCode: 200, wantWaits: []time.Duration{30*time.Second + 50*ms}, wantTries: 2},
		{name: "RateLimit r=0", steps: []step{{429, http.Header{"Ratelimit": {`"burst";r=0;t=4`}}}, {200, nil}},
			wantCode: 200, wantWaits: []time.Duration{4*time.Second + 50*ms}, wantTries: 2},
		{name: "no header: backoff with full jitter", steps: []step{{429, nil}},
			wantCode: 429, wantWaits: []time.Duration{50 * ms, 100 * ms}, wantTries: 3},
		{name: "backoff capped", steps: []step{{503, nil}},
			opts:     []httpclient.Option{httpclient.WithMaxAttempts(5), httpclient.WithBackoff(100*ms, 300*ms)},
			wantCode: 503, wantWaits: []time.Duration{50 * ms, 100 * ms, 150 * ms, 150 * ms}, wantTries: 5},
		{name: "delay over max wait returned at once", steps: []step{{429, ra("120")}, {200, nil}},
			wantCode: 429, wantTries: 1},
		{name: "max wait raised", steps: []step{{429, ra("120")}, {200, nil}}, opts: []httpclient.Option{httpclient.WithMaxWait(2*time.Minute, 3*time.Minute)},
			wantCode: 200, wantWaits: []time.Duration{2*time.Minute + 50*ms}, wantTries: 2},
		{name: "one attempt", steps: []step{{429, ra("1")}}, opts: []httpclient.Option{httpclient.WithMaxAttempts(1)},
			wantCode: 429, wantTries: 1},
		{name: "500 not retried", steps: []step{{500, ra("1")}, {200, nil}}, wantCode: 500, wantTries: 1},
		{name: "status codes option", steps: []step{{500, ra("1")}, {200, nil}}, opts: []httpclient.Option{httpclient.WithStatusCodes(500)},
			wantCode: 200, wantWaits: []time.Duration{time.Second + 50*ms}, wantTries: 2},
		{name: "POST not retried", req: func() *http.Request { return post("hello") }, steps: []step{{429, ra("1")}, {200, nil}},
			wantCode: 429, wantTries: 1},
		{name: "POST with Idempotency-Key retried", req: func() *http.Request {
			r := post("hello")
			r.Header.Set("Idempotency-Key", "abc")
			return r
		}, steps: []step{{429, ra("1")}, {200, nil}}, wantCode: 200, wantWaits: []time.Duration{time.Second + 50*ms}, wantTries: 2},
		{name: "retryable option", req: func() *http.Request { return post("hello") }, steps: []step{{429, ra("1")}, {200, nil}},
			opts:     []httpclient.Option{httpclient.WithRetryable(func(*http.Request) bool { return true })},
			wantCode: 200, wantWaits: []time.Duration{time.Second + 50*ms}, wantTries: 2},
		{name: "PUT body without GetBody not retried", req: func() *http.Request {
			r, _ := http.NewRequest(http.MethodPut, "http://api.test/", io.NopCloser(strings.NewReader("hello")))
			return r
		}, steps: []step{{429, ra("1")}, {200, nil}}, wantCode: 429, wantTries: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sl := newSleeper()
			s := &script{steps: tt.steps}
			c := retryClient(t, s, sl, tt.opts...)
			req, _ := http.NewRequest(http.MethodGet, "http://api.test/", nil)
			if tt.req != nil {
				req = tt.req()
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.wantCode {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.wantCode)
			}
			if got := sl.got(); !slices.Equal(got, tt.wantWaits) {
				t.Errorf("waits %v, want %v", got, tt.wantWaits)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if len(s.bodies) != tt.wantTries {
				t.Fatalf("%d tries, want %d", len(s.bodies), tt.wantTries)
			}
			for i, b := range s.bodies {
				if b != s.bodies[0] {
					t.Errorf("try %d sent body %q, want the first's %q", i+1, b, s.bodies[0])
				}
			}
			// Discarded responses are drained and closed; the last is the
			// caller's, untouched.
			for i, b := range s.resps[:len(s.resps)-1] {
				if !b.eof.Load() || !b.closed.Load() {
					t.Errorf("discarded response %d: drained %v, closed %v", i+1, b.eof.Load(), b.closed.Load())
				}
			}
			last := s.resps[len(s.resps)-1]
			if last.eof.Load() || last.closed.Load() {
				t.Errorf("returned response was read or closed by the transport")
			}
			if b, _ := io.ReadAll(resp.Body); len(b) != 100 {
				t.Errorf("returned body has %d bytes, want 100", len(b))
			}
			resp.Body.Close()
		})
	}
}

func TestRetryDeadline(t *testing.T) {
	t.Parallel()
	sl := newSleeper()
	s := &script{steps: []step{{429, http.Header{"Retry-After": {"60"}}}, {200, nil}}}
	c := retryClient(t, s, sl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 || len(sl.got()) != 0 {
		t.Errorf("status %d after waits %v; want the 429 at once: its delay reaches the deadline", resp.StatusCode, sl.got())
	}
}

// TestRetryCancelEndsWait uses the default timer: a cancelled context ends
// a minute's wait at once.
func TestRetryCancelEndsWait(t *testing.T) {
	t.Parallel()
	s := &script{steps: []step{{429, http.Header{"Retry-After": {"60"}}}, {200, nil}}}
	rt, err := httpclient.NewRetryTransport(s)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/", nil)
	timer := time.AfterFunc(20*time.Millisecond, cancel)
	defer timer.Stop()
	start := time.Now()
	resp, err := rt.RoundTrip(req)
	if !errors.Is(err, context.Canceled) || resp != nil {
		t.Errorf("RoundTrip = %v, %v; want context.Canceled", resp, err)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("took %v; the wait should end when the context does", el)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.bodies) != 1 || !s.resps[0].closed.Load() {
		t.Errorf("%d tries, first response closed %v; want 1 try, closed", len(s.bodies), s.resps[0].closed.Load())
	}
}

func TestRetryReplaysBody(t *testing.T) {
	t.Parallel()
	sl := newSleeper()
	s := &script{steps: []step{{503, nil}, {503, nil}, {200, nil}}}
	c := retryClient(t, s, sl)
	req, _ := http.NewRequest(http.MethodPut, "http://api.test/", bytes.NewReader([]byte("payload")))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Equal(s.bodies, []string{"payload", "payload", "payload"}) || resp.StatusCode != 200 {
		t.Errorf("bodies %q, status %d", s.bodies, resp.StatusCode)
	}
}

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	lim := gcra(t, core.PerSecond(1), coretest.NewClock(t0))
	tests := []struct {
		name    string
		build   func() error
		wantErr string
	}{
		{"retry: max attempts", func() error { _, err := httpclient.NewRetryTransport(nil, httpclient.WithMaxAttempts(0)); return err },
			"httpclient: WithMaxAttempts(0): want at least 1"},
		{"retry: backoff", func() error {
			_, err := httpclient.NewRetryTransport(nil, httpclient.WithBackoff(time.Second, time.Millisecond))
			return err
		}, "httpclient: WithBackoff(1s, 1ms): want 0 <= base <= max"},
		{"retry: no status", func() error { _, err := httpclient.NewRetryTransport(nil, httpclient.WithStatusCodes()); return err },
			"httpclient: WithStatusCodes(): want at least one status"},
		{"retry: bad status", func() error {
			_, err := httpclient.NewRetryTransport(nil, httpclient.WithStatusCodes(429, 42))
			return err
		},
			"httpclient: WithStatusCodes(42): want a status from 100 to 599"},
		{"retry: nil clock", func() error { _, err := httpclient.NewRetryTransport(nil, httpclient.WithClock(nil)); return err },
			"httpclient: WithClock(nil)"},
		{"retry: nil option", func() error { _, err := httpclient.NewRetryTransport(nil, nil); return err },
			"httpclient: nil Option (argument 1)"},
		{"limited: nil limiter", func() error { _, err := httpclient.NewLimitedTransport(nil, nil, nil); return err },
			"httpclient: nil core.Limiter"},
		{"limited: retry option", func() error {
			_, err := httpclient.NewLimitedTransport(nil, lim, nil, httpclient.WithMaxAttempts(2))
			return err
		}, "httpclient: WithMaxAttempts does not apply to NewLimitedTransport, which takes only WithMaxWait, WithSleep"},
		{"limited: max wait", func() error {
			_, err := httpclient.NewLimitedTransport(nil, lim, nil, httpclient.WithMaxWait(-1, 3*time.Minute))
			return err
		}, "httpclient: WithMaxWait(-1ns, 3m0s): want each > 0 (the default is 1m0s)"},
		{"limited: zero total", func() error {
			_, err := httpclient.NewLimitedTransport(nil, lim, nil, httpclient.WithMaxWait(time.Second, 0))
			return err
		}, "httpclient: WithMaxWait(1s, 0s): want total > 0 (the default is 3m0s)"},
		{"retry: zero max wait", func() error {
			_, err := httpclient.NewRetryTransport(nil, httpclient.WithMaxWait(0, 3*time.Minute))
			return err
		}, "httpclient: WithMaxWait(0s, 3m0s): want each > 0 (the default is 1m0s)"},
		{"retry: zero total", func() error {
			_, err := httpclient.NewRetryTransport(nil, httpclient.WithMaxWait(time.Minute, 0))
			return err
		}, "httpclient: WithMaxWait(1m0s, 0s): want total > 0 (the default is 3m0s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.build()
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestRetryTotalWait: the waits of one request's retries stop at
// WithMaxWait's total: a retry that would take them past it is not made, and
// the caller gets the refusal; the jitter is cut to what is left.
func TestRetryTotalWait(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		total time.Duration
		code  int
		waits []time.Duration
	}{
		{90 * time.Second, http.StatusOK, []time.Duration{time.Minute + 50*time.Millisecond}},
		{time.Minute + 10*time.Millisecond, http.StatusOK, []time.Duration{time.Minute + 5*time.Millisecond}}, // half of the 10 ms left
		{59 * time.Second, http.StatusTooManyRequests, nil},
	} {
		sl := newSleeper()
		srv, _ := limitedServer(t, core.MustNew(core.PerMinute(1), core.WithClock(sl.clock)), nil)
		c := retryClient(t, nil, sl, httpclient.WithMaxAttempts(5), httpclient.WithMaxWait(time.Minute, tc.total))
		if code, _ := get(t, c, srv.URL); code != http.StatusOK {
			t.Fatalf("first request: %d", code)
		}
		// Refused for a minute.
		if code, _ := get(t, c, srv.URL); code != tc.code || !slices.Equal(sl.got(), tc.waits) {
			t.Errorf("total %v: %d after waits %v, want %d after %v", tc.total, code, sl.got(), tc.code, tc.waits)
		}
	}
}
