// Package overload is for protecting a service from itself: where a rate
// limit (core) keeps each client to its quota, overload protection keeps
// the whole service within its capacity, however many clients there are.
//
// A request's [Priority] says what to shed first under overload, the
// lowest first. [NewContext] puts it in the request's context and
// [PriorityOf] reads it.
//
// [Protect] puts a client's quota and an overload guard in one
// core.Limiter, for one adapter to do both: the quota first, so that a
// request the guard sheds (a core.Decision with Shed set, which every
// adapter answers as unavailable: HTTP 503, gRPC UNAVAILABLE, with a
// Retry-After) is not charged to the client's quota.
//
// [BBR] sheds load when the CPU is busy, as kratos and Sentinel do: past
// a threshold of CPU use (0.8), a request is admitted only while the
// requests in flight are fewer than the best throughput times the least
// latency seen over the last 10 s, lowest priorities first. Its CPU
// signal is injected, or read by [CPU] from this process's cgroup (v1 or
// v2, fractional quotas, cpusets), which passes 0.8 within a second of a
// step from idle to saturated.
//
// On the client side, a [Throttle] (Google SRE's adaptive throttling)
// rejects some of a client's requests before they are sent once its
// backend refuses too many, so that a fleet of clients stops hammering a
// backend that is shedding load; httpclient and grpcclient take one
// (WithThrottle). A request it rejects is not sent and fails with an
// error matching [ErrThrottled].
//
// # Adaptive concurrency
//
// [NewAdaptive] returns a concurrency limit that finds the service's
// capacity from the latencies of the requests it admits, with nothing to
// tune: [Adaptive] admits while fewer than its limit are in flight, and
// every window (at least 16 requests and twice the last mean latency)
// moves the limit by the gradient g of the window's mean latency against
// a baseline, the latency without a queue: L' = L × g, with
// g = 1.1 × baseline / mean (held at 1 while the mean is within about a
// standard error of that target), at most halving and doubling, within a
// floor and a ceiling (2 and 1000 by default). In a queue the latency
// grows as the limit does, so the limit settles at about 1.1 × the
// capacity: every worker busy, a short queue. Under a sustained
// overload, at a limit of 16 or more, it is then held at 1.055 × a
// running estimate of the knee (limit × baseline / mean, once 8 windows
// agree), rather than following each window's noise. A dropped request (a
// timeout, core.EndDropped) lowers it whatever its latency. It starts
// at its floor, so that its first baseline is measured with hardly any
// queue and hardly a core shared, and a slow start doubles it each
// window that refuses with the latency flat, until the latency shows
// the knee: from a cold start, within 10 to 20 latencies.
//
// The baseline is what such limits get wrong: Netflix's Gradient2 lets it
// creep up under a sustained overload, Envoy's filter pins the limit low
// every so often to measure it. Here it moves with the windows that
// refuse nothing (the service as it is at a low load) and never with a
// window that refuses, so an overload cannot lift it. Two rules cover
// what an overload hides: when halving the limit leaves the latency
// where it was, the service itself got slower, and the baseline is
// rebased to it; and after 64 windows that refused, three run at the
// limit / 1.21, the last two measuring the service near its capacity,
// to bring a stale baseline back (a probe that runs only while
// requests are being shed anyway, and never pins the limit to a floor).
//
// A request's [Priority] sets how full it may find the service, counting
// the requests in flight of its priority and higher ones only:
// Sheddable requests are admitted below 2/3 of the limit, Normal ones
// below the limit, Critical ones below 4/3 of it (or of the mean limit of
// the last 8 windows, if higher), so that the lowest are shed first, a
// lower class in flight never makes a higher one shed, and a dip of the
// limit does not shed critical requests.
// Within a priority below Critical, once it is more than 3/4 full, a
// tenant (Allow's key) may hold at most its fair share of the room the
// higher priorities leave, ceil(room / tenants in flight): one that
// floods the service is shed before the others. [Adaptive.Acquire] (and
// [Adaptive.AcquireKey], with the tenant shares) admits with a Token, for
// code that ends each admission exactly once; Allow's Lease ends at most
// once however often it is ended. Neither allocates.
package overload
