// Package core is floodgate's framework-agnostic engine: it decides whether a
// key may spend some units of quota now.
//
// A [Limit] is a policy (Events per Period, a Burst, a Name), built with
// [PerSecond], [PerMinute], [PerHour], [PerDay], [Every] or read from a
// configuration string by [ParseLimit] ("100/s", "1000/h burst=50",
// "10/s name=login"). [New] returns a [Keyed] limiter that applies one Limit
// to every key separately, in memory, with one of eight algorithms:
//
//   - [TokenBucket] (the default): golang.org/x/time/rate's arithmetic and
//     decisions, per key; with [Limit.WithOverdraft] it lends a request more than
//     is left while the bucket is not in debt.
//   - [GCRA]: the same admissions in integer nanoseconds.
//   - [FixedWindow]: Events per clock-aligned window.
//   - [SlidingWindow]: the sliding-window counter (previous window weighted by
//     its overlap); with [Limit.WithSubWindows], the count over n sub-windows
//     (Sentinel's LeapArray), closer to the exact log as n grows.
//   - [LeakyBucket]: a shaper: requests leave one interval apart, each
//     admitted with the Delay it waits for its turn, up to [Limit.WithMaxDelay].
//   - [WarmUp]: Guava's SmoothWarmingUp: an idle key is cold and starts
//     slow, reaching the full rate over the period [Limit.WithWarmUp] sets.
//   - [SlidingLog]: the exact sliding window, a log of admissions per key:
//     never more than Events in any Period, exact waits.
//   - [Concurrency]: at most Events units in flight per key (see below).
//
// Every algorithm but the logs below keeps 16 bytes of state per key; the
// table holding them is bounded (see [WithCapacity] and [FullPolicy]), so
// memory never grows past what you configure, about 120 bytes per tracked
// key (measured by BenchmarkMemoryPerKey). Keys whose quota is whole again are dropped first,
// wherever they sit in the table, at amortised constant cost per new key.
// When the table is full and no key is whole again, a new key takes the
// place of the key that loses least by it: the smallest count of the
// window, the bucket closest to full. A key given up comes back as new, so
// its owner regains what it had spent, and only a key that has spent at
// most half its quota (or a single unit) is given up: a drained key keeps
// its state. A client spraying distinct keys, each used once, fills the
// table with keys that give back one unit each when reused, so fresh
// clients still get their whole limit; only when every key has spent more
// do new keys share one overflow state ([FullOverflow]).
//
// The logs of [SlidingLog] and of [Limit.WithSubWindows] do not fit in 16 bytes:
// they live in a table of their own, beside the other, so that the other
// algorithms keep their compact states and pay nothing for it (one nil
// check per decision). It has the same capacity and [FullPolicy]; keys
// whose log has emptied leave it first, found by an index at amortised
// O(log n) per operation, and when none has, the key whose log counts
// least gives up its place as above. Each key holds 16 bytes per entry, up to the
// entries its limit can need, which [Limit.WithMaxEntries] caps (a limit that
// needs more fails at New), plus about 190 bytes. It has no deny cache.
//
// A [Stack] ([NewStack]) enforces several limits on every key at once, each
// with its own algorithm — 5/s and 100,000/h — all or nothing: when one
// limit refuses, none is charged. Its decision names the limit that refused
// (the one with the longest wait) or the one with the least left, and
// [Stack.Policies] lists them all for RateLimit-Policy. A layer may be any
// algorithm; a concurrency layer makes every admission carry a Lease.
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
// window of the new period that holds the stored window's start; under
// Concurrency the units in flight stay held and their leases give them
// back. The method's documentation gives each algorithm's rule exactly.
// SlidingLog and SlidingWindow with [Limit.WithSubWindows] keep per-key logs
// sized for their limit: SetLimit on them fails with
// [ErrSetLimitUnsupported], and so does NewDynamic for them and for
// Concurrency (whose leases give back to the table they were taken from).
// A [Stack]'s layers have no SetLimit.
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
// never on the request path; keys keep their state across changes. It is
// in memory only, on purpose: its signal is one process's load (its heap,
// its latency), so each instance should limit by its own; a limit shared
// through Redis would be judged under whichever instance's limit each
// request happened to pass, one key's state read under several limits at
// once. (redisstore.NewDynamic takes a limit per call, if a fleet-wide
// signal is what you have.)
//
// # Reservations
//
// [Reserve] charges units now and returns a [Reservation] to settle later:
// Commit keeps the charge, Cancel refunds it with [Limiter.Refund], once,
// never after Commit, whoever calls either and however often (ad serving:
// check the frequency cap before the auction, keep the unit only for the ad
// shown). A refund never lifts a key above a whole quota; the shared
// decision tables (internal/coretest) play refunds on every store.
//
// Time is injected: limiters read a [Clock] once per decision. The default
// is monotonic and cheap; tests pass a clock that moves only when told to
// ([Clock] shows one), so that every expected value is exact.
//
//	lim, err := core.New(core.PerSecond(10).WithBurst(20))
//	if err != nil { ... }
//	d, err := lim.Allow(ctx, clientIP, 1)
//	if err == nil && !d.Allowed {
//		// answer 429, retry after d.RetryAfter
//	}
//
// # Requests in flight
//
// [Concurrency] limits what a key has running, not how often it starts:
// [InFlight](n) admits a key's requests while they hold at most n units
// together (a request holds its cost). Each admission's Decision carries a
// [Lease]; [Lease.Release] gives the units back when the request ends, and
// only the first call counts, so releasing on every exit path is safe.
// Remaining is the units free. No instant is known
// at which a request ends, so the limit's Period is only a hint: a refusal
// says RetryAfter = Period (one second for InFlight), and ResetAfter is
// Period while anything is in flight. A key with units in flight is never
// dropped to make room, whatever the time; released, it carries nothing
// and is. A Lease is a value over a recycled record, so an admission, a
// refusal and a release allocate nothing, as the other algorithms'
// decisions do. A Lease ends once: a second End, or a copy's, does
// nothing, even once its record serves another request. A limiter of
// your own hands out Leases the same way by implementing [Holder].
package core
