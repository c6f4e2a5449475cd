// Package httpmw puts floodgate limiters in front of net/http handlers, and
// holds the request logic the Gin and Echo adapters reuse, so that all of
// them answer with the same bytes.
//
// A [Limiter] pairs a core.Limiter with a key function, which is required
// so that every call site says what it limits by:
//
//	lim, err := core.New(core.PerSecond(5).WithName("api"))
//	...
//	byIP, err := keyfunc.ClientIP() // the socket peer; see its options for proxies
//	...
//	l, err := httpmw.New(lim, byIP)
//	...
//	http.ListenAndServe(addr, l.Handler(mux))
//
// The common case fits on one line, as users of go-chi/httprate know it
// (ginmw.LimitByIP and echomw.LimitByIP are the same for Gin and Echo):
//
//	http.ListenAndServe(addr, httpmw.LimitByIP(core.PerMinute(100))(mux))
//
// For one endpoint with its own policy, give it its own Limiter:
// mux.Handle("POST /login", login.Handler(loginHandler)). For a limit per
// route, key by keyfunc.Route and put the Limiter on the routes, where the
// ServeMux has recorded the matched pattern. ginmw and echomw are built on
// [Limiter.Enter] and [Limiter.Check], which adapters of your own can use
// too.
//
// The options that grpcmw has too (WithSkip, WithCost, WithFailureMode,
// WithHeaders, WithObserver, WithDenialHold, WithRefundOnInnerRefusal,
// WithLimiterFunc, WithShadow) have the same names and meaning there; the
// failure modes and header styles are core's (core.FailOpen,
// core.HeadersIETF).
//
// # What responses carry
//
// Every limited response, allowed or denied and whatever its status, carries
// headers computed from the core.Decision only (never from the request): the
// legacy X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset, and
// the RateLimit-Policy and RateLimit fields of
// draft-ietf-httpapi-ratelimit-headers-10 ([WithHeaders] picks the style;
// both by default). They are set before the next handler runs:
//
//	X-RateLimit-Limit:     d.Limit.Events
//	X-RateLimit-Remaining: d.Remaining
//	X-RateLimit-Reset:     ceil(d.ResetAfter) in seconds from now
//	RateLimit-Policy:      "name";q=<Events>;w=<ceil(Period) in seconds, >= 1>
//	RateLimit:             "name";r=<Remaining>;t=<ceil(RetryAfter) if denied, else ceil(ResetAfter)>
//	Retry-After:           ceil(d.RetryAfter) in seconds, >= 1 (denials only)
//
// where name is d.Limit.Name, or "default" when empty; a name core would
// refuse (a custom core.Limiter's) is sent as printable ASCII and cut to
// 72 bytes. When the limiter is a stack of limits (core.PolicyLister),
// RateLimit-Policy lists every policy, in order, and the other headers
// describe d.Limit, the policy that decided. grpcmw sends the same values
// as metadata.
//
// A refused request gets 429 Too Many Requests with Retry-After (whole
// seconds, at least 1, never earlier than the RateLimit t parameter) and a
// plain-text body, or whatever a [WithDenyHandler] handler writes, such as
// [ProblemDetails]'s RFC 9457 problem+json body.
//
// When no decision can be made, the error handler answers, telling the
// client's faults from the server's: a request without a usable key (a
// missing API-key header) is a 400 (an [ErrorHandler] can make it a 401),
// oversize key material a 431, an invalid cost a 400 and a cost above what
// the limit can ever admit a 413 that says retrying will not help; a key or
// cost function that fails is a 500 without the error's text; and a store
// failure follows the failure mode: refused with 429 and Retry-After: 1 by
// default, or admitted with core.FailOpen. A cost of 0 means free: the
// request passes uncounted. [Limiter.Enter] explains each default; grpcmw
// answers the same cases with the matching gRPC codes.
//
// # Observing
//
// [WithObserver] reports every request that is not skipped to a
// core.Observer: allowed, shaped, denied (and whether the shared overflow
// state decided), bad key, bad cost, server fault, store error with the
// failure mode applied. Without one nothing is called and nothing is paid.
//
// A shaping limiter can admit a request with a delay; the middleware holds
// the request that long, and if the client goes away first it refunds the
// units and answers through the error handler.
//
// # Shadow mode
//
// Under [WithShadow] every request is decided, charged and observed
// (core.Event.Shadow), never enforced: every request goes on to the
// handler, with no shaping wait and no held denial, and neither a store
// error nor a bad key stops it. Its response carries the rate-limit fields
// only when [WithHeaders] is given too, and never Retry-After. To enforce
// one limit and measure another, chain two middlewares.
//
// # Concurrency limits, layers, stacks and choices
//
// A concurrency limiter admits a request with a core.Lease, its slot among
// the requests in flight. The middleware gives the slot back when the
// request ends, however it ends: the handler returns, panics (the slot is
// given back and the panic goes on) or returns early because the client
// went away, or the client goes away during a shaping wait. Releases run
// under a context that is not cancelled. [Limiter.Handler], ginmw and
// echomw do this through [Limiter.Enter] and [Admission.End]; adapters of
// your own should too.
//
// Middlewares nest: a global limiter on the router and a stricter one on
// /login both charge a login. With [WithRefundOnInnerRefusal] on the outer
// one, a request the inner one refuses gives the outer charge back, so
// refused logins do not also spend the global quota; the same option on a
// grpcmw Limiter does it for interceptor chains. It is opt-in because
// recording the charge costs an allocation per admitted request.
//
// A limiter that enforces several limits at once (core.PolicyLister) has
// every policy listed in RateLimit-Policy, in order, while RateLimit and
// X-RateLimit-* describe the one that decided (Decision.Limit), at no extra
// allocation. [WithLimiterFunc] chooses the limiter per request (reads and
// writes, free and paid keys); [CostByContentLength] prices a request by
// its body for byte quotas; [WithDenialHold] holds refusals briefly before
// answering, so that clients retrying in a tight loop retry less often.
//
// # Cost
//
// A request through the middleware allocates nothing in the middleware or
// in core's decision on most requests (BenchmarkOverhead reports 0
// allocs/op with the in-memory limiter, both header styles, a key function
// that returns the RemoteAddr; keyfunc.ClientIP adds the key's own string).
// Writing the headers allocates nothing on most requests: the policy's
// constant text is formatted once per Limit, the per-request numbers are
// formatted once into one buffer and sliced out, header keys go into the map
// in canonical form without http.Header.Set, the values that repeat (the
// limit, the policy, numbers below 1024) are read-only slices shared by
// every response, and the others are carved from slabs (one allocation per
// ~40 requests; no two responses share storage that is not read-only: set
// headers with Set or Add, which never write into a value in place).
// bench_test.go measures the middleware against a
// bare handler. [WithRefundOnInnerRefusal] adds, per admitted request, a
// copy of the *http.Request and a record of the charge (two allocations,
// measured in BenchmarkLayered).
package httpmw
