package httpmw_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/keyfunc"
)

// apiKey keys requests by their X-Api-Key header; a request without one is
// answered 500 by the default error handler.
var apiKey = keyfunc.Header("X-Api-Key")

// A limit of 3 requests a minute per API key: the fourth request is refused
// with 429 and headers that say when to come back.
func Example() {
	clock := coretest.NewClock(time.Unix(1_699_999_200, 0)) // a fake clock, for exact output
	lim := core.MustNew(core.PerMinute(3).WithName("api"), core.WithClock(clock))

	l, err := httpmw.New(lim, apiKey)
	if err != nil {
		panic(err)
	}
	h := l.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello")
	}))

	for i := 1; i <= 4; i++ {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("X-Api-Key", "k1")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Println(i, w.Code, w.Header().Get("RateLimit"))
	}

	// The last response in full:
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("X-Api-Key", "k1")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	for _, k := range []string{"Retry-After", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "RateLimit-Policy", "RateLimit"} {
		fmt.Printf("%s: %s\n", k, w.Header().Get(k))
	}
	fmt.Print(w.Body.String())
	// Output:
	// 1 200 "api";r=2;t=20
	// 2 200 "api";r=1;t=40
	// 3 200 "api";r=0;t=60
	// 4 429 "api";r=0;t=20
	// Retry-After: 20
	// X-RateLimit-Limit: 3
	// X-RateLimit-Remaining: 0
	// X-RateLimit-Reset: 60
	// RateLimit-Policy: "api";q=3;w=60
	// RateLimit: "api";r=0;t=20
	// Too Many Requests
}

// Denials as RFC 9457 problem details, on one endpoint.
func ExampleProblemDetails() {
	lim := core.MustNew(core.PerHour(1).WithName("daily-export"))
	l, err := httpmw.New(lim, apiKey, httpmw.WithDenyHandler(httpmw.ProblemDetails))
	if err != nil {
		panic(err)
	}
	export := l.Handler(http.NotFoundHandler())
	var w *httptest.ResponseRecorder
	for range 2 {
		r := httptest.NewRequest("POST", "/export", nil)
		r.Header.Set("X-Api-Key", "k1")
		w = httptest.NewRecorder()
		export.ServeHTTP(w, r)
	}
	fmt.Println(w.Code, w.Header().Get("Content-Type"))
	fmt.Print(w.Body.String())
	// Output:
	// 429 application/problem+json
	// {"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Request cannot be satisfied as assigned quota has been exceeded","status":429,"detail":"The quota of policy \"daily-export\" (1 per hour) is exhausted; retry after the number of seconds in the Retry-After header.","violated-policies":["daily-export"]}
}

// An adapter that renders denials itself (as Echo returns an *echo.HTTPError)
// calls Check; the headers still come from the Limiter.
func ExampleLimiter_Check() {
	lim := core.MustNew(core.PerMinute(1))
	l := httpmw.MustNew(lim, apiKey)

	serve := func(w http.ResponseWriter, r *http.Request) error {
		a, err := l.Check(w.Header(), r)
		switch {
		case a.Admitted():
			defer a.End()
			return nil // serve a.Request()
		case err != nil:
			return fmt.Errorf("status %d", a.Status())
		}
		return fmt.Errorf("rate limited: %d", a.Status()) // the framework renders it
	}

	for _, key := range []string{"k1", "k1", ""} {
		r := httptest.NewRequest("GET", "/", nil)
		if key != "" {
			r.Header.Set("X-Api-Key", key)
		}
		w := httptest.NewRecorder()
		err := serve(w, r)
		fmt.Printf("err=%v Retry-After=%q\n", err, w.Header().Get("Retry-After"))
	}
	// Output:
	// err=<nil> Retry-After=""
	// err=rate limited: 429 Retry-After="60"
	// err=status 400 Retry-After=""
}

// The one-liner: each client IP gets 2 requests a minute, in memory.
func ExampleLimitByIP() {
	h := httpmw.LimitByIP(core.PerMinute(2))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for range 3 {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = "203.0.113.7:51234"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Println(w.Code, w.Header().Get("X-RateLimit-Remaining"))
	}
	// Output:
	// 200 1
	// 200 0
	// 429 0
}
