package benchmarks

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/httpmwtest"
	"github.com/floodgate/floodgate/internal/redistest"
)

// burstAt counts how many of tries calls admit at (almost) one instant: it
// retries on a fresh key until the calls take less than one refill interval
// (10 ms), so that no refill can add an admission. A machine too slow for
// that (the race detector on a busy machine) skips the test.
func burstAt(t *testing.T, tries int, call func(key string) bool) int {
	t.Helper()
	var fastest time.Duration
	for attempt := range 50 {
		key := "fresh-" + strconv.Itoa(attempt)
		start := time.Now()
		n := 0
		for range tries {
			if call(key) {
				n++
			}
		}
		took := time.Since(start)
		if took < policy.Interval() {
			return n
		}
		if attempt == 0 || took < fastest {
			fastest = took
		}
	}
	t.Skipf("%d calls never took less than %v (at best %v)", tries, policy.Interval(), fastest)
	return 0
}

// TestPolicy checks that every implementation is configured to the same
// policy: a fresh key gets exactly the burst at one instant, and another key
// is limited apart from it.
func TestPolicy(t *testing.T) {
	for _, im := range impls {
		t.Run(im.name, func(t *testing.T) {
			d := im.new(t, setup{capacity: core.DefaultCapacity})
			if n := burstAt(t, burst+50, d.allow); n != burst {
				t.Errorf("a fresh key got %d of %d at one instant, want %d", n, burst+50, burst)
			}
			if !d.allow("another") {
				t.Error("another key was denied: keys are not limited apart")
			}
			if e, ok := d.(errCounter); ok && e.errors() != 0 {
				t.Errorf("%d errors", e.errors())
			}
		})
	}
}

// TestMemorySetup checks that the memory benchmark's floodgate keeps every
// key (its frozen clock lets none be swept), on a smaller scale.
func TestMemorySetup(t *testing.T) {
	d := impls[1].new(t, setup{capacity: 20_000, frozen: true}).(*floodgate)
	for _, k := range keys(t, 10_000) {
		d.allow(k)
	}
	if d.Len() != 10_000 {
		t.Fatalf("tracked %d keys, want 10000", d.Len())
	}
}

// TestWorkloadKeys checks that the workloads' keys really differ.
func TestWorkloadKeys(t *testing.T) {
	keys(t, churnKeys) // fails on a repeat

	seq := zipfSeq()
	distinct := map[uint32]bool{}
	for _, i := range seq {
		if i >= zipfKeys {
			t.Fatalf("zipf index %d out of range", i)
		}
		distinct[i] = true
	}
	// s=1.1 over 10⁵ keys: a long tail, far from one hot key.
	if len(distinct) < 10_000 {
		t.Errorf("the zipf sequence touches %d distinct keys", len(distinct))
	}

	requests(t) // fails on a repeat
}

// TestMiddlewarePolicy checks that every middleware applies the policy per
// client address (100 at one instant, then refusals; another client apart),
// and that the benchmark's policy admits every request with rate-limit
// headers.
func TestMiddlewarePolicy(t *testing.T) {
	reqs := requests(t)
	for _, mw := range middlewares {
		if mw.base == "" {
			continue
		}
		t.Run(mw.name, func(t *testing.T) {
			h := mw.new(t, events, burst)
			w := httpmwtest.NewWriter()
			serve := func(r *http.Request) int {
				w.Reset()
				h.ServeHTTP(w, r)
				return w.Code
			}
			n := burstAt(t, burst+50, func(key string) bool {
				r := reqs[0].Clone(reqs[0].Context())
				r.RemoteAddr = "198.19.0." + strings.TrimPrefix(key, "fresh-") + ":4242"
				switch code := serve(r); code {
				case http.StatusOK:
					return true
				case http.StatusTooManyRequests:
					return false
				default:
					t.Fatalf("status %d", code)
					return false
				}
			})
			if n != burst {
				t.Errorf("a fresh client got %d of %d at one instant, want %d", n, burst+50, burst)
			}
			if code := serve(reqs[1]); code != http.StatusOK {
				t.Errorf("another client got %d", code)
			}

			h = mw.new(t, httpEvents, httpBurst)
			for range 2 {
				for i, r := range reqs {
					if code := serve(r); code != http.StatusOK {
						t.Fatalf("request %d: status %d", i, code)
					}
					if n := rateLimitFields(w.Header()); n != mw.fields {
						t.Fatalf("request %d: %d rate-limit fields, want %d: %v", i, n, mw.fields, w.Header())
					}
				}
			}
		})
	}
}

// rateLimitFields counts the rate-limit fields of a response: those whose
// name says rate limit, in either spelling.
func rateLimitFields(h http.Header) int {
	n := 0
	for k := range h {
		k = strings.ToLower(k)
		if strings.Contains(k, "ratelimit") || strings.Contains(k, "rate-limit") {
			n++
		}
	}
	return n
}

// TestMiddlewareBenchPolicyLasts checks that the benchmark's policy keeps
// admitting after a period has passed, as a run of BenchmarkHTTP spans
// several: go-limiter's memorystore, for one, refills nothing on later ticks
// when Tokens exceeds the Interval in nanoseconds.
func TestMiddlewareBenchPolicyLasts(t *testing.T) {
	if testing.Short() {
		t.Skip("sleeps for a period")
	}
	reqs := requests(t)[:8]
	w := httpmwtest.NewWriter()
	handlers := make([]http.Handler, len(middlewares))
	for round := range 2 {
		if round > 0 {
			time.Sleep(period + period/10)
		}
		for i, mw := range middlewares {
			if mw.base == "" {
				continue
			}
			if handlers[i] == nil {
				handlers[i] = mw.new(t, httpEvents, httpBurst)
			}
			for j, r := range reqs {
				w.Reset()
				handlers[i].ServeHTTP(w, r)
				if w.Code != http.StatusOK {
					t.Errorf("%s: round %d, request %d: status %d", mw.name, round, j, w.Code)
					break
				}
			}
		}
	}
}

// checkBurst makes tries calls in a row on a fresh key, too slow (a round
// trip or more each) to fit in one refill interval: a fresh key must get
// the burst, and at most one more admission per interval the calls took.
func checkBurst(t *testing.T, tries int, call func(key string) (bool, error)) {
	t.Helper()
	admitted := 0
	start := time.Now()
	for i := range tries {
		ok, err := call("fresh")
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if ok {
			admitted++
		}
	}
	took := time.Since(start)
	if most := burst + int(took/policy.Interval()) + 1; admitted < burst || admitted > most {
		t.Errorf("a fresh key got %d of %d calls in %v, want %d to %d", admitted, tries, took, burst, most)
	}
}

// TestRedisPolicy checks that every Redis limiter of BenchmarkRedis is
// configured to the policy (a fresh key gets the burst, and no more than
// refills allow; another key is limited apart), and that the repeat-offender row
// answers from floodgate's deny cache, with no round trip.
func TestRedisPolicy(t *testing.T) {
	srv := redistest.Start(t)
	rb := &redisBench{srv: srv}
	ctx := context.Background()
	for _, im := range redisImpls {
		if im.kind == baseline {
			continue
		}
		t.Run(im.name, func(t *testing.T) {
			c, rt := rb.client(t, im.opts)
			flush(t, c)
			d := im.new(t, c)
			if im.kind == cachedDen {
				key := prepare(t, c, im, d, 1)
				trips, admitted := rt.n.Load(), 0
				start := time.Now()
				for i := range 1000 {
					ok, err := d.decide(ctx, key)
					if err != nil {
						t.Fatalf("call %d on a drained key: %v", i, err)
					}
					if ok {
						admitted++
					}
				}
				// A refusal is cached for its RetryAfter, at most one interval
				// (10 ms); then a round trip may admit a refilled token, and
				// the next refusal is cached again.
				intervals := int(time.Since(start)/policy.Interval()) + 1
				if admitted > intervals {
					t.Errorf("%d of 1000 calls on a drained key admitted in %d intervals", admitted, intervals)
				}
				if n := rt.n.Load() - trips; n > int64(2*intervals) {
					t.Errorf("%d round trips for 1000 calls on a drained key in %d intervals", n, intervals)
				}
				return
			}
			checkBurst(t, burst+50, func(key string) (bool, error) { return d.decide(ctx, key) })
			if ok, err := d.decide(ctx, "another"); err != nil || !ok {
				t.Errorf("another key: ok=%v, err=%v; keys are not limited apart", ok, err)
			}
		})
	}
}
