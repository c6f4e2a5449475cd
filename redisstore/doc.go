// Package redisstore is a core.Limiter whose per-key state lives in Redis,
// so that one limit holds for a whole fleet: a service on N instances behind
// a load balancer admits the limit, not N times it. It works with any
// go-redis v9 redis.UniversalClient: a single node, a Sentinel-backed
// failover client, or a Cluster client.
//
//	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:6379"}, ContextTimeoutEnabled: true})
//	lim, err := redisstore.New(rdb, core.PerMinute(100), redisstore.WithFallback())
//	mw, err := httpmw.New(lim, keyfunc.MustClientIP())
//
// Every adapter takes the Limiter unchanged; nothing else moves. docs/redis.md
// in the repository tells the whole story: the scripts, the key layout and
// the values they hold, the time arithmetic, the sliding log's sorted sets,
// leases, and the reasons behind each default.
//
// # Decisions
//
// The policy is the core.Limit given to [New]: its algorithm and that
// algorithm's settings (Overdraft, MaxDelay, WarmUp, SubWindows,
// MaxEntries) included, checked by Limit.Validate. Every algorithm of
// package core decides exactly as the in-memory limiter does: the same
// requests at the same instants get the same Allowed, Remaining,
// RetryAfter, ResetAfter and Delay, to the nanosecond (the shared decision
// tables pass on both, and randomized tests compare them step by step).
// Each decision is one Lua script at the server's TIME, the one clock
// every instance agrees on: a function of a Redis Functions library, run
// with FCALL, on Redis 7 and later (the library is loaded once per server,
// or Cluster master, and again when the server has lost it), and run with
// EVALSHA on a server that refuses Functions. Lua numbers are doubles, so a
// limit may span at most about 52 days on Redis (half that with
// Overdraft); New refuses longer ones. core.FixedWindow is the exception:
// its windows may be longer (a year, say) if their period is whole
// seconds, up to about 834 days, and then its ResetAfter and RetryAfter
// are rounded up to whole microseconds, which the server's clock counts
// in (so only a test clock finer than that sees the rounding). The options
// configure the store, never the policy.
//
// [NewStack] enforces several limits on every key, each with its own
// algorithm, all or nothing, in one script and one round trip, as
// core.Stack does. [NewDynamic] chooses the limit per key and request, as
// core.NewDynamic does; its first limit fixes the algorithm and settings
// every later limit must share.
//
// [NewMulti] decides several keys, each under its own limits, all or
// nothing in one script and one round trip (on a Cluster, one script per
// hash slot, sent together, and a refund when a slot refuses): what a
// service deciding several rate limits per request needs. An item's state
// is the Limiter's or Stack's of the same limits and options, and calls
// share round trips as a Limiter's do.
//
// # Keys
//
// A key's state is one Redis key,
//
//	<prefix>{<tag>}:<algorithm>:<events>/<period ns>:<burst>[:<settings>]
//
// for example floodgate:{203.0.113.7}:tb:100/60000000000:100, the prefix
// set by [WithPrefix]. The tag is the client key, with '%', '{' and '}'
// written %25, %7B and %7D and the empty key written '%': every key of one
// client, each layer of a stack included, hashes to one Cluster slot. A
// changed limit or setting starts from a whole quota instead of misreading
// the old state; a Dynamic's keys leave the limit out, so a key keeps its
// state when its limit changes. Every write sets a TTL: the time until the
// key's quota is whole again, plus a second, plus, with [WithTTLJitter], a
// random time up to its maximum, so that keys written together do not all
// expire together.
//
// # Batching
//
// A decision made while the limiter has fewer than two round trips under
// way is sent at once; under load, decisions that find both taken wait for
// one to end and go together in one pipeline, each still its own atomic
// script. From 64 goroutines a decision costs less than a PING sent alone.
// [WithBatching] sets the two numbers, or turns batching off.
//
// # Deny cache
//
// A key refused a cost-1 request is refused again in process, with no
// round trip, until its RetryAfter has passed (counted from before the
// round trip that refused it), so a client hammering an exhausted limit
// costs Redis nothing. [WithDenyCache] sets its size. A refund made by
// another instance does not reach this instance's cache.
//
// # Local quota
//
// [WithLocalQuota] (opt-in) decides the keys that are hot on this instance
// in memory: the instance takes a lease, a batch of the key's units
// charged to its shared state in one round trip, spends it until it runs
// out or the lease's length has passed, and gives back what it did not
// spend. A key hammered by this instance costs Redis a round trip per
// lease, not per call; other keys keep one round trip per call. The fleet
// never admits more than one shared limiter would over the same interval
// widened by the lease's length (exactly the window, for fixed windows);
// [WithLocalQuota] states the bound and what is approximate. A [Dynamic]'s
// lease is bound to the limit it was granted under, and ends at the key's
// first call under another. A [Multi] made with it decides a call in memory
// when every item's key holds enough leased units, all or nothing, with the
// same bound.
//
// # When Redis fails
//
// A decision that could not be made (server down, timeout, wrong password,
// script error) returns a *core.StoreError, matched by errors.Is(err,
// core.ErrStore), and never a decision: the adapters' failure mode decides
// what the request gets (fail closed, the default, or fail open), unless
// the limiter was made [WithFallback].
//
// Each round trip, and each call's whole wait, is bounded by [WithTimeout]
// (500 ms by default) and by the caller's context. That bound needs a
// client that honours contexts on the socket: New refuses a go-redis
// client whose options leave ContextTimeoutEnabled false. A script is
// never sent twice for one call: a lost reply is a store error, never a
// second charge.
//
// A circuit breaker, on by default, keeps calls off a Redis that is
// failing ([WithBreaker], [BreakerConfig]); a Cluster client gets one per
// master. It counts round trips, and only evidence that the server is
// failing is a failure (a network error, a round trip past the timeout, an
// error reply such as LOADING or READONLY): it opens when half of at least
// 20 round trips in 10 s failed, or every round trip for over a second,
// but not on a spike or a pause of the process. While it is open, calls
// fail at once and send nothing; after 1 s (then 2 s, then every 4 s) one
// call probes Redis, and a probe Redis answers closes it.
//
// # Failing local
//
// A limiter made [WithFallback] decides in memory while Redis fails: each
// call that gets a store error (the server down or slow, or the breaker
// open) is decided, instead, by a core limiter of the same policy (a
// core.Keyed, a core.Stack of the same limits, or a core.Dynamic of the
// same limit function) on this instance alone. Calls go back to Redis as
// soon as the breaker's probe succeeds; there is one breaker and one
// timeout, those of the Redis limiter. While degraded, a fleet of N
// instances admits up to N times the limit, and a refund is exact only if
// it goes where the charge was made. Errors of the caller's own (its
// context ended) or of the request (an invalid cost) are returned as they
// are.
//
// A Limiter, Stack or Dynamic made with both [WithFallback] and
// [WithLocalQuota] decides each key, instead, under this instance's share
// of its limit (of each layer of a stack): the rate and burst (a fixed
// window's events) divided by the instances that held a lease on the key
// at its last grant here, at least one unit, warm from that grant (the
// shared state's Remaining then, divided alike, and refilled since). A
// fleet so made stays near the limit while Redis is away.
//
// # Health
//
// Health (core.HealthReporter) reports the breaker's state and counters:
// decisions Redis made, decisions made locally, failed calls and times the
// breaker opened. promobs.WithHealth exports them as metrics and
// debugpage.WithHealth shows them.
package redisstore
