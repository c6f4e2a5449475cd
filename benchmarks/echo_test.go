package benchmarks

import (
	"net/http"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	echomiddleware "github.com/labstack/echo/v4/middleware"
	"golang.org/x/time/rate"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/echomw"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/keyfunc"
)

// The Echo rows: Echo v4's router serving the benchmark's route, bare and
// behind a limiter installed with Use, so that the limiter's overhead is
// taken over the router's own cost (Echo allocates per request once any
// middleware is installed: that is part of every Echo limiter's overhead).

// echoRoute answers as the bare handler does.
func echoRoute(c echo.Context) error { return c.NoContent(http.StatusOK) }

// echoServer returns an Echo router with mws installed by Use and the
// benchmark's route.
func echoServer(mws ...echo.MiddlewareFunc) http.Handler {
	e := echo.New()
	e.Use(mws...)
	e.GET("/api/items", echoRoute)
	return e
}

func newEchoBare(testing.TB, int, int) http.Handler { return echoServer() }

// newEchoLimiter is Echo's own rate limiter middleware on its memory store
// (a map of x/time/rate limiters under one mutex, keyed by Echo's RealIP:
// no proxy header is present here, so the socket peer), with its defaults
// but the policy. It writes no header on an admitted request.
func newEchoLimiter(tb testing.TB, events, burst int) http.Handler {
	store := echomiddleware.NewRateLimiterMemoryStoreWithConfig(echomiddleware.RateLimiterMemoryStoreConfig{
		Rate:      rate.Limit(float64(events) / period.Seconds()),
		Burst:     burst,
		ExpiresIn: 3 * time.Minute, // its default
	})
	return echoServer(echomiddleware.RateLimiterWithConfig(echomiddleware.RateLimiterConfig{Store: store}))
}

// newEchomw is floodgate's echomw in the same router, as a comparison with
// Echo's limiter on equal footing, with httpmw's options opts.
func newEchomw(alg core.Algorithm, opts ...httpmw.Option) func(testing.TB, int, int) http.Handler {
	return func(tb testing.TB, events, burst int) http.Handler {
		lim, err := core.New((core.Limit{Events: events, Period: period, Burst: burst, Name: "bench"}).WithAlgorithm(alg))
		if err != nil {
			tb.Fatal(err)
		}
		l, err := httpmw.New(lim, keyfunc.MustClientIP(), opts...)
		if err != nil {
			tb.Fatal(err)
		}
		return echoServer(echomw.New(l))
	}
}
