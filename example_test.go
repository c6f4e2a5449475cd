package floodgate_test

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

// Example puts a limit of 2 requests a minute per client IP in front of a
// handler and shows the third request refused.
func Example() {
	clock := coretest.NewClock(time.Unix(0, 0))
	lim := core.MustNew(core.PerMinute(2).WithName("demo"), core.WithClock(clock))
	mw, err := httpmw.New(lim, keyfunc.MustClientIP())
	if err != nil {
		panic(err)
	}
	h := mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for i := 0; i < 3; i++ {
		req := httptest.NewRequest("GET", "/", nil)
		req.RemoteAddr = "198.51.100.4:5555"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Printf("%d %s retry-after=%q\n", rec.Code, rec.Header().Get("RateLimit"), rec.Header().Get("Retry-After"))
	}
	// Output:
	// 200 "demo";r=1;t=30 retry-after=""
	// 200 "demo";r=0;t=60 retry-after=""
	// 429 "demo";r=0;t=30 retry-after="30"
}
