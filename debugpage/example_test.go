package debugpage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/debugpage"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/keyfunc"
)

// The page observes an httpmw limiter and is mounted next to the API; a
// real server would put it behind authentication (examples/operations
// does). Here its JSON is read after five requests from one client
// against a burst of three.
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
	// The fields this program reads; the package documentation lists all.
	var snap struct {
		Totals      map[string]uint64 `json:"totals"`
		RefusedKeys struct {
			Keys []struct {
				Key   string `json:"key"`
				Count uint64 `json:"count"`
			} `json:"keys"`
		} `json:"refused_keys"`
		Policies []struct {
			Limiter string `json:"limiter"`
			Limits  []struct {
				Name   string `json:"name"`
				Events int    `json:"events"`
				Period string `json:"period"`
			} `json:"limits"`
		} `json:"policies"`
	}
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

// Keys shown as a lookup of the caller's gives them, here a tenant's name
// rather than its API key.
func ExampleWithKeyRedaction() {
	tenants := map[string]string{"sk_live_8f2a": "acme", "sk_live_77c1": "globex"}
	page := debugpage.MustNew(debugpage.WithKeyRedaction(func(key string) string {
		if name, ok := tenants[key]; ok {
			return name
		}
		return debugpage.Redact(key)
	}))
	for _, key := range []string{"sk_live_8f2a", "sk_live_8f2a", "sk_live_77c1"} {
		page.Observe(context.Background(), core.Event{Transport: "http", Outcome: core.OutcomeDenied, Key: key, Cost: 1})
	}
	rec := httptest.NewRecorder()
	page.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/?format=json", nil))
	var snap struct {
		KeyForm     string `json:"key_form"`
		RefusedKeys struct {
			Keys []struct {
				Key   string `json:"key"`
				Count uint64 `json:"count"`
			} `json:"keys"`
		} `json:"refused_keys"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &snap); err != nil {
		panic(err)
	}
	fmt.Println("keys:", snap.KeyForm)
	for _, k := range snap.RefusedKeys.Keys {
		fmt.Println(k.Key, k.Count)
	}
	// Output:
	// keys: custom
	// acme 2
	// globex 1
}
