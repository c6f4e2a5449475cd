// Package echomw puts floodgate limiters in front of Echo v4 routes.
//
// The common case is one line, as with httpmw.LimitByIP:
//
//	e.Use(echomw.LimitByIP(core.PerMinute(100)))
//
// Otherwise configure an httpmw.Limiter and hand it to [New]; the result
// is an echo.MiddlewareFunc for e.Use, a group, or one route:
//
//	byIP := keyfunc.MustClientIP()
//	e.Use(echomw.New(httpmw.MustNew(apiLimiter, byIP)))
//	e.POST("/login", login, echomw.New(httpmw.MustNew(loginLimiter, byIP)))
//
// The package is a thin shell around [httpmw]: the Limiter's options are
// httpmw's (cost, header style, deny and error handlers, skip,
// problem+json, failure mode), and New takes what Echo users expect of a
// middleware beside them: a Skipper on the echo.Context ([WithSkip])
// and errors returned to Echo ([WithHTTPErrors]). By default every
// response, allowed or refused, carries exactly the headers and body that
// httpmw's net/http middleware would write, and a refusal is written by
// the middleware itself. With WithHTTPErrors a refusal is returned as an
// *echo.HTTPError instead,
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
// keyfunc.Route keys by the matched route's template (c.Path(), such as
// "/users/:id"), which the middleware records in the request's Pattern,
// so /users/1 and /users/2 share one limit; a request that matched no
// route keys as its URL path.
//
// # Cost
//
// The middleware costs what httpmw's does (see bench_test.go), plus one
// small allocation per request that is Echo's: it applies middleware to
// the handler anew on every request, for e.Use and per-route alike.
package echomw
