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
package overload
