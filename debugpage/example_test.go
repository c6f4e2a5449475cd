package debugpage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/core/coretest"
	"github.com/floodgate/floodgate/debugpage"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/keyfunc"
)

// The page observes an httpmw limiter and is mounted next to the API; a
// real server would put it behind authentication. Here its JSON is read
// after five requests from one client against a burst of three.
func Example() {
	lim := core.MustNew(core.PerMinute(3).WithName("per-client"))
	page, err := debugpage.New(debugpage.WithLimiter("api", lim))
	if err != nil {
		panic(err)
	}
	mw, err := httpmw.New(lim, keyfunc.Header("X-Client"), httpmw.WithObserver(page))
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/api/", mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})))
	mux.Handle("/debug/floodgate/", page) // behind authentication in a real server

	for range 5 {
		req := httptest.NewRequest(http.MethodGet, "/api/items", nil)
		req.Header.Set("X-Client", "alice")
		mux.ServeHTTP(httptest.NewRecorder(), req)
	}

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/floodgate/?format=json", nil))
	var snap debugpage.Snapshot
	if err := json.Unmarshal(rec.Body.Bytes(), &snap); err != nil {
		panic(err)
	}
	fmt.Println("allowed", snap.Totals["allowed"], "denied", snap.Totals["denied"])
	top := snap.RefusedKeys.Keys[0]
	fmt.Println("most refused:", top.Count, "times, key shown redacted:", top.Key == debugpage.Redact("alice"))
	p := snap.Policies[0]
	fmt.Println("policy:", p.Limiter, p.Limits[0].Name, p.Limits[0].Events, "per", p.Limits[0].Period)
	// Output:
	// allowed 3 denied 2
	// most refused: 2 times, key shown redacted: true
	// policy: api per-client 3 per 1m0s
}

// Events can be fed by hand, here on a fake clock, and read back with
// Snapshot.
func ExamplePage_Snapshot() {
	clock := coretest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	page := debugpage.MustNew(debugpage.WithClock(clock), debugpage.WithRawKeys(), debugpage.WithTop(2))
	ctx := context.Background()
	for i := range 30 {
		o := core.OutcomeAllowed
		if i%3 == 0 {
			o = core.OutcomeDenied
		}
		page.Observe(ctx, core.Event{Transport: "http", Outcome: o, Key: fmt.Sprint("client-", i%4)})
		clock.Advance(time.Second / 3)
	}
	s := page.Snapshot()
	fmt.Println("totals:", s.Totals["allowed"], "allowed,", s.Totals["denied"], "denied")
	fmt.Println("denied per second over the last 10 s:", s.Window.PerSecond["denied"])
	for _, k := range s.HotKeys.Keys {
		fmt.Println(k.Key, k.Count, "requests, overestimated by at most", k.Error)
	}
	// Output:
	// totals: 20 allowed, 10 denied
	// denied per second over the last 10 s: 1
	// client-0 8 requests, overestimated by at most 0
	// client-1 8 requests, overestimated by at most 0
}
