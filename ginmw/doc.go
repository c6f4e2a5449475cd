// Package ginmw puts floodgate limiters in front of Gin routes.
//
// A limiter is a gin.HandlerFunc, so it goes wherever Gin takes one:
// the whole engine, a group, or one route with a stricter policy of its own.
//
//	api := ginmw.New(httpmw.MustNew(apiLimiter, keyfunc.MustClientIP()))
//	r.Use(api)                                            // every route
//	admin := r.Group("/admin", ginmw.New(httpmw.MustNew(adminLimiter, keyfunc.MustClientIP())))
//	r.POST("/login", ginmw.New(httpmw.MustNew(loginLimiter, keyfunc.MustClientIP())), login)
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
// keyfunc.Route reads the net/http ServeMux pattern, which Gin does not set:
// under Gin it falls back to the URL path. To give a route its own quota,
// give it its own limiter, as above.
package ginmw
