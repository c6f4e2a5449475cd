package httpmw_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/internal/httpmwtest"
	"github.com/floodgate/floodgate/keyfunc"
)

// The target: the middleware adds at most 325 ns per request
// sequentially and 210 ns in parallel over a bare handler, with both header
// styles. Compare the handler=bare and handler=limited rows of
// BenchmarkOverhead (benchstat, -count=6).

var bare = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })

// nKeys distinct clients: enough that they spread over every shard and do
// not all sit in one cache line.
const nKeys = 1 << 10

// requests returns nKeys requests from distinct peers, and fails the
// benchmark if any two would share a key.
func requests(b *testing.B) []*http.Request {
	b.Helper()
	reqs := make([]*http.Request, nKeys)
	seen := make(map[string]bool, nKeys)
	for i := range reqs {
		r := httptest.NewRequest(http.MethodGet, "/api/items", nil)
		r.RemoteAddr = "10." + strconv.Itoa(i>>16&255) + "." + strconv.Itoa(i>>8&255) + "." + strconv.Itoa(i&255) + ":4242"
		key, _ := byAddr(r)
		if seen[key] {
			b.Fatalf("key %q repeats: the benchmark would not use %d keys", key, nKeys)
		}
		seen[key] = true
		reqs[i] = r
	}
	if len(seen) != nKeys {
		b.Fatalf("%d distinct keys, want %d", len(seen), nKeys)
	}
	return reqs
}

// benchLimit admits every request of the benchmarks, so each gets the full
// set of headers, and never lets a key's quota become whole again: core drops
// whole keys first, and re-inserting them on each visit would measure core's
// insertion path rather than this package.
var benchLimit = core.Limit{Events: 1000, Period: time.Second, Burst: 1 << 30, Name: "bench"}

// BenchmarkOverhead measures a request through a bare handler and through
// the middleware in front of it, on the system clock, cycling through
// nKeys keys. Denied requests are measured by BenchmarkDenied.
func BenchmarkOverhead(b *testing.B) {
	reqs := requests(b)
	lim, err := core.New(benchLimit, core.WithCapacity(2*nKeys))
	if err != nil {
		b.Fatal(err)
	}
	// A limiter that answers at once shows what this package adds on its
	// own, apart from core's decision.
	fixed := decide(core.Decision{Allowed: true, Limit: lim.Limit(), Remaining: 999_999, ResetAfter: time.Microsecond}, nil)
	// A limit of requests in flight: every request takes a Lease and ends
	// it when the handler returns.
	inflight, err := core.New(core.InFlight(1000), core.WithCapacity(2*nKeys))
	if err != nil {
		b.Fatal(err)
	}
	handlers := []struct {
		name string
		h    http.Handler
	}{
		{"bare", bare},
		{"limited", httpmw.MustNew(lim, byAddr).Handler(bare)},
		{"fixed-decision", httpmw.MustNew(fixed, byAddr).Handler(bare)},
		// keyfunc.ClientIP parses and formats the peer address: the full
		// cost of a typical set-up.
		{"limited-clientip", httpmw.MustNew(lim, keyfunc.MustClientIP()).Handler(bare)},
		{"inflight", httpmw.MustNew(inflight, byAddr).Handler(bare)},
	}
	for _, hh := range handlers {
		h := hh.h
		b.Run("handler="+hh.name+"/mode=seq", func(b *testing.B) {
			w := httpmwtest.NewWriter()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				w.Reset()
				h.ServeHTTP(w, reqs[i&(nKeys-1)])
			}
			if w.Code != http.StatusOK {
				b.Fatalf("status %d", w.Code)
			}
		})
		b.Run("handler="+hh.name+"/mode=par", func(b *testing.B) {
			var next atomic.Int64
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				w := httpmwtest.NewWriter()
				w.Code = http.StatusOK
				i := int(next.Add(nKeys / 7)) // each goroutine starts elsewhere
				for pb.Next() {
					w.Reset()
					h.ServeHTTP(w, reqs[i&(nKeys-1)])
					i++
				}
				if w.Code != http.StatusOK {
					b.Errorf("status %d", w.Code)
				}
			})
		})
	}
}

// BenchmarkDenied measures requests the limiter refuses (a drained key on a
// limit that does not refill during the run): headers, Retry-After and the
// plain-text 429.
func BenchmarkDenied(b *testing.B) {
	reqs := requests(b)
	lim, err := core.New(core.PerDay(1).WithName("bench"), core.WithCapacity(2*nKeys))
	if err != nil {
		b.Fatal(err)
	}
	h := httpmw.MustNew(lim, byAddr).Handler(bare)
	w := httpmwtest.NewWriter()
	for _, r := range reqs {
		w.Reset()
		h.ServeHTTP(w, r)
	}
	b.Run("mode=seq", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			w.Reset()
			h.ServeHTTP(w, reqs[i&(nKeys-1)])
		}
		if w.Code != http.StatusTooManyRequests {
			b.Fatalf("status %d", w.Code)
		}
	})
}

// BenchmarkWriteHeaders measures header formatting alone.
func BenchmarkWriteHeaders(b *testing.B) {
	l := httpmw.MustNew(decide(core.Decision{}, nil), byAddr)
	d := core.Decision{Allowed: true, Limit: core.PerMinute(100).WithName("bench"), Remaining: 42, ResetAfter: 17 * time.Second}
	h := http.Header{}
	b.ReportAllocs()
	for b.Loop() {
		clear(h)
		l.WriteHeaders(h, d)
	}
}

// BenchmarkLayered measures a request through two nested limiters (a
// global one and one on the route), both admitting, with and without
// WithRefundOnInnerRefusal on the outer one: the cost of recording its
// charge.
func BenchmarkLayered(b *testing.B) {
	reqs := requests(b)
	for _, refund := range []bool{false, true} {
		outer := core.MustNew(benchLimit, core.WithCapacity(2*nKeys))
		inner := core.MustNew(benchLimit, core.WithCapacity(2*nKeys))
		var opts []httpmw.Option
		if refund {
			opts = append(opts, httpmw.WithRefundOnInnerRefusal())
		}
		h := httpmw.MustNew(outer, byAddr, opts...).Handler(httpmw.MustNew(inner, byAddr).Handler(bare))
		b.Run("refund="+strconv.FormatBool(refund), func(b *testing.B) {
			w := httpmwtest.NewWriter()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				w.Reset()
				h.ServeHTTP(w, reqs[i&(nKeys-1)])
			}
			if w.Code != http.StatusOK {
				b.Fatalf("status %d", w.Code)
			}
		})
	}
}
