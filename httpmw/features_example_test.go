package httpmw_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/internal/coretest"
)

// Reads and writes get different policies: GET and HEAD requests are
// limited by reads, everything else by writes.
func ExampleWithLimiterFunc() {
	clock := coretest.NewClock(time.Unix(1_699_999_200, 0))
	reads := core.MustNew(core.PerMinute(100).WithName("reads"), core.WithClock(clock))
	writes := core.MustNew(core.PerMinute(1).WithName("writes"), core.WithClock(clock))
	h := httpmw.MustNew(nil, apiKey, httpmw.WithLimiterFunc(func(r *http.Request) core.Limiter {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			return reads
		}
		return writes
	})).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))

	for _, method := range []string{"POST", "POST", "GET"} {
		r := httptest.NewRequest(method, "/", nil)
		r.Header.Set("X-Api-Key", "k1")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Println(method, w.Code, w.Header().Get("RateLimit"))
	}
	// Output:
	// POST 200 "writes";r=0;t=60
	// POST 429 "writes";r=0;t=60
	// GET 200 "reads";r=99;t=1
}

// A byte quota: 64 KiB a minute per key, each request costing its body
// size in KiB (at least 1), and a body of unknown length refused.
func ExampleCostByContentLength() {
	clock := coretest.NewClock(time.Unix(1_699_999_200, 0))
	lim := core.MustNew(core.PerMinute(64).WithName("upload"), core.WithClock(clock))
	h := httpmw.MustNew(lim, apiKey,
		httpmw.WithCost(httpmw.CostByContentLength(1024, httpmw.RefuseUnknownLength)),
	).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))

	for _, size := range []int64{40 << 10, 1000, 30 << 10, -1} {
		r := httptest.NewRequest("PUT", "/", strings.NewReader("…"))
		r.ContentLength = size
		r.Header.Set("X-Api-Key", "k1")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Println(size, w.Code, w.Header().Get("RateLimit"))
	}
	// Output:
	// 40960 200 "upload";r=24;t=38
	// 1000 200 "upload";r=23;t=39
	// 30720 429 "upload";r=23;t=7
	// -1 400
}

// A global limit on every route and a stricter one on /login: the global
// limiter gives back what it charged a login that the login limiter
// refuses, so failed logins do not also spend the global quota.
func ExampleWithRefundOnInnerRefusal() {
	clock := coretest.NewClock(time.Unix(1_699_999_200, 0))
	global := core.MustNew(core.PerMinute(10).WithName("global"), core.WithClock(clock))
	login := core.MustNew(core.PerMinute(1).WithName("login"), core.WithClock(clock))
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})

	mux := http.NewServeMux()
	mux.Handle("/", ok)
	mux.Handle("/login", httpmw.MustNew(login, apiKey).Handler(ok))
	h := httpmw.MustNew(global, apiKey, httpmw.WithRefundOnInnerRefusal()).Handler(mux)

	for _, path := range []string{"/login", "/login", "/login", "/"} {
		r := httptest.NewRequest("POST", path, nil)
		r.Header.Set("X-Api-Key", "k1")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Println(path, w.Code, w.Header().Get("RateLimit"))
	}
	// Output:
	// /login 200 "login";r=0;t=60
	// /login 429 "login";r=0;t=60
	// /login 429 "login";r=0;t=60
	// / 200 "global";r=8;t=12
}

// Refusals are held up to 50ms before the 429 (never longer than their
// Retry-After), at most 100 at once; the observer hears how long.
func ExampleWithDenialHold() {
	lim := core.MustNew(core.PerHour(1).WithName("api"))
	h := httpmw.MustNew(lim, apiKey,
		httpmw.WithDenialHold(50*time.Millisecond, 100),
		httpmw.WithObserver(core.ObserverFunc(func(_ context.Context, e core.Event) {
			fmt.Println(e.Outcome, e.Held)
		})),
	).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))

	for range 2 {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("X-Api-Key", "k1")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Println(w.Code)
	}
	// Output:
	// allowed 0s
	// 200
	// denied 50ms
	// 429
}

// A stack of two limits on every key: RateLimit-Policy lists both, and
// RateLimit describes the one that decided.
func Example_stack() {
	clock := coretest.NewClock(time.Unix(1_699_999_200, 0))
	s, err := core.NewStack([]core.Limit{
		core.PerSecond(2).WithName("burst"),
		core.PerHour(3).WithName("hourly").WithAlgorithm(core.FixedWindow),
	}, core.WithClock(clock))
	if err != nil {
		panic(err)
	}
	h := httpmw.MustNew(s, apiKey).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for i := 0; i < 4; i++ {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("X-Api-Key", "k1")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if i == 0 {
			fmt.Println("RateLimit-Policy:", w.Header().Get("RateLimit-Policy"))
		}
		fmt.Printf("%d %s retry-after=%q\n", w.Code, w.Header().Get("RateLimit"), w.Header().Get("Retry-After"))
		clock.Advance(time.Second)
	}
	// Output:
	// RateLimit-Policy: "burst";q=2;w=1, "hourly";q=3;w=3600
	// 200 "burst";r=1;t=1 retry-after=""
	// 200 "burst";r=1;t=1 retry-after=""
	// 200 "hourly";r=0;t=3598 retry-after=""
	// 429 "hourly";r=0;t=3597 retry-after="3597"
}
