// Package core is floodgate's framework-agnostic engine: it decides whether a
// key may spend some units of quota now.
//
// A [Limit] is a policy (Events per Period, a Burst, a Name), built with
// [PerSecond], [PerMinute], [PerHour], [PerDay], [Every] or read from a
// configuration string by [ParseLimit] ("100/s", "1000/h burst=50",
// "10/s name=login"). [New] returns a [Keyed] limiter that applies one Limit
// to every key separately, in memory, with one of six algorithms:
//
//   - [TokenBucket] (the default): golang.org/x/time/rate's arithmetic and
//     decisions, per key; with [WithOverdraft] it lends a request more than
//     is left while the bucket is not in debt.
//   - [GCRA]: the same admissions in integer nanoseconds.
//   - [FixedWindow]: Events per clock-aligned window.
//   - [SlidingWindow]: the sliding-window counter (previous window weighted by
//     its overlap).
//   - [LeakyBucket]: a shaper: requests leave one interval apart, each
//     admitted with the Delay it waits for its turn, up to [WithMaxDelay].
//   - [WarmUp]: Guava's SmoothWarmingUp: an idle key is cold and starts
//     slow, reaching the full rate over the period [WithWarmUp] sets.
//
// Every algorithm keeps 16 bytes of state per key; the table holding them is
// bounded (see [WithCapacity] and [FullPolicy]), so memory never grows past
// what you configure, about 120 bytes per tracked key (measured by
// BenchmarkMemoryPerKey). Keys whose quota is whole again are dropped first,
// wherever they sit in the table, at amortised constant cost per new key.
//
// Limiters read the clock as nanoseconds since the Unix epoch and accept
// readings from 0 to 2⁶²−1 (1970 to 2116), so that no time arithmetic can
// overflow; outside that range a check fails with [ErrClockRange].
//
// Every check returns a [Decision]: whether it was allowed, the deciding
// Limit, what Remains, when a retry of the same cost succeeds (RetryAfter,
// exact, > 0 whenever denied) and when the quota is whole again
// (ResetAfter). The adapters (httpmw and the others) write headers and gRPC
// details from the Decision only, so they all answer alike.
//
// Errors are never denials. [Limiter.Allow] returns an error only when no
// decision could be made: an invalid cost (errors.Is(err, [ErrInvalidCost]):
// cost < 1, or more than the limit can ever admit at once), which charges
// nothing, or a store failure (errors.Is(err, [ErrStore])).
//
// # Changing limits
//
// [Keyed.SetLimit] changes a limiter's limit at run time, atomically, and
// every key keeps its state, read under the new limit: the token bucket
// keeps its tokens (capped at the new burst) and refills at the new rate
// from its last update; GCRA and LeakyBucket keep the instant the key is
// whole again (the time it owes); the windows keep their counts for the
// window of the new period that holds the stored window's start. The
// method's documentation gives each algorithm's rule exactly.
//
// [NewDynamic] chooses each key's limit per request with a function of the
// key (tiers: free and paid API keys). Each distinct limit has a table of
// its own, at most [WithMaxLimits] of them (default [DefaultMaxLimits]),
// and a key whose limit changes has its state moved to its new limit's
// table, read as SetLimit reads it; beyond the bound, a request fails with
// [ErrTooManyLimits]. A key that keeps its limit costs one lookup, as in
// Keyed, plus the limit function and a map lookup by Limit.
//
// [NewAdaptive] moves the limit between a low and a high Limit with a load
// signal the caller supplies (heap in use, latency, CPU): at or below the
// low water mark the high limit, at or above the high mark the low one,
// linearly between, quantised to whole events. The signal is read by
// Update, called by the caller or by a background sampler that Close stops,
// never on the request path; keys keep their state across changes.
//
// # Reservations
//
// [Reserve] charges units now and returns a [Reservation] to settle later:
// Commit keeps the charge, Cancel refunds it with [Limiter.Refund], once,
// never after Commit, whoever calls either and however often (ad serving:
// check the frequency cap before the auction, keep the unit only for the ad
// shown). A refund never lifts a key above a whole quota; the shared
// decision tables of core/coretest play refunds on every store.
//
// Time is injected: limiters read a [Clock] once per decision. The default
// is monotonic and cheap; tests use coretest.Clock, which moves only when
// told to, so that every expected value is exact.
//
//	lim, err := core.New(core.PerSecond(10).WithBurst(20))
//	if err != nil { ... }
//	d, err := lim.Allow(ctx, clientIP, 1)
//	if err == nil && !d.Allowed {
//		// answer 429, retry after d.RetryAfter
//	}
package core
