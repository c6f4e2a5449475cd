// Package ginmw puts floodgate limiters in front of Gin routes.
//
// The common case is one line, as with httpmw.LimitByIP:
//
//	r.Use(ginmw.LimitByIP(core.PerMinute(100)))
//
// Otherwise configure an httpmw.Limiter and hand it to [New]. The result
// is a gin.HandlerFunc, so it goes wherever Gin takes one: the whole
// engine, a group, or one route with a stricter policy of its own.
//
//	byIP := keyfunc.MustClientIP()
//	r.Use(ginmw.New(httpmw.MustNew(apiLimiter, byIP)))   // every route
//	admin := r.Group("/admin", ginmw.New(httpmw.MustNew(adminLimiter, byIP)))
//	r.POST("/login", ginmw.New(httpmw.MustNew(loginLimiter, byIP)), login)
//
// The package is a thin shell around [httpmw]: the options are httpmw's
// (cost, header style, deny and error handlers, skip, problem+json, failure
// mode), and every response, allowed or refused, carries exactly the
// headers and body that httpmw's net/http middleware would write. A refused
// request is answered and the chain is aborted with c.Abort, so no later
// handler runs. On an admitted request the rate-limit headers are set
// before c.Next, so they go out with whatever status the route answers,
// 404 included when the limiter is installed with Use.
//
// The rest of the chain runs inside the middleware's c.Next, so a
// concurrency slot (core.Lease) is given back when it returns or panics.
// With httpmw.WithRefundOnInnerRefusal on the engine's limiter, a route's
// stricter limiter that refuses a request gives the engine-wide charge back
// (the middleware passes on the request whose context records it, as
// c.Request). httpmw.WithLimiterFunc, httpmw.WithDenialHold and
// httpmw.CostByContentLength work here as they do under net/http.
//
// # Keys, and why not c.ClientIP
//
// The key function is required and takes the *http.Request (c.Request), so
// the keyfunc package's functions work as they do under net/http. Gin's own
// c.ClientIP is deliberately not the default: out of the box an Engine
// trusts every peer as a proxy and reads X-Forwarded-For and X-Real-IP from
// anyone, so a client that sends a new made-up address on each request gets
// a fresh quota each time (and can spend a victim's). keyfunc.ClientIP keys
// by the socket peer and reads a proxy header only from the ranges given to
// keyfunc.WithTrustedProxies, walks the one header you name from the right,
// and groups IPv6 clients by /64.
//
// keyfunc.Route keys by the matched route's template (c.FullPath(), such as
// "/users/:id"), which the middleware records in the request's Pattern,
// so /users/1 and /users/2 share one limit; a request that matched no
// route (a 404) keys as its URL path.
package ginmw
