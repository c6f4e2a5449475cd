package ginmw_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/ginmw"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/internal/httpmwtest"
)

// BenchmarkOverhead serves a request through a bare Gin route and through
// the same route behind the middleware, installed with Use or on the route
// alone, from 1024 distinct clients in turn, on the system clock. The
// difference is what the middleware costs.
func BenchmarkOverhead(b *testing.B) {
	gin.SetMode(gin.ReleaseMode)
	const clients = 1024
	reqs := httpmwtest.Peers(b, clients, http.MethodGet, "/items", byAddr)
	// The limit admits every request, so each gets the full set of
	// headers, and no key's bucket fills up again during the run (core
	// would drop the key and re-insert it on its next visit, which measures
	// core rather than the adapter).
	limit := core.Limit{Events: 1000, Period: time.Second, Burst: 1 << 30, Name: "bench"}
	mw := func() gin.HandlerFunc {
		return ginmw.New(httpmw.MustNew(core.MustNew(limit, core.WithCapacity(2*clients)), byAddr))
	}
	route := func(c *gin.Context) { c.Status(http.StatusOK) }

	bare := gin.New()
	bare.GET("/items", route)
	use := gin.New()
	use.Use(mw())
	use.GET("/items", route)
	onRoute := gin.New()
	onRoute.GET("/items", mw(), route)

	b.Run("gin=bare", func(b *testing.B) { httpmwtest.Benchmark(b, bare, reqs, http.StatusOK) })
	b.Run("gin=use", func(b *testing.B) { httpmwtest.Benchmark(b, use, reqs, http.StatusOK) })
	b.Run("gin=route", func(b *testing.B) { httpmwtest.Benchmark(b, onRoute, reqs, http.StatusOK) })
}
