package redisstore_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/keyfunc"
)

// The fault tests run HTTP load through httpmw over a real redis-server,
// kill the server with SIGKILL mid-load and restart it on the same port,
// empty (no persistence). They decide on the server's clock, so the limit
// refills one token every 3 minutes: no refill blurs the counts of a test
// that lasts seconds.
var faultLimit = core.PerHour(20)

const (
	// faultTimeout bounds one round trip (redisstore.WithTimeout): the
	// default, no tighter, so that a round trip to a live server on a busy
	// machine (under -race) is not taken for a failure.
	faultTimeout = 100 * time.Millisecond
	// faultMaxLatency bounds any request while Redis is down. A request
	// then costs at most faultTimeout (a context deadline, which the
	// client honours with ContextTimeoutEnabled; nothing at all while
	// redisstore's breaker is open), plus the middleware and
	// an HTTP round trip on loopback; 1 s is twenty times that, room for
	// -race on a loaded machine, and still well below what waiting on the
	// dead server would cost (go-redis' defaults: 5 s to dial, 3 s to
	// read, 3 retries).
	faultMaxLatency = time.Second
	// faultRecovery bounds how long after the restart Redis decides again:
	// the breaker probes at most 4 s (its longest OpenFor by default) after
	// the server is back; on a busy machine a probe may still meet the
	// restarting server (loading, its cluster state settling) and fail,
	// and each failure costs another 4 s. Three probes' worth.
	faultRecovery = 12 * time.Second
	faultWorkers  = 8
)

// faultOptions are client options that never wait long on a dead or hung
// server: the context's deadline reaches the socket, and the client's own
// timeouts and retries are short too.
func faultOptions(addrs ...string) *redis.UniversalOptions {
	return &redis.UniversalOptions{
		Addrs:                 addrs,
		ContextTimeoutEnabled: true,
		DialTimeout:           100 * time.Millisecond,
		ReadTimeout:           100 * time.Millisecond,
		WriteTimeout:          100 * time.Millisecond,
		PoolTimeout:           100 * time.Millisecond,
		MaxRetries:            1,
		PoolSize:              2 * faultWorkers,
	}
}

// faultClient returns a client of addr with faultOptions.
func faultClient(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(faultOptions(addr).Simple())
	t.Cleanup(func() { c.Close() })
	return c
}

// phase is where a fault test stands. Kill and Restart take a moment, with
// phases of their own, so a request that starts and ends in phaseDown ran
// entirely while the server was dead.
type phase int32

const (
	phaseUp         phase = iota // the server answers, before the fault
	phaseFaulting                // Kill under way
	phaseDown                    // the server is dead
	phaseRestarting              // Restart under way
	phaseBack                    // the server answers again, empty
)

// outcomeHeader carries the observer's verdict on a request back to the
// client, so that each response can be matched with its report, and
// errorHeader the error's text, for failure messages.
const (
	outcomeHeader = "X-Test-Outcome"
	errorHeader   = "X-Test-Error"
)

type headerKey struct{}

// outcomes is a core.Observer that counts outcomes, and store errors by
// whether the failure mode admitted them, and labels each response.
type outcomes struct {
	n                    [core.OutcomeCanceled + 1]atomic.Int64
	failedOpen, refused  atomic.Int64 // store errors admitted / refused
	otherFailureReported atomic.Int64 // store errors under an unexpected mode
	mode                 core.FailureMode
}

func (o *outcomes) Observe(ctx context.Context, e core.Event) {
	o.n[e.Outcome].Add(1)
	label := e.Outcome.String()
	if e.Outcome == core.OutcomeStoreError {
		if e.Failure != o.mode {
			o.otherFailureReported.Add(1)
		}
		if e.Admitted {
			o.failedOpen.Add(1)
			label += "/admitted"
		} else {
			o.refused.Add(1)
			label += "/refused"
		}
	}
	if h, ok := ctx.Value(headerKey{}).(http.Header); ok {
		h.Set(outcomeHeader, label)
		if e.Err != nil {
			h.Set(errorHeader, e.Err.Error())
		}
	}
}

// rig is an httptest server limiting by the X-Key header through httpmw,
// and a client for it.
type rig struct {
	url    string
	client *http.Client
	obs    *outcomes
	phase  atomic.Int32
}

func serve(t *testing.T, lim core.Limiter, mode core.FailureMode) *rig {
	t.Helper()
	r := &rig{obs: &outcomes{mode: mode}}
	mw, err := httpmw.New(lim, keyfunc.Header("X-Key"), httpmw.WithFailureMode(mode), httpmw.WithObserver(r.obs))
	if err != nil {
		t.Fatal(err)
	}
	inner := mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		// The observer runs before the answer is written: it can label it.
		inner.ServeHTTP(w, req.WithContext(context.WithValue(req.Context(), headerKey{}, w.Header())))
	}))
	t.Cleanup(ts.Close)
	r.url = ts.URL
	r.client = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 2 * faultWorkers}}
	t.Cleanup(r.client.CloseIdleConnections)
	return r
}

func (r *rig) set(p phase) { r.phase.Store(int32(p)) }

// sample is one request as the client saw it.
type sample struct {
	key        string
	from, to   phase // at the request's start and end
	took       time.Duration
	status     int
	err        error // transport error
	outcome    string
	cause      string // the error the observer was told of
	retryAfter string
	decided    bool // carries X-RateLimit-Limit: a limiter made a decision
}

func (s sample) String() string {
	return fmt.Sprintf("%s (phase %d-%d, %v): %d %q (%s) Retry-After=%q decided=%v err=%v",
		s.key, s.from, s.to, s.took, s.status, s.outcome, s.cause, s.retryAfter, s.decided, s.err)
}

func (r *rig) get(key string) sample {
	s := sample{key: key, from: phase(r.phase.Load())}
	req, _ := http.NewRequest(http.MethodGet, r.url, nil)
	req.Header.Set("X-Key", key)
	start := time.Now()
	resp, err := r.client.Do(req)
	s.took = time.Since(start)
	s.to = phase(r.phase.Load())
	if err != nil {
		s.err = err
		return s
	}
	resp.Body.Close()
	s.status = resp.StatusCode
	s.outcome = resp.Header.Get(outcomeHeader)
	s.cause = resp.Header.Get(errorHeader)
	s.retryAfter = resp.Header.Get("Retry-After")
	s.decided = resp.Header.Get("X-RateLimit-Limit") != ""
	return s
}

// load is faultWorkers goroutines sending requests, each for a key of its
// own that is never used again (so every decision is an admission, and
// no refusal lingers in a deny cache), until finish.
type load struct {
	stop    chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	samples []sample
}

func (r *rig) startLoad() *load {
	l := &load{stop: make(chan struct{})}
	for w := range faultWorkers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			var mine []sample
			defer func() {
				l.mu.Lock()
				l.samples = append(l.samples, mine...)
				l.mu.Unlock()
			}()
			for n := 0; ; n++ {
				select {
				case <-l.stop:
					return
				default:
				}
				mine = append(mine, r.get(fmt.Sprintf("w%d-%d", w, n)))
				time.Sleep(2 * time.Millisecond) // a steady load, not a CPU burner
			}
		}()
	}
	return l
}

func (l *load) finish() []sample {
	close(l.stop)
	l.wg.Wait()
	return l.samples
}

// outage runs load through r, kills srv after a while, calls down with the
// server dead, restarts it and calls back, which returns once Redis
// decides again; load goes on for a while after. It returns every
// request's sample.
func outage(t *testing.T, r *rig, srv *redistest.Server, down func(), back func() bool) []sample {
	t.Helper()
	r.get("warm-up") // loads the script: no request under load pays for it
	l := r.startLoad()
	time.Sleep(300 * time.Millisecond)
	r.set(phaseFaulting)
	srv.Kill()
	r.set(phaseDown)
	downAt := time.Now()
	down()
	time.Sleep(time.Until(downAt.Add(time.Second)))
	r.set(phaseRestarting)
	srv.Restart()
	r.set(phaseBack)
	backAt := time.Now()
	recovered := false
	for !recovered && time.Since(backAt) < faultRecovery {
		if recovered = back(); !recovered {
			time.Sleep(10 * time.Millisecond)
		}
	}
	took := time.Since(backAt)
	time.Sleep(time.Until(backAt.Add(time.Second)))
	samples := l.finish()
	if !recovered {
		t.Errorf("Redis decided nothing within %v of the restart", faultRecovery)
	} else {
		t.Logf("Redis decided again %v after the restart", took.Round(time.Millisecond))
	}
	return samples
}

// during returns the samples that started and ended in p.
func during(samples []sample, p phase) []sample {
	var out []sample
	for _, s := range samples {
		if s.from == p && s.to == p {
			out = append(out, s)
		}
	}
	return out
}

// checkNoServerErrors fails t for any transport error or 5xx.
func checkNoServerErrors(t *testing.T, samples []sample) {
	t.Helper()
	bad := 0
	for _, s := range samples {
		if s.err != nil || s.status >= 500 {
			if bad++; bad <= 5 {
				t.Errorf("server error: %v", s)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d requests failed with a transport error or 5xx", bad, len(samples))
	}
}

// checkUp checks the requests made before the outage: each admitted by
// Redis (every key is fresh), or, when a round trip took longer than
// faultTimeout on a busy machine, a store error answered by the failure
// mode (failure, the observer's label); most of them decided.
func checkUp(t *testing.T, samples []sample, failure string) {
	t.Helper()
	slow := 0
	for _, s := range samples {
		switch {
		case s.status == http.StatusOK && s.outcome == "allowed" && s.decided:
		case s.outcome == failure && !s.decided:
			slow++
		default:
			t.Fatalf("before the outage: %v; want an admission decided by Redis", s)
		}
	}
	t.Logf("before the outage: %d requests, %d of them timed out", len(samples), slow)
	if len(samples) == 0 || slow > len(samples)/2 {
		t.Errorf("before the outage: %d of %d requests decided by Redis, want most", len(samples)-slow, len(samples))
	}
}

// checkLatency fails t when a request took longer than faultMaxLatency,
// and logs the distribution.
func checkLatency(t *testing.T, what string, samples []sample) {
	t.Helper()
	if len(samples) < 20 {
		t.Errorf("%s: only %d requests", what, len(samples))
		return
	}
	took := make([]time.Duration, len(samples))
	for i, s := range samples {
		took[i] = s.took
	}
	slices.Sort(took)
	p := func(q float64) time.Duration { return took[int(q*float64(len(took)-1))] }
	t.Logf("%s: %d requests, latency p50 %v, p99 %v, max %v", what, len(took), p(0.5), p(0.99), took[len(took)-1])
	if worst := took[len(took)-1]; worst >= faultMaxLatency {
		t.Errorf("%s: a request took %v, want < %v: requests waited on the dead server", what, worst, faultMaxLatency)
	}
}

// checkTTLs fails t when a key on c has no TTL, or when there is no key
// at all (the check would be vacuous).
func checkTTLs(t *testing.T, c *redis.Client) {
	t.Helper()
	ctx := context.Background()
	var keys []string
	iter := c.Scan(ctx, 0, "*", 1000).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatalf("SCAN: %v", err)
	}
	if len(keys) == 0 {
		t.Fatal("SCAN found no key: nothing was decided on the server")
	}
	pipe := c.Pipeline()
	ttls := make([]*redis.DurationCmd, len(keys))
	for i, k := range keys {
		ttls[i] = pipe.PTTL(ctx, k)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatalf("PTTL: %v", err)
	}
	none := 0
	for i, cmd := range ttls {
		// -2 (gone) is a key that expired since the scan; -1 has no TTL.
		if cmd.Val() == -1 {
			if none++; none <= 5 {
				t.Errorf("key %s has no TTL", keys[i])
			}
		}
	}
	t.Logf("%d keys scanned, %d without a TTL", len(keys), none)
}

// drain sends requests for key until one is refused by a decision (429
// with rate-limit headers), at most burst+1 of them, and returns it; ok is
// false if none was.
func (r *rig) drain(key string) (s sample, ok bool) {
	for range faultLimit.EffectiveBurst() + 1 {
		if s = r.get(key); s.status == http.StatusTooManyRequests && s.decided {
			return s, true
		}
	}
	return s, false
}
