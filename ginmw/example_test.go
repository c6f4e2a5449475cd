package ginmw_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/ginmw"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/keyfunc"
)

// A global limit on every route and a stricter one on POST /login: the
// fourth login attempt within a minute is refused with 429 and headers that
// say when to come back.
func Example() {
	gin.SetMode(gin.ReleaseMode)
	clock := coretest.NewClock(time.Unix(1_699_999_200, 0)) // a fake clock, for exact output
	byIP := keyfunc.MustClientIP()

	r := gin.New()
	r.Use(ginmw.New(httpmw.MustNew(core.MustNew(core.PerSecond(100).WithName("api"), core.WithClock(clock)), byIP)))
	loginLimit := ginmw.New(httpmw.MustNew(core.MustNew(core.PerMinute(3).WithName("login"), core.WithClock(clock)), byIP))
	r.POST("/login", loginLimit, func(c *gin.Context) { c.String(http.StatusOK, "welcome\n") })

	var w *httptest.ResponseRecorder
	for i := 1; i <= 4; i++ {
		req := httptest.NewRequest(http.MethodPost, "/login", nil)
		req.RemoteAddr = "203.0.113.7:51234"
		w = httptest.NewRecorder()
		r.ServeHTTP(w, req)
		fmt.Println(i, w.Code, w.Header().Get("RateLimit"))
	}
	fmt.Println("Retry-After:", w.Header().Get("Retry-After"))
	fmt.Print(w.Body.String())
	// Output:
	// 1 200 "login";r=2;t=20
	// 2 200 "login";r=1;t=40
	// 3 200 "login";r=0;t=60
	// 4 429 "login";r=0;t=20
	// Retry-After: 20
	// Too Many Requests
}

// The one-liner: each client IP gets 2 requests a minute, in memory.
func ExampleLimitByIP() {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.Use(ginmw.LimitByIP(core.PerMinute(2)))
	r.GET("/", func(c *gin.Context) { c.Status(http.StatusOK) })
	for range 3 {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.RemoteAddr = "203.0.113.7:51234"
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		fmt.Println(w.Code, w.Header().Get("X-RateLimit-Remaining"))
	}
	// Output:
	// 200 1
	// 200 0
	// 429 0
}
