package benchmarks

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/didip/tollbooth/v7"
	"github.com/go-chi/httprate"
	"github.com/sethvargo/go-limiter/httplimit"
	"github.com/sethvargo/go-limiter/memorystore"
	"github.com/throttled/throttled/v2"
	"github.com/throttled/throttled/v2/store/memstore"
	ulule "github.com/ulule/limiter/v3"
	"github.com/ulule/limiter/v3/drivers/middleware/stdlib"
	ululemem "github.com/ulule/limiter/v3/drivers/store/memory"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/keyfunc"
)

var bare = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })

// nClients distinct client addresses, from the benchmarking range
// 198.18.0.0/15 (RFC 2544); no traffic is sent anywhere.
const nClients = 10_000

// requests returns nClients requests from distinct peers, and fails if two
// would share a key.
func requests(tb testing.TB) []*http.Request {
	tb.Helper()
	byIP := keyfunc.MustClientIP()
	reqs := make([]*http.Request, nClients)
	seen := make(map[string]bool, nClients)
	for i := range reqs {
		r := httptest.NewRequest(http.MethodGet, "/api/items", nil)
		r.RemoteAddr = "198.18." + strconv.Itoa(i>>8&255) + "." + strconv.Itoa(i&255) + ":4242"
		key, err := byIP(r)
		if err != nil {
			tb.Fatal(err)
		}
		seen[key] = true
		reqs[i] = r
	}
	if len(seen) != nClients {
		tb.Fatalf("%d distinct client keys, want %d", len(seen), nClients)
	}
	return reqs
}

// The HTTP benchmarks measure the allowed path, headers included: every
// limiter gets a burst (or, where rate and burst are one number, a rate) of
// 2³⁰ a second, which no key comes near during a run.
const (
	httpBurst  = 1 << 30
	httpEvents = 1000 // per second, where the library takes a burst apart
)

type middleware struct {
	name string
	// base names the row this one's overhead is taken over: "bare" for
	// net/http middleware, "echo-bare" for Echo's; "" for those two.
	base string
	// fields is how many rate-limit fields the middleware sends on an
	// admitted request (TestMiddlewarePolicy checks it): the comparisons
	// are on equal terms only between rows that send as many.
	fields int
	// new returns the handler under test around bare, configured with policy
	// (events per period, burst), keyed by the socket peer.
	new func(tb testing.TB, events, burst int) http.Handler
}

// middlewares lists each library's own net/http middleware with its default
// response headers, keyed by the client address in RemoteAddr.
var middlewares = []middleware{
	{"bare", "", 0, func(testing.TB, int, int) http.Handler { return bare }},
	{"floodgate", "bare", 5, newFloodgateMW(core.TokenBucket)},
	{"floodgate-gcra", "bare", 5, newFloodgateMW(core.GCRA)},
	// Quiet mode (WithHeaders(HeadersNone)) sends no field on an admitted
	// request, as Echo's limiter does: the rows to set beside it. The
	// legacy style sends the three X-RateLimit-* fields, as many as each
	// peer below.
	{"floodgate-quiet", "bare", 0, newFloodgateMW(core.TokenBucket, httpmw.WithHeaders(core.HeadersNone))},
	{"floodgate-gcra-quiet", "bare", 0, newFloodgateMW(core.GCRA, httpmw.WithHeaders(core.HeadersNone))},
	{"floodgate-legacy", "bare", 3, newFloodgateMW(core.TokenBucket, httpmw.WithHeaders(core.HeadersLegacy))},
	{"echo-bare", "", 0, newEchoBare},
	{"echo-limiter", "echo-bare", 0, newEchoLimiter},
	{"floodgate-echomw", "echo-bare", 5, newEchomw(core.TokenBucket)},
	{"floodgate-echomw-gcra", "echo-bare", 5, newEchomw(core.GCRA)},
	{"floodgate-echomw-quiet", "echo-bare", 0, newEchomw(core.TokenBucket, httpmw.WithHeaders(core.HeadersNone))},
	{"floodgate-echomw-gcra-quiet", "echo-bare", 0, newEchomw(core.GCRA, httpmw.WithHeaders(core.HeadersNone))},
	{"sethvargo", "bare", 3, func(tb testing.TB, events, burst int) http.Handler {
		// Tokens is both the refill per Interval and the burst. A tick
		// refills interval/Tokens tokens (in nanoseconds, truncated), so
		// with more Tokens than nanoseconds in the Interval (2³⁰ a second)
		// every tick after the first refills nothing: the benchmark's
		// policy is 2³⁰ an hour here, which no run reaches the end of.
		interval := period
		if burst > int(period) {
			interval = time.Hour
		}
		s, err := memorystore.New(&memorystore.Config{Tokens: uint64(burst), Interval: interval})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { _ = s.Close(tb.Context()) })
		m, err := httplimit.NewMiddleware(s, httplimit.IPKeyFunc())
		if err != nil {
			tb.Fatal(err)
		}
		return m.Handle(bare)
	}},
	{"httprate", "bare", 3, func(tb testing.TB, events, burst int) http.Handler {
		// A sliding-window counter: the quota per window is the only number.
		return httprate.LimitByIP(burst, period)(bare)
	}},
	{"ulule", "bare", 3, func(tb testing.TB, events, burst int) http.Handler {
		// A fixed window: Limit per Period is the only number.
		l := ulule.New(ululemem.NewStore(), ulule.Rate{Period: period, Limit: int64(burst)})
		return stdlib.NewMiddleware(l).Handler(bare)
	}},
	{"throttled", "bare", 3, func(tb testing.TB, events, burst int) http.Handler {
		st, err := memstore.New(core.DefaultCapacity)
		if err != nil {
			tb.Fatal(err)
		}
		l, err := throttled.NewGCRARateLimiter(st, throttled.RateQuota{MaxRate: throttled.PerSec(events), MaxBurst: burst - 1})
		if err != nil {
			tb.Fatal(err)
		}
		return (&throttled.HTTPRateLimiter{RateLimiter: l, VaryBy: &throttled.VaryBy{RemoteAddr: true}}).RateLimit(bare)
	}},
	{"tollbooth", "bare", 6, func(tb testing.TB, events, burst int) http.Handler {
		lmt := tollbooth.NewLimiter(float64(events), nil)
		lmt.SetBurst(burst)
		// The socket peer only, like every other middleware here (its
		// default also trusts X-Forwarded-For and X-Real-IP, which these
		// requests do not carry).
		lmt.SetIPLookups([]string{"RemoteAddr"})
		return tollbooth.LimitHandler(lmt, bare)
	}},
}

func newFloodgateMW(alg core.Algorithm, opts ...httpmw.Option) func(testing.TB, int, int) http.Handler {
	return func(tb testing.TB, events, burst int) http.Handler {
		lim, err := core.New((core.Limit{Events: events, Period: period, Burst: burst, Name: "bench"}).WithAlgorithm(alg))
		if err != nil {
			tb.Fatal(err)
		}
		l, err := httpmw.New(lim, keyfunc.MustClientIP(), opts...)
		if err != nil {
			tb.Fatal(err)
		}
		return l.Handler(bare)
	}
}
