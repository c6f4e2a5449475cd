package httpmw_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/overload"
)

// A service whose clients back off on 429 only answers its sheds 429 too,
// with a deny handler (the default answers a shed 503). Retry-After is set
// before the handler runs, for sheds as for rate-limit refusals.
func ExampleDenyHandler_shedAs429() {
	guard, err := overload.NewAdaptive(overload.AdaptiveConfig{InitialLimit: 1, MinLimit: 1, MaxLimit: 1})
	if err != nil {
		panic(err)
	}
	l := httpmw.MustNew(guard, apiKey, httpmw.WithDenyHandler(func(w http.ResponseWriter, r *http.Request, d core.Decision) {
		msg := "quota exhausted" // a rate limit's refusal, were one stacked here
		if d.Shed {
			msg = "overloaded"
		}
		http.Error(w, msg, http.StatusTooManyRequests)
	}))
	h := l.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))

	// Another request holds the guard's only slot.
	held, _ := guard.Allow(context.Background(), "other", 1)

	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("X-Api-Key", "k1")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	fmt.Println(w.Code, w.Body.String() == "overloaded\n", w.Header().Get("Retry-After") != "")

	_ = held.Lease.Release(context.Background())
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	fmt.Println(w.Code)
	// Output:
	// 429 true true
	// 200
}
