package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/redisstore"
)

// tries counts the commands a client tries to send, alone or in
// pipelines.
type tries struct{ n atomic.Int64 }

func (c *tries) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *tries) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}
func (c *tries) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// TestFaultFailLocal: a Limiter made WithFallback behind httpmw, under
// load, Redis killed and restarted: no 5xx and no store error ever reaches
// the middleware; while Redis is down a fresh key gets exactly the local
// burst, the breaker opens and Redis is sent no more round trips than its
// rule allows (the failures that open it, the requests in flight, one
// probe per open period); within 5 s of the restart the breaker is closed
// and Redis decides again. Health tells it all.
func TestFaultFailLocal(t *testing.T) {
	redistest.SkipShort(t, "Redis killed under load, and seconds waiting for it in real time")
	t.Parallel()
	runAs(t, realTime)
	srv := redistest.Start(t)
	c := faultClient(t, srv.Addr())
	var sent tries
	c.AddHook(&sent)
	// A window of 1 s, in buckets of 100 ms, for an outage of 1 s: the
	// breaker opens within two buckets of failures, and the run of
	// failures that opens it is short.
	const openFor, window = 200 * time.Millisecond, time.Second
	fb := redisstore.MustNew(c, faultLimit, redisstore.WithTimeout(faultTimeout), redisstore.WithFallback(),
		redisstore.WithBreaker(redisstore.BreakerConfig{Window: window, OpenFor: openFor}))
	// FailClosed: a store error that got past the fallback would be
	// refused, and seen.
	r := serve(t, fb, core.FailClosed)
	burst := faultLimit.EffectiveBurst()
	var (
		fresh        []sample
		sawOpen      bool
		upDecisions  uint64
		calls        int64
		downFor      time.Duration
		atRestart    core.Health
		closedAgain  bool
		primaryAgain uint64
	)
	samples := outage(t, r, srv, func() {
		start, before := time.Now(), sent.n.Load()
		upDecisions = fb.Health().StoreDecisions
		for range 2 * burst {
			fresh = append(fresh, r.get("outage-fresh"))
		}
		// Looked at once at least: on a busy machine the requests above
		// may take the whole 900 ms.
		for {
			if fb.Health().Breaker == "open" {
				sawOpen = true
			}
			if time.Since(start) >= 900*time.Millisecond {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		calls, downFor = sent.n.Load()-before, time.Since(start)
		atRestart = fb.Health()
	}, func() bool {
		h := fb.Health()
		closedAgain, primaryAgain = h.Breaker == "closed", h.StoreDecisions-atRestart.StoreDecisions
		return closedAgain && primaryAgain > 0
	})

	checkNoServerErrors(t, samples)
	// Every worker key is fresh: whichever side decides admits it.
	for _, s := range samples {
		if s.status != http.StatusOK || s.outcome != "allowed" || !s.decided {
			t.Fatalf("%v; want an admission decided by Redis or locally", s)
		}
	}
	if n := r.obs.n[core.OutcomeStoreError].Load(); n != 0 {
		t.Errorf("%d store errors reached the middleware; the fallback answers them locally", n)
	}
	checkLatency(t, "while down", during(samples, phaseDown))

	admitted := 0
	for _, s := range fresh {
		switch {
		case s.status == http.StatusOK && s.decided:
			admitted++
		case s.status == http.StatusTooManyRequests && s.outcome == "denied" && s.decided:
			if secs, err := strconv.Atoi(s.retryAfter); err != nil || secs < 1 {
				t.Errorf("local refusal without a Retry-After of whole seconds >= 1: %v", s)
			}
		default:
			t.Errorf("fresh key while Redis is down: %v; want a local decision", s)
		}
	}
	// All decided locally, on a whole quota that refills one token every
	// 3 minutes: exactly the burst.
	if admitted != burst {
		t.Errorf("fresh key while Redis is down: %d of %d admitted, want the local burst %d", admitted, len(fresh), burst)
	}

	h := fb.Health()
	t.Logf("health: %+v; %d commands tried on Redis in the %v it was down", h, calls, downFor.Round(time.Millisecond))
	if !sawOpen || h.Opens == 0 || atRestart.LocalDecisions == 0 || atRestart.Failures == 0 {
		t.Errorf("while Redis was down: breaker seen open %v, health %+v; want it open, failures and local decisions", sawOpen, atRestart)
	}
	// Redis is called by the requests that open the breaker, then by one
	// probe each time an open period ends. Its window holds at most the
	// round trips made before the outage, and failures open it once they
	// are as many, at least DefaultBreakerMinCalls, or sooner (two buckets
	// of nothing but failures); the requests in flight (the workers and
	// this goroutine) may call it too.
	opening := max(int64(upDecisions), int64(redisstore.DefaultBreakerMinCalls))
	if bound := opening + faultWorkers + 1 + int64(downFor/openFor) + 1; calls > bound {
		t.Errorf("%d calls to Redis while it was down for %v, want at most %d: the breaker did not stop them", calls, downFor, bound)
	}
	if !closedAgain || primaryAgain == 0 {
		t.Errorf("after the restart: breaker closed %v, %d primary decisions; want closed and Redis deciding", closedAgain, primaryAgain)
	}
	checkTTLs(t, c)
}

// TestFaultConcurrentAllow: goroutines calling Allow and Refund while
// Redis is killed and restarted twice never panic; redisstore never
// returns a decision together with an error, and its only errors are
// store errors; made WithFallback, it never returns an error at all.
func TestFaultConcurrentAllow(t *testing.T) {
	redistest.SkipShort(t, "Redis killed under load, and seconds waiting for it in real time")
	t.Parallel()
	runAs(t, realTime)
	srv := redistest.Start(t)
	c := faultClient(t, srv.Addr())
	l := core.PerHour(5) // a small burst: refusals (and the deny cache) too
	limiters := []struct {
		name     string
		lim      core.Limiter
		fallback bool
	}{
		{"redis", redisstore.MustNew(c, l, redisstore.WithTimeout(faultTimeout)), false},
		{"redis-no-deny-cache", redisstore.MustNew(c, l, redisstore.WithTimeout(faultTimeout), redisstore.WithDenyCache(0), redisstore.WithPrefix("nc:")), false},
		{"fallback", redisstore.MustNew(c, l, redisstore.WithTimeout(faultTimeout), redisstore.WithPrefix("fb:"), redisstore.WithFallback(),
			redisstore.WithBreaker(redisstore.BreakerConfig{OpenFor: 100 * time.Millisecond})), true},
	}
	var allowed, denied, storeErrs atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 24 {
		lim := limiters[g%len(limiters)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s: panic: %v", lim.name, p)
				}
			}()
			ctx := context.Background()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("k%d", (g*31+n)%40)
				if n%5 == 4 {
					err := lim.lim.Refund(ctx, key, 1)
					if err != nil && (lim.fallback || !errors.Is(err, core.ErrStore)) {
						t.Errorf("%s: refund: %v", lim.name, err)
						return
					}
					continue
				}
				d, err := lim.lim.Allow(ctx, key, 1)
				switch {
				case err != nil && lim.fallback:
					t.Errorf("%s: %v; the fallback answers store errors locally", lim.name, err)
					return
				case err != nil && (d != core.Decision{} || !errors.Is(err, core.ErrStore)):
					t.Errorf("%s: decision %+v with error %v; want no decision, and a store error", lim.name, d, err)
					return
				case err != nil:
					storeErrs.Add(1)
				case d.Allowed:
					allowed.Add(1)
				default:
					denied.Add(1)
				}
				time.Sleep(time.Millisecond)
			}
		}()
	}
	for range 2 {
		time.Sleep(300 * time.Millisecond)
		srv.Kill()
		time.Sleep(300 * time.Millisecond)
		srv.Restart()
	}
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	t.Logf("%d allowed, %d denied, %d store errors", allowed.Load(), denied.Load(), storeErrs.Load())
	if allowed.Load() == 0 || denied.Load() == 0 || storeErrs.Load() == 0 {
		t.Error("want admissions, refusals and store errors all seen")
	}
	checkTTLs(t, c)
}

// hungCalls pauses every client of s (CLIENT PAUSE, as a stalled host
// would) for a while and returns, for each limiter in turn, how long its
// Allow took on the paused server, its decision and its error.
func hungCalls(t *testing.T, s *redistest.Server, lims ...core.Limiter) (took []time.Duration, ds []core.Decision, errs []error) {
	t.Helper()
	admin := redis.NewClient(&redis.Options{Addr: s.Addr(), ContextTimeoutEnabled: true})
	defer admin.Close()
	ctx := context.Background()
	for _, l := range lims {
		if d, err := l.Allow(ctx, "warm-up", 1); err != nil || !d.Allowed {
			t.Fatalf("before the pause: %+v %v", d, err)
		}
	}
	// Long enough for the calls below; it ends by itself.
	if err := admin.Do(ctx, "CLIENT", "PAUSE", "700", "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	for _, l := range lims {
		start := time.Now()
		d, err := l.Allow(ctx, "k", 1)
		took, ds, errs = append(took, time.Since(start)), append(ds, d), append(errs, err)
	}
	return took, ds, errs
}

// hungBound bounds a call to a hung server: the deadline fires at
// faultTimeout, the rest is room for a busy machine.
const hungBound = 4 * faultTimeout

// TestFaultHungServer: a server that accepts a command and does not answer
// costs a decision the redisstore timeout when the client lets the
// context's deadline reach the socket (ContextTimeoutEnabled), and a
// Limiter made WithFallback decides locally within the same timeout.
func TestFaultHungServer(t *testing.T) {
	t.Parallel()
	runAs(t, realTime)
	srv := redistest.Start(t)
	c := faultClient(t, srv.Addr())
	lim := redisstore.MustNew(c, faultLimit, redisstore.WithTimeout(faultTimeout))
	fb := redisstore.MustNew(c, faultLimit, redisstore.WithTimeout(faultTimeout), redisstore.WithPrefix("fb:"), redisstore.WithFallback())
	took, ds, errs := hungCalls(t, srv, lim, fb)
	if !errors.Is(errs[0], core.ErrStore) || took[0] > hungBound {
		t.Errorf("redisstore on a hung server: %+v %v after %v; want a store error within %v", ds[0], errs[0], took[0], hungBound)
	}
	if errs[1] != nil || !ds[1].Allowed || took[1] > hungBound {
		t.Errorf("fallback on a hung server: %+v %v after %v; want a local admission within %v", ds[1], errs[1], took[1], hungBound)
	}
}
