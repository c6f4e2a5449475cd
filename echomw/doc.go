// Package echomw puts floodgate limiters in front of Echo v4 routes.
//
// It follows Echo's middleware conventions: a [Config] with a Skipper,
// [DefaultConfig], and [NewWithConfig] beside the short [New]. The result
// is an echo.MiddlewareFunc for e.Use, a group, or one route:
//
//	e.Use(echomw.New(httpmw.MustNew(apiLimiter, keyfunc.MustClientIP())))
//	e.POST("/login", login, echomw.New(httpmw.MustNew(loginLimiter, keyfunc.MustClientIP())))
//
// The package is a thin shell around [httpmw]: Config.Options are httpmw's
// options (cost, header style, deny and error handlers, skip, problem+json,
// failure mode). By default every response, allowed or refused, carries
// exactly the headers and body that httpmw's net/http middleware would
// write, and a refusal is written by the middleware itself. With
// Config.HTTPErrors a refusal is returned as an *echo.HTTPError instead,
// with the rate-limit headers and Retry-After already set on the response,
// so that the application's HTTPErrorHandler renders it like its other
// errors.
//
// A concurrency slot (core.Lease) is given back when the next handler
// returns or panics, in both modes. With httpmw.WithRefundOnInnerRefusal
// on the e.Use limiter, a route's stricter limiter that refuses a request
// gives the global charge back (the middleware passes on the request whose
// context records it, with c.SetRequest). httpmw.WithLimiterFunc,
// httpmw.WithDenialHold and httpmw.CostByContentLength work as they do
// under net/http.
//
// # Keys, and why not c.RealIP
//
// The key function is required and takes the *http.Request
// (c.Request()), so the keyfunc package's functions work as they do under
// net/http. Echo's c.RealIP, which Echo's own rate limiter uses by default,
// is deliberately not: unless the application sets Echo.IPExtractor it
// returns the first X-Forwarded-For address, or X-Real-IP, from any
// client, so a client that sends a new made-up address on each request gets
// a fresh quota each time (and can spend a victim's). keyfunc.ClientIP keys
// by the socket peer and reads a proxy header only from the ranges given to
// keyfunc.WithTrustedProxies, walking it from the right.
//
// keyfunc.Route reads the net/http ServeMux pattern, which Echo does not
// set: under Echo it falls back to the URL path. To give a route its own
// quota, give it its own middleware, as above.
//
// # Cost
//
// The middleware costs what httpmw's does (see bench_test.go), plus one
// small allocation per request that is Echo's: it applies middleware to
// the handler anew on every request, for e.Use and per-route alike.
package echomw
