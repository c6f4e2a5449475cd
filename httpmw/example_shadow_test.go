package httpmw_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/internal/coretest"
)

// A new limit of 2 requests a minute tried in shadow mode: every request
// is served, and the observer counts the ones the limit would refuse.
func Example_shadow() {
	clock := coretest.NewClock(time.Unix(1_699_999_200, 0))
	trial := core.MustNew(core.PerMinute(2).WithName("trial"), core.WithClock(clock))
	wouldRefuse := 0
	obs := core.ObserverFunc(func(_ context.Context, e core.Event) {
		if e.Shadow && e.Outcome == core.OutcomeDenied {
			wouldRefuse++
		}
	})
	l, err := httpmw.New(trial, apiKey, httpmw.WithShadow(), httpmw.WithObserver(obs))
	if err != nil {
		panic(err)
	}
	h := l.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for range 5 {
		req := httptest.NewRequest("GET", "/", nil)
		req.Header.Set("X-Api-Key", "alice")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Println(rec.Code, "fields:", len(rec.Header().Values("RateLimit")))
	}
	fmt.Println("would have refused:", wouldRefuse)
	// Output:
	// 200 fields: 0
	// 200 fields: 0
	// 200 fields: 0
	// 200 fields: 0
	// 200 fields: 0
	// would have refused: 3
}
