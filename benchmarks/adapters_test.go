package benchmarks

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/didip/tollbooth/v7"
	tblimiter "github.com/didip/tollbooth/v7/limiter"
	"github.com/go-chi/httprate"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/sethvargo/go-limiter/memorystore"
	"github.com/throttled/throttled/v2"
	"github.com/throttled/throttled/v2/store/memstore"
	ulule "github.com/ulule/limiter/v3"
	ululemem "github.com/ulule/limiter/v3/drivers/store/memory"
	"golang.org/x/time/rate"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/benchwork"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/internal/httpmwtest"
)

// The policy every implementation is configured to: 100 a second, burst 100,
// per key.
const (
	events = 100
	burst  = 100
	period = time.Second
)

var policy = core.PerSecond(events) // burst 0 means "the same as Events"

// decider is the one interface every implementation sits behind, so that the
// same loop drives all of them.
type decider interface {
	allow(key string) bool
}

// errCounter is implemented by the adapters whose library can fail a
// decision (rather than deny it); the benchmarks report those failures, which
// the adapters count as denials.
type errCounter interface {
	errors() int64
}

type errCount struct{ n atomic.Int64 }

func (e *errCount) errors() int64 { return e.n.Load() }

// setup says how to build a decider for one workload.
type setup struct {
	// capacity bounds the stores that take a bound (floodgate, golang-lru,
	// throttled); the others ignore it.
	capacity int
	// frozen gives floodgate a clock that never moves, so that no key's quota
	// becomes whole again and is swept while the memory benchmark counts it.
	frozen bool
}

type impl struct {
	name string
	new  func(tb testing.TB, s setup) decider
}

// impls lists every implementation, in the order of the tables.
var impls = []impl{
	{"floor", func(testing.TB, setup) decider { return newFloor() }},
	{"floodgate", newFloodgate(core.TokenBucket)},
	{"floodgate-gcra", newFloodgate(core.GCRA)},
	{"xrate-map", func(testing.TB, setup) decider { return &rateMap{m: map[string]*rate.Limiter{}} }},
	{"xrate-lru", newRateLRU},
	{"sethvargo", newSethvargo},
	{"httprate", newHTTPRate},
	{"ulule", newUlule},
	{"throttled", newThrottled},
	{"tollbooth", newTollbooth},
}

// floor is benchwork.Floor, the reference core/bench_test.go reports
// ratios to: sync.Map + one CAS on an int64 GCRA state, unbounded, nothing
// computed beyond admission.
type floor struct{ *benchwork.Floor }

func newFloor() floor { return floor{benchwork.NewFloor(policy)} }

func (f floor) allow(key string) bool { return f.Allow(key) }

// floodgate is core.Keyed with the given algorithm.
type floodgate struct {
	*core.Keyed
	errCount
}

func newFloodgate(alg core.Algorithm) func(testing.TB, setup) decider {
	return func(tb testing.TB, s setup) decider {
		opts := []core.Option{core.WithCapacity(s.capacity)}
		if s.frozen {
			opts = append(opts, core.WithClock(coretest.NewClock(time.Unix(1_700_000_000, 0))))
		}
		k, err := core.New(policy.WithAlgorithm(alg), opts...)
		if err != nil {
			tb.Fatal(err)
		}
		return &floodgate{Keyed: k}
	}
}

func (f *floodgate) allow(key string) bool {
	d, err := f.Allow(context.Background(), key, 1)
	if err != nil {
		f.n.Add(1)
		return false
	}
	return d.Allowed
}

// rateMap is the common hand-written limiter: a map of *rate.Limiter under
// one mutex, unbounded; the limiter's own mutex makes the decision.
type rateMap struct {
	mu sync.Mutex
	m  map[string]*rate.Limiter
}

func (r *rateMap) allow(key string) bool {
	r.mu.Lock()
	l, ok := r.m[key]
	if !ok {
		l = rate.NewLimiter(events, burst)
		r.m[key] = l
	}
	r.mu.Unlock()
	return l.Allow()
}

// rateLRU bounds the same with golang-lru/v2's lru.Cache.
type rateLRU struct {
	c *lru.Cache[string, *rate.Limiter]
}

func newRateLRU(tb testing.TB, s setup) decider {
	c, err := lru.New[string, *rate.Limiter](s.capacity)
	if err != nil {
		tb.Fatal(err)
	}
	return rateLRU{c}
}

func (r rateLRU) allow(key string) bool {
	l, ok := r.c.Get(key)
	if !ok {
		l = rate.NewLimiter(events, burst)
		if prev, found, _ := r.c.PeekOrAdd(key, l); found {
			l = prev
		}
	}
	return l.Allow()
}

// sethvargo is go-limiter's memorystore: Tokens per Interval, refilled on
// interval ticks, so the burst is Tokens.
type sethvargo struct {
	s interface {
		Take(context.Context, string) (uint64, uint64, uint64, bool, error)
	}
	errCount
}

func newSethvargo(tb testing.TB, _ setup) decider {
	s, err := memorystore.New(&memorystore.Config{Tokens: events, Interval: period})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close(context.Background()) })
	return &sethvargo{s: s}
}

func (s *sethvargo) allow(key string) bool {
	_, _, _, ok, err := s.s.Take(context.Background(), key)
	if err != nil {
		s.n.Add(1)
		return false
	}
	return ok
}

// httpRate is go-chi/httprate's sliding-window counter, asked through
// RateLimiter.OnLimit (its own lock and counter) with every response header
// turned off, so that only the decision is measured. OnLimit needs a request
// and a writer; both are reused and never written to.
type httpRate struct {
	rl *httprate.RateLimiter
	r  *http.Request
	w  http.ResponseWriter
}

func newHTTPRate(testing.TB, setup) decider {
	return &httpRate{
		rl: httprate.NewRateLimiter(events, period, httprate.WithResponseHeaders(httprate.ResponseHeaders{})),
		r:  httptest.NewRequest(http.MethodGet, "/", nil),
		w:  httpmwtest.NewWriter(),
	}
}

func (h *httpRate) allow(key string) bool { return !h.rl.OnLimit(h.w, h.r, key) }

// ulule is limiter/v3's memory store (a fixed window per key, starting at
// the key's first request) through Limiter.Get, which counts the request.
type ululeLimiter struct {
	l *ulule.Limiter
	errCount
}

func newUlule(testing.TB, setup) decider {
	return &ululeLimiter{l: ulule.New(ululemem.NewStore(), ulule.Rate{Period: period, Limit: events})}
}

func (u *ululeLimiter) allow(key string) bool {
	c, err := u.l.Get(context.Background(), key)
	if err != nil {
		u.n.Add(1)
		return false
	}
	return !c.Reached
}

// throttledGCRA is throttled/v2's GCRA limiter on its bounded memstore
// (golang-lru v1). MaxBurst counts the requests beyond the first, so a burst
// of 100 is MaxBurst 99.
type throttledGCRA struct {
	l *throttled.GCRARateLimiterCtx
	errCount
}

func newThrottled(tb testing.TB, s setup) decider {
	st, err := memstore.New(s.capacity)
	if err != nil {
		tb.Fatal(err)
	}
	l, err := throttled.NewGCRARateLimiter(st, throttled.RateQuota{MaxRate: throttled.PerSec(events), MaxBurst: burst - 1})
	if err != nil {
		tb.Fatal(err)
	}
	return &throttledGCRA{l: l}
}

func (t *throttledGCRA) allow(key string) bool {
	limited, _, err := t.l.RateLimit(key, 1)
	if err != nil {
		t.n.Add(1)
		return false
	}
	return !limited
}

// tollboothLimiter is tollbooth/v7 (x/time/rate limiters in an expirable
// cache under one mutex) through LimitByKeys, its keyed entry point.
// NewLimiter sets the burst to the rate, 100.
type tollboothLimiter struct{ lmt *tblimiter.Limiter }

func newTollbooth(testing.TB, setup) decider {
	return tollboothLimiter{tollbooth.NewLimiter(events, nil)}
}

func (t tollboothLimiter) allow(key string) bool {
	return tollbooth.LimitByKeys(t.lmt, []string{key}) == nil
}
