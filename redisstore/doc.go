// Package redisstore is a core.Limiter whose per-key state lives in Redis,
// so that one limit holds for a whole fleet: a service on N instances behind
// a load balancer admits the limit, not N times it. It works with any
// go-redis v9 redis.UniversalClient: a single node, a Sentinel-backed
// failover client, or a Cluster client.
//
//	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:6379"}, ContextTimeoutEnabled: true})
//	lim, err := redisstore.New(rdb, core.PerMinute(100))
//	mw, err := httpmw.New(lim, keyfunc.MustClientIP())
//
// Every adapter takes the Limiter unchanged; nothing else moves.
//
// # Decisions
//
// Every algorithm of package core decides exactly as the in-memory limiter
// does under the same policy: the core.Limit given to New carries the
// algorithm and its settings (Overdraft, MaxDelay, WarmUp, SubWindows,
// MaxEntries), checked by Limit.Validate as core.New checks them. The
// shared decision tables pass on both, and a randomized test
// compares them step by step, refunds included. The same requests at the
// same instants get the same Allowed, Remaining, RetryAfter, ResetAfter and
// Delay, to the nanosecond.
// Each decision is one Lua script, sent once and then run with EVALSHA (a
// server that answers NOSCRIPT, after a restart or SCRIPT FLUSH, gets the
// script again with EVAL; no other error is retried).
//
// # Shaping, warm-up and overdraft
//
// core.LeakyBucket shapes on Redis as in memory: the key's line is one
// state on the server, so requests from every instance take turns in one
// line, one interval apart, each admitted with the Delay of its turn (up to
// the limit's MaxDelay, default core.DefaultMaxDelay) and refused beyond it. The
// adapters wait the Delay out; a request whose context ends while it waits
// gives its turn back with Refund, which moves the line back by the
// request's intervals, never before the server's now.
//
// core.WarmUp, Guava's SmoothWarmingUp, runs on Redis bit for bit as in
// memory. Its state holds a float64 (the stored permits) and its waits come
// from float64 arithmetic truncated to whole nanoseconds; Lua's numbers are
// the same IEEE doubles, so the script gets the exact parameters core
// computes (computed in Go with core's formulas and sent as the shortest
// decimals that read back as the same doubles), and does every operation in
// the order core does, each rounded on its own. Core keeps the compiler from
// fusing its one multiply-and-add into a single rounding (which arm64, and
// amd64 built for v3, would otherwise do); Go's truncations are of values
// never negative, where they equal Lua's math.floor; integers stay below
// 2⁵³, where doubles are exact. The token bucket script matches
// x/time/rate's float arithmetic the same way, and Overdraft is a
// parameter of it.
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
// A pipeline is bounded by the Limiter's timeout (WithTimeout) from when it
// leaves, not by any one caller's context; the wait for it counts against
// neither the timeout nor the circuit breaker. WithBatching sets the two
// numbers; WithoutBatching sends every decision alone.
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
// most 2⁵² ns − 2 s, about 52 days; with Overdraft, half that, since a
// bucket in debt by a whole burst takes two spans to fill; for
// core.LeakyBucket, the longest wait plus Burst × interval; for core.WarmUp,
// a cold request of the whole burst (Burst × interval × cold factor) plus
// the warm-up period. New refuses longer ones.
//
// # Keys
//
// A key's state is one Redis string (a sorted set for core.SlidingLog) at
//
//	<prefix>{<tag>}:<algorithm>:<events>/<period ns>:<burst>[:<settings>]
//
// for example floodgate:{203.0.113.7}:tb:100/60000000000:100. The algorithm
// is tb, gcra, fw, sw, lb (leaky bucket) or wu (warm-up); the settings are
// the leaky bucket's longest wait in ns (lb:...:250000000), the warm-up
// period in ns and the cold factor (wu:...:10000000000x3), or overdraft for
// a token bucket that lends, defaults written out. The prefix is
// DefaultPrefix unless WithPrefix says otherwise. The braces are a hash tag:
// every key derived from one client key hashes to one Cluster slot, so a
// script only ever touches one slot (no CROSSSLOT), whatever the client
// sent. The tag is the client key, byte for byte, unless it is empty or
// holds '%', '{' or '}': those three are written %25, %7B and %7D, and the
// empty key is a lone '%' (floodgate:{%7Dx}:... for "}x", floodgate:{%}:...
// for ""), so a tag is never empty, holds no brace, and names one key
// only. (Such keys were once kept under their raw bytes, a state this
// package no longer reads.) The algorithm, the
// limit's parameters and the algorithm's settings are part of the key, so a
// changed limit or setting starts from a whole quota instead of misreading
// the old state. Values are text, readable with redis-cli: token bucket
// "tokens seconds nanoseconds" (tokens in 17 significant digits, so that
// they read back as the same double; negative in debt), GCRA "seconds
// nanoseconds" of the theoretical arrival time, fixed window "seconds
// nanoseconds count", sliding window "seconds nanoseconds previous
// current", leaky bucket "seconds nanoseconds" of the instant the line
// drains, warm-up "permits seconds nanoseconds" (the stored permits in 17
// significant digits, and the next free instant). A state that does not
// parse, holds a number no state holds (nanoseconds from 1e9, a count
// below 0 or from 2³¹, tokens or permits not finite) or is of another Redis
// type is a store error, never a fresh quota. An instant further ahead of
// now than its algorithm writes one (any, for the token bucket's last
// update and the windows; the span for GCRA; the longest wait plus Burst ×
// interval for the leaky bucket; the coldest wait of the burst for warm-up;
// the lease TTL) means a server clock stepped back or a corrupt state: it
// is read, and written back, at that bound, so what it counts stays
// counted, and no RetryAfter, ResetAfter or TTL exceeds the limit's own.
//
// Sub-windows (algorithm tag sw<n>) are "seconds nanoseconds" of the
// newest non-empty sub-window then " k:count" for each non-empty one,
// oldest first, k sub-windows before the newest.
//
// # Sliding log
//
// core.SlidingLog keeps a sorted set per key (algorithm tag sl): one member
// per instant with admissions still in the window, scored by the instant's
// whole seconds and named "<seconds> <nanoseconds, 9 digits>:<cost>", so
// that the set's order (by score, then by name) is the instants' order,
// and a member
// "sum" scored −(1 + the sum of the costs), so that no decision walks the
// whole log. A decision drops the entries that left the window (each entry
// is dropped once), then adds or coalesces one entry, or, refused, reads the
// oldest entries until the cost would fit: O(log n) per command and a
// handful of commands per decision, whatever the log's length. A set
// without its sum, or with a member that does not parse, is an error, never
// a fresh quota. The limit's MaxEntries caps the entries it may need (default
// core.DefaultMaxEntries), as in memory. Redis memory per key (MEMORY
// USAGE, Redis 7 defaults): about 30 bytes per entry while the set holds
// at most 128 members (a listpack: 3.1 KB at 100 entries), about 120
// beyond (a skiplist: 119 KB at 1,000).
//
// A Dynamic (NewDynamic: the limit chosen per key, per request, as
// core.NewDynamic does) keeps a key's state at
//
//	<prefix>{<tag>}:<algorithm>[:<settings>]
//
// (the tag and the settings as for a Limiter: a leaky bucket's longest
// wait, warm-up's period and cold factor, overdraft) without the limit's
// parameters, so that a key whose limit changes (a
// user who upgrades) keeps its state: the scripts get the limit's
// parameters with each call and read a stored state under them exactly as
// core.Keyed.SetLimit documents (the same decisions as core's Dynamic on
// the same clock), the leaky bucket and warm-up included (warm-up's stored
// permits, kept above a lowered maximum, are capped when spent, as in
// core). The script arguments of up to MaxCachedLimits distinct limits are
// made once and reused. The first limit a Dynamic sees fixes the algorithm
// and its settings, which every later limit must share (its key names
// them); as in core, a Dynamic cannot run core.SlidingLog, sub-windows or
// core.Concurrency. A limit that breaks either rule fails its request with
// an error wrapping core.ErrSetLimitUnsupported.
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
// # Stacks
//
// NewStack enforces several limits on every key at once, each with its own
// algorithm (5/s and 100,000/h), all or nothing, in one script and one round
// trip: the script runs every layer's algorithm against a recorder that
// sends reads to the server and holds writes, and makes the writes only
// when every layer admits. A layer's state lives at the key a Limiter of
// that limit would use, all under the client key's hash tag, so a stack is
// one script on one Cluster slot. Every algorithm may be a layer: each
// script makes all its reads before its first write, so it runs the same
// under the recorder as alone. With a concurrency layer, an admission's
// lease is a member of every concurrency layer's sorted set, renewed and
// released through the stack's script (one round trip each), and it
// expires as a Limiter's does. It decides exactly as core.Stack does: the
// shared stack tables and random traffic over every pair
// of algorithms compared with memory show the same decisions and the same
// limit named.
//
// # Requests in flight
//
// With core.Concurrency, a key's state is a sorted set at the same kind of
// key (algorithm tag cc, for example floodgate:{tenant-7}:cc:8/1000000000:8)
// holding one member per lease, '<cost>:<id>', scored by the instant the
// lease expires (microseconds since the epoch, server TIME), and a member
// '#' whose negative score is the units held. Ids are a random tag per
// Limiter and a counter, so instances never collide. One script does
// everything, each call first dropping the leases that have expired and
// giving their units back: an admission adds a lease if its cost fits
// beside the units held (it costs O(log n), plus the leases it drops); a
// release removes the lease, and releasing twice, or after it expired,
// changes nothing; Refund lowers the units held, never below none, and
// leaves the leases alone. Every write sets the key's TTL to the last
// lease's expiry plus the TTL margin; a key left with no lease is deleted,
// and a refusal gives a key found without a TTL one. Decisions match the
// in-memory limiter's (the same decision tables pass); the deny cache is
// off, since a refusal ends whenever any instance releases a lease.
//
// A lease lives WithLeaseTTL (default DefaultLeaseTTL, 30 s) unless
// renewed, so an instance that dies holding leases gives the slots back at
// most that much later. While a lease is held, the Limiter that handed it
// out renews it every third of the TTL, one script call per lease (batched
// with the other calls under load): a request may run for any time, and
// one shorter than a third of the TTL costs no renewal. A renewal moves
// the expiry to a TTL from now, only for a lease the server still holds:
// an expired or released lease is never brought back, and its renewals
// stop. A renewal that fails is tried again a third of the TTL later; a
// lease whose renewals all fail for two thirds of the TTL (an outage of
// 20 s by default) expires while its request runs, and the key may then
// admit more than its limit until that request ends.
//
// Lease.Release makes its round trip on a context that is never
// cancelled, bounded by WithTimeout alone, so a request whose context has
// ended (a client gone) still gives its slot back. A release that fails
// (server down, circuit open) returns its *core.StoreError, and the lease
// expires by itself within the TTL. So does a lease admitted by a round
// trip whose answer was lost (a timeout after the server ran the script).
// An admission and its release cost two round trips (BenchmarkConcurrencyRedis:
// about 50 allocations together against 20 for a GCRA decision).
//
// # When Redis fails
//
// A decision that could not be made (server down, timeout, wrong password,
// script error) returns a *core.StoreError, matched by errors.Is(err,
// core.ErrStore), and never a decision: the adapters' failure mode decides
// what the request gets, and reports it to the Observer. core.FailClosed
// refuses with Retry-After; core.FailOpen admits; and package fallback wraps
// this Limiter with an in-memory one, so that each instance keeps deciding
// on its own while Redis is away.
//
// Each round trip is bounded by WithTimeout (DefaultTimeout, 500 ms) from
// when it is sent (a batched call's from when its pipeline leaves), as well
// as by the caller's context, and so is a call's whole wait: a call queued
// behind other round trips gets its store error once it has waited
// WithTimeout, so no request waits longer, queued or not. Time queued is
// never counted by the breaker, only round trips are. That bound needs a client that honours
// contexts on the socket: New refuses a go-redis client whose options
// leave ContextTimeoutEnabled false (go-redis's default, under which a
// hung or paused server holds every request for the client's ReadTimeout,
// seconds), and says so; set it to true, or pass WithTimeout(0) to leave
// the bound to the client.
//
// A script is never sent twice for one call. go-redis retries a command
// after a read timeout or a dropped connection (MaxRetries, and a Cluster
// client's MaxRedirects), and a script that ran but whose reply was lost
// would charge the key again; this package marks its scripts so that the
// client does not retry them (redirects, MOVED and ASK, are still
// followed: a redirected script has not run). A lost reply is a store
// error, answered by the failure mode, and the key is charged at most once
// for it. The client's other commands keep its retry settings, so one
// client can serve the application and the limiter.
//
// A circuit breaker, on by default, keeps requests off a Redis that is
// failing; a Cluster client gets one per master, so that a dead master
// turns away only the keys it holds. It counts round trips, a pipeline as
// one. Only evidence that the server is failing is a failure: a network
// error, a round trip that outlived the timeout, or an error reply of a
// server that cannot serve (LOADING, BUSY, MASTERDOWN, CLUSTERDOWN,
// TRYAGAIN, READONLY, OOM, NOREPLICAS, MISCONF, max number of clients). A
// reply with an error the request caused (CROSSSLOT, WRONGTYPE, a state
// the script cannot parse, any other ERR) is a success: the server is up.
// A caller that gave up, a call turned away while queued, one the client's
// pool turned away (redis.ErrPoolTimeout) and an invalid cost count for
// nothing. All of them still return their *core.StoreError.
//
// It opens when, over DefaultBreakerWindow (10 s, in buckets of 1 s), at
// least DefaultBreakerMinCalls (20) round trips were counted and at least
// DefaultBreakerFailureRate (50) percent failed, or when the previous
// bucket and the current one hold failures and no success, three at least:
// a dead or hung server opens it within about two seconds plus the
// timeout, however much healthy traffic came before, while a spike or a
// pause of the process does not (fallback.BreakerConfig gives the
// reasons). While it is open, for DefaultBreakerOpenFor (1 s), Allow and
// Refund return at once a *core.StoreError whose cause is ErrCircuitOpen
// and send nothing, and so do the calls queued when it opened; the deny
// cache goes on answering the refusals it holds. Then one call probes
// Redis, sent at once whatever the queue, while the others keep failing
// fast. A probe that Redis answers closes the breaker and starts its
// window afresh; a failed one opens it again for twice as long, up to
// DefaultBreakerMaxOpenFor (4 s): 1 s, 2 s, 4 s, 4 s...
//
// A long outage costs one probe every 4 s, and once Redis is back the first
// request at most 4 s later closes the breaker. Keep WithTimeout below the
// deadlines callers set, or a hung server that outlasts them is never
// counted. WithBreaker sets the rule and the periods, WithoutBreaker turns
// the breaker off, and WithClock's clock times them. While closed, the
// breaker costs a decision an atomic load, a clock reading and an atomic
// add, and no allocation (on a Cluster, also a look-up of the key's master
// in the client's cluster state). Behind package fallback, a fast
// ErrCircuitOpen is a store error that fallback answers locally.
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
// limit they were refused under and answer only under it; a Stack's hold
// the layer that refused, which their answer names); it holds DefaultDenyCacheSize
// keys (WithDenyCache sets the size, 0 turns it off). Requests of other costs
// always ask the server. Only refusals are cached, never an admission, so a
// shaper's Delay always comes from the server; a refusal of every algorithm
// holds, with no traffic, until its RetryAfter, the leaky bucket's and
// warm-up's included (their waits end at instants their state fixes). The price: a refund made by another instance does
// not reach this instance's cache, which keeps refusing the key until the
// RetryAfter it was given.
package redisstore
