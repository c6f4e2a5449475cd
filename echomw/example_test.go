package echomw_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/echomw"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/keyfunc"
)

// A global limit on every route and a stricter one on POST /login: the
// fourth login attempt within a minute is refused with 429, the same bytes
// httpmw writes, with headers that say when to come back.
func Example() {
	clock := coretest.NewClock(time.Unix(1_699_999_200, 0)) // a fake clock, for exact output
	byIP := keyfunc.MustClientIP()

	e := echo.New()
	e.Use(echomw.New(httpmw.MustNew(core.MustNew(core.PerSecond(100).WithName("api"), core.WithClock(clock)), byIP)))
	loginLimit := echomw.New(httpmw.MustNew(core.MustNew(core.PerMinute(3).WithName("login"), core.WithClock(clock)), byIP))
	e.POST("/login", func(c echo.Context) error { return c.String(http.StatusOK, "welcome\n") }, loginLimit)

	login := func() *http.Response {
		w := httptest.NewRecorder()
		e.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/login", nil))
		return w.Result()
	}
	fmt.Println(login().Status, login().Status, login().Status)
	denied := login()
	fmt.Println(denied.Status)
	for _, k := range []string{"Retry-After", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "RateLimit-Policy", "RateLimit"} {
		fmt.Printf("%s: %s\n", k, denied.Header.Get(k))
	}
	// Output:
	// 200 OK 200 OK 200 OK
	// 429 Too Many Requests
	// Retry-After: 20
	// X-RateLimit-Limit: 3
	// X-RateLimit-Remaining: 0
	// X-RateLimit-Reset: 60
	// RateLimit-Policy: "login";q=3;w=60
	// RateLimit: "login";r=0;t=20
}

// With WithHTTPErrors, a refusal is returned to Echo as an *echo.HTTPError,
// so the application's HTTPErrorHandler renders it; the rate-limit headers
// are already on the response.
func ExampleWithHTTPErrors() {
	e := echo.New()
	e.HTTPErrorHandler = func(err error, c echo.Context) {
		if he, ok := err.(*echo.HTTPError); ok {
			_ = c.JSON(he.Code, map[string]any{"error": he.Message, "retry_after": c.Response().Header().Get("Retry-After")})
		}
	}
	l := httpmw.MustNew(core.MustNew(core.PerHour(1).WithName("export")), keyfunc.MustClientIP())
	e.POST("/export", func(c echo.Context) error { return c.NoContent(http.StatusAccepted) }, echomw.New(l, echomw.WithHTTPErrors()))

	for range 2 {
		w := httptest.NewRecorder()
		e.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/export", nil))
		fmt.Println(w.Code)
		fmt.Print(w.Body.String())
	}
	// Output:
	// 202
	// 429
	// {"error":"Too Many Requests","retry_after":"3600"}
}

// The one-liner: each client IP gets 2 requests a minute, in memory.
func ExampleLimitByIP() {
	e := echo.New()
	e.Use(echomw.LimitByIP(core.PerMinute(2)))
	e.GET("/", func(c echo.Context) error { return c.NoContent(http.StatusOK) })
	for range 3 {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.RemoteAddr = "203.0.113.7:51234"
		w := httptest.NewRecorder()
		e.ServeHTTP(w, req)
		fmt.Println(w.Code, w.Header().Get("X-RateLimit-Remaining"))
	}
	// Output:
	// 200 1
	// 200 0
	// 429 0
}
