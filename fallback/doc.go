// Package fallback makes any core.Limiter "fail local": a [Limiter] asks a
// primary limiter, in practice one backed by a store the fleet shares
// (Redis), and while the primary fails it decides with a local, in-memory
// limiter instead, behind a circuit breaker so that no request waits on a
// primary that is down.
//
// Use it where neither failure mode of the adapters fits an outage of the
// store: FailOpen admits everything (no limit at all while Redis is down),
// FailClosed refuses everything (an outage of the limiter becomes an outage
// of the service). Here requests go on being limited, by each process on
// its own:
//
//	shared, err := redisLimiter(...) // any core.Limiter whose store can fail
//	...
//	local, err := core.New(core.PerSecond(100 / instances))
//	...
//	lim, err := fallback.New(shared, local)
//	...
//	mw, err := httpmw.New(lim, byIP)
//
// # What a degraded fleet admits
//
// While the primary is down, every instance admits up to its own local
// limit, so a fleet of N instances admits up to N times the local limit,
// and a client's requests spread over instances get each one's quota. Set
// the local limit to the shared one divided by the instance count to keep
// the fleet near the shared limit (clients pinned to one instance then get
// less), or to the shared limit itself to keep every client's quota
// (the fleet then admits up to N times as much). Decisions made locally
// carry the local limiter's Limit, so rate-limit headers describe the local
// policy while degraded.
//
// # The breaker
//
// Closed: the primary decides, under a context that ends after
// [WithTimeout] (500 ms by default; a caller's earlier deadline wins). A
// store failure (errors.Is(err, core.ErrStore)) or the timeout is answered
// by the local limiter, so the caller gets a decision and never the error,
// and is counted as a failure; a decision the primary makes is counted as
// a success. The primary's other errors, such as core.ErrInvalidCost, are
// returned unchanged and not counted, and so is every error once the
// caller's own context has ended (a caller that gave up says nothing about
// the primary). The breaker opens when, over the last 10 s, at least 20
// calls were counted and at least half of them failed, or when every call
// counted over the last one to two seconds failed, three at least
// ([WithBreaker] and [BreakerConfig] give the rules and the defaults). So
// a primary that fails now and then, or a pause of the process that fails
// the calls in flight at once, does not open it, while a primary that is
// down or hangs opens it within about two seconds. Keep the timeout below
// the deadlines callers set: a primary that hangs past a caller's deadline
// but within the timeout is never counted, and never opens the breaker.
//
// Open: the local limiter decides and the primary is not called, for
// OpenFor (1 s by default). Then the breaker is HalfOpen.
//
// HalfOpen: one request at a time probes the primary, under the same
// timeout, so it waits no longer than a request while closed; the others
// are decided locally and never wait for it. A probe the primary answers
// closes the breaker, and the counting starts afresh. A failed probe opens
// it again for twice the previous period, up to MaxOpenFor (4 s by
// default): 1 s, 2 s, 4 s, 4 s..., so that a long outage costs one probe
// every 4 s. A probe whose caller gives up, or that the primary refuses for
// a reason of its own (a bad cost), hands the probe to the next request.
//
// So once the primary is back, the primary decides again within
// MaxOpenFor (4 s by default) plus the next request's round trip: the
// breaker was opened at most MaxOpenFor earlier, and the first request
// after that probes.
//
// The breaker's window and periods read the clock set by [WithClock];
// timeouts are context deadlines on real time, and cut only a primary that
// honours its context, as Redis clients do.
//
// A redisstore.Limiter has the same breaker built in, on by default, with
// the same defaults, counting its round trips to each server. Wrapped
// here, both work together: while the primary's own breaker is open, its
// calls fail at once with a store error (redisstore.ErrCircuitOpen), which
// this breaker answers locally and counts like any other failure.
//
// # Cost
//
// While the breaker is closed, the wrapper's own work per request is one
// atomic load of the breaker's state, one clock reading and one atomic add
// to count the outcome, and one atomic add to a counter: no lock, no
// allocation. The timeout costs more. When the caller's context already
// ends within the timeout, it is passed on as it is, after one monotonic
// clock read, and the wrapper allocates nothing. Otherwise the primary
// gets a context.WithTimeout, with its allocations (4, 272 bytes with Go
// 1.26) and its timer: small beside a round trip to Redis, but not free.
// Contexts are not pooled, because core.Limiter does not forbid a primary
// to keep its context after Allow returns.
//
// # Refunds
//
// Refund goes to the limiter that decides at the time of the refund (the
// primary while closed and answering, the local limiter otherwise). A
// charge made on one side and refunded on the other is not given back: a
// refund is exact only if the breaker did not change state in between.
//
// # Reporting
//
// [Limiter.State] and [Limiter.Stats] read the breaker's state and its
// counters (decisions by side, primary failures, openings) at any time;
// [WithObserver] is told of each decision, failure and change of state as
// it happens, for logs and metrics.
package fallback
