package echomw_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/echomw"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/internal/httpmwtest"
)

// BenchmarkOverhead serves a request through a bare Echo route and through
// the same route behind the middleware, installed with Use or on the route
// alone, from 1024 distinct clients in turn, on the system clock. The
// difference is what the middleware costs, including the one allocation
// Echo makes per request when it applies any middleware.
func BenchmarkOverhead(b *testing.B) {
	const clients = 1024
	reqs := httpmwtest.Peers(b, clients, http.MethodGet, "/items", byAddr)
	// An admitting limit that no key's bucket fills up again under (see
	// ginmw's benchmark).
	limit := core.Limit{Events: 1000, Period: time.Second, Burst: 1 << 30, Name: "bench"}
	mw := func() echo.MiddlewareFunc {
		return echomw.New(httpmw.MustNew(core.MustNew(limit, core.WithCapacity(2*clients)), byAddr))
	}
	route := func(c echo.Context) error { return c.NoContent(http.StatusOK) }

	bare := echo.New()
	bare.GET("/items", route)
	use := echo.New()
	use.Use(mw())
	use.GET("/items", route)
	onRoute := echo.New()
	onRoute.GET("/items", route, mw())

	b.Run("echo=bare", func(b *testing.B) { httpmwtest.Benchmark(b, bare, reqs, http.StatusOK) })
	b.Run("echo=use", func(b *testing.B) { httpmwtest.Benchmark(b, use, reqs, http.StatusOK) })
	b.Run("echo=route", func(b *testing.B) { httpmwtest.Benchmark(b, onRoute, reqs, http.StatusOK) })
}
