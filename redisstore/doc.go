// Package redisstore is a core.Limiter whose per-key state lives in Redis,
// so that one limit holds for a whole fleet: a service on N instances behind
// a load balancer admits the limit, not N times it. It works with any
// go-redis v9 redis.UniversalClient: a single node, a Sentinel-backed
// failover client, or a Cluster client.
//
//	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:6379"}})
//	lim, err := redisstore.New(rdb, core.PerMinute(100))
//	mw, err := httpmw.Middleware(lim, keyfunc.MustClientIP())
//
// Every adapter takes the Limiter unchanged; nothing else moves.
//
// # Decisions
//
// The four algorithms decide exactly as the in-memory limiter does (the
// decision tables of core/coretest pass on both, and a randomized test
// compares them step by step): the same requests at the same instants get the
// same Allowed, Remaining, RetryAfter and ResetAfter, to the nanosecond.
// Each decision is one Lua script, sent once and then run with EVALSHA (a
// server that answers NOSCRIPT, after a restart or SCRIPT FLUSH, gets the
// script again with EVAL; no other error is retried).
//
// # Batching
//
// A decision made while the Limiter has fewer than DefaultInFlight (2)
// round trips under way is sent at once, in a round trip of its own: a lone
// caller waits for nothing. Under load, a decision that finds both taken
// waits for one to end, then goes with every decision that gathered
// meanwhile in one pipeline (at most DefaultBatchSize, 128, per pipeline).
// On a Cluster each master has its round trips and its queue, as it has its
// circuit breaker, so a dead master holds up no other master's keys. Each
// decision is still its own
// script, atomic and at the server's time, so batching changes no decision;
// it saves the round trips and system calls, which cost a local server more
// than the scripts do. From 64 goroutines, a batched decision costs less
// than a PING sent alone (see the README's table). Each decision keeps its
// caller's deadline: a caller whose context ends while it waits returns
// with that error, and its script is not sent if its pipeline has not left.
// A pipeline is bounded by the Limiter's timeout (WithTimeout), not by any
// one caller's context. WithBatching sets the two numbers; WithoutBatching
// sends every decision alone.
//
// # Time
//
// The scripts read the server's clock (TIME, microseconds), the one clock
// every instance agrees on: the instances' own clocks, and their skew, change
// no decision. Lua numbers are doubles, exact only below 2⁵³, while Unix
// nanoseconds are above 2⁶⁰; so instants are stored as whole seconds and
// nanoseconds apart, and each script computes relative to the current second,
// where every instant it handles fits in 53 bits. That bounds the limits
// Redis can hold: Burst × interval (token bucket, GCRA) or Period (windows) at
// most 2⁵² ns − 2 s, about 52 days; New refuses longer ones.
//
// # Keys
//
// A key's state is one Redis string at
//
//	<prefix>{<key>}:<algorithm>:<events>/<period ns>:<burst>
//
// for example floodgate:{203.0.113.7}:tb:100/60000000000:100. The prefix is
// DefaultPrefix unless WithPrefix says otherwise. The braces are a hash tag:
// every key derived from one client key hashes to one Cluster slot, so a
// script only ever touches one slot (no CROSSSLOT). The algorithm and the
// limit's parameters are part of the key, so a changed limit starts from a
// whole quota instead of misreading the old state. Values are text, readable
// with redis-cli: token bucket "tokens seconds nanoseconds" (tokens in 17
// significant digits, so that they read back as the same double), GCRA
// "seconds nanoseconds" of the theoretical arrival time, fixed window
// "seconds nanoseconds count", sliding window "seconds nanoseconds previous
// current".
//
// A Dynamic (NewDynamic: the limit chosen per key, per request, as
// core.NewDynamic does) keeps a key's state at
//
//	<prefix>{<key>}:<algorithm>
//
// without the limit's parameters, so that a key whose limit changes (a
// user who upgrades) keeps its state: the scripts get the limit's
// parameters with each call and read a stored state under them exactly as
// core.Keyed.SetLimit documents (the same decisions as core's Dynamic on
// the same clock). The script arguments of up to MaxCachedLimits distinct
// limits are made once and reused.
//
// Every write sets a TTL: the time until the key's quota is whole again (when
// forgetting it changes nothing), plus a margin (WithTTLMargin, default one
// second). A key found without a TTL, after a manual write or a restore, is
// given one by its next decision, and so is a Dynamic's key whose TTL, set
// under its old limit, would end before its quota is whole under the new
// one. A Dynamic's key left alone past the TTL its last write set is
// forgotten, though, and starts whole under its new limit where the
// in-memory limiter would still hold its old state: GCRA, whose TTL is the
// instant the key is whole under any limit, is the same on both; the token
// bucket and the windows differ only when a change makes a key take longer
// to be whole (a slower rate, a larger burst, a longer period) and it sees
// no request before its old TTL ends.
//
// # Reservations
//
// core.Reserve works on both limiters unchanged: its Cancel is a Refund,
// which the scripts apply atomically, never beyond a whole quota (the
// shared decision tables' refund steps pass on Redis exactly).
//
// # When Redis fails
//
// A decision that could not be made (server down, timeout, wrong password,
// script error) returns a *core.StoreError, matched by errors.Is(err,
// core.ErrStore), and never a decision: the adapters' failure mode decides
// what the request gets, and reports it to the Observer. core.FailClosed
// refuses with Retry-After; core.FailOpen admits; and package fallback wraps
// this Limiter with an in-memory one, so that each instance keeps deciding
// on its own while Redis is away. Each round trip is bounded by WithTimeout
// (default 100 ms) as well as the caller's context, provided the client
// honours contexts on the socket: set ContextTimeoutEnabled in its options
// (go-redis otherwise waits for a hung server's reply up to its ReadTimeout,
// 3 s by default), and keep MaxRetries low (go-redis retries a refused dial
// inside one call).
//
// A circuit breaker, on by default, keeps requests off a Redis that is
// down; a Cluster client gets one per master, so that a dead master turns
// away only the keys it holds while the others go on deciding.
// DefaultBreakerThreshold (3) failed round trips in a row open it: any
// store error of a round trip, a timeout included, but neither an invalid
// cost (refused before any round trip) nor a call whose caller's context
// ended first (a caller that gave up says nothing about Redis). A success
// starts the count over, so a key whose state is broken opens it only if
// nothing succeeds between its failures. While it is open, for
// DefaultBreakerOpenFor (1 s), Allow and Refund return at once a
// *core.StoreError whose cause is ErrCircuitOpen, and send nothing; the
// deny cache goes on answering the refusals it holds. Then one call probes
// Redis while the others keep failing fast. A probe that Redis answers
// closes the breaker; a failed one opens it again for twice as long, up to
// DefaultBreakerMaxOpenFor (4 s): 1 s, 2 s, 4 s, 4 s...
//
// So under FailOpen or FailClosed only the threshold's requests and the
// probes wait on a dead or hung server, a long outage costs it one probe
// every 4 s, and once Redis is back, the first request at most 4 s later
// probes it and closes the breaker. Keep WithTimeout below the deadlines
// callers set, or a hung server that outlasts them is never counted.
// WithBreaker sets the three numbers, WithoutBreaker turns the breaker off,
// and the clock set by WithClock times its periods. While closed, the
// breaker costs a decision two atomic loads and no allocation (on a
// Cluster, also a look-up of the key's master in the client's cluster
// state, with no round trip). Behind package fallback, which has a breaker
// of its own, the two work together: a fast ErrCircuitOpen is a store error
// that fallback answers locally.
//
// # Deny cache
//
// A key refused a cost-1 request is remembered in process until its
// RetryAfter has passed, counted from before the round trip that refused it,
// so the entry never outlives the server's answer. Until then its cost-1
// requests are refused with no round trip (well under a microsecond), with
// the RetryAfter and ResetAfter that remain. A repeat offender hammering the
// service costs Redis nothing. The cache belongs to one Limiter, so its
// entries are always for that Limiter's limit (a Dynamic's entries hold the
// limit they were refused under and answer only under it); it holds DefaultDenyCacheSize
// keys (WithDenyCache sets the size, 0 turns it off). Requests of other costs
// always ask the server. The price: a refund made by another instance does
// not reach this instance's cache, which keeps refusing the key until the
// RetryAfter it was given.
package redisstore
