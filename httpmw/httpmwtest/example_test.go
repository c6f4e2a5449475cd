package httpmwtest_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/httpmw/httpmwtest"
	"github.com/floodgate/floodgate/keyfunc"
)

// A store that is down, behind the default failure mode: refused with 429
// and Retry-After: 1, and the cause never shown.
func ExampleStoreDown() {
	lim := httpmwtest.StoreDown(errors.New("redis at 10.0.0.7: connection refused"))
	h := httpmw.MustNew(lim, keyfunc.MustClientIP()).Handler(http.NotFoundHandler())

	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	fmt.Println(w.Code, w.Header().Get("Retry-After"))
	fmt.Print(w.Body.String())
	// Output:
	// 429 1
	// Too Many Requests
}
