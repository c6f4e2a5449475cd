package httpmwtest_test

import (
	"fmt"
	"net/http"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/internal/httpmwtest"
	"github.com/floodgate/floodgate/keyfunc"
)

// A Writer keeps what a handler answered, without a recorder's
// allocations, and is reused after Reset.
func ExampleWriter() {
	lim := core.MustNew(core.PerMinute(1).WithName("api"))
	h := httpmw.MustNew(lim, keyfunc.Constant("everyone")).Handler(http.NotFoundHandler())
	r, _ := http.NewRequest("GET", "/", nil)
	w := httpmwtest.NewWriter()
	for range 2 {
		w.Reset()
		h.ServeHTTP(w, r)
		fmt.Println(w.Code, w.Header().Get("RateLimit"))
	}
	// Output:
	// 404 "api";r=0;t=60
	// 429 "api";r=0;t=60
}
