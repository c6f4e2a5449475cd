// Package debugpage is a live view of what floodgate's limiters decide,
// served like net/http/pprof: a web page, and the same data as JSON.
//
// A [Page] is a core.Observer: attach it to every adapter whose traffic it
// should show. It is also an http.Handler: mount it on the mux you use for
// operators, behind authentication.
//
//	page, err := debugpage.New(
//		debugpage.WithLimiter("api", lim), // the policies in force
//		debugpage.WithHealth("redis", lim), // its Redis store's breaker and counters
//	)
//	...
//	mw, err := httpmw.New(lim, byIP, httpmw.WithObserver(page))
//	...
//	admin.Handle("/debug/floodgate/", requireOperator(page))
//
// The same page takes grpcmw.WithObserver, and ginmw's and echomw's
// options alike. To report to the page and to other observers (metrics,
// logs), join them:
//
//	httpmw.WithObserver(core.JoinObservers(page, metrics))
//
// # What it shows
//
//   - decisions since the page was made, by outcome (allowed, shaped,
//     denied, bad_key, bad_cost, error, store_error, canceled, shed), with the
//     denials of limiters in shadow mode and the decisions made on a full
//     limiter's shared overflow state counted apart;
//   - decisions per second by outcome over the last minutes ([WithWindow],
//     5 by default), drawn as a chart, with the average rate of the last 10
//     whole seconds;
//   - the hottest keys (most requests) and the most refused keys (most
//     denials), each from a Space-Saving top-k sketch of fixed size
//     ([WithTop]): a key's count is an upper bound shown with its
//     possible overestimate, and every key heavier than its shard's events
//     divided by the counters per shard is listed. Under each list a
//     footer says whether every key seen is monitored (counted exactly)
//     or, once more keys came than the sketch monitors, how many requests
//     a key it does not monitor can have had at most. No full key table is
//     kept, whatever the number of clients;
//   - the policies of the limiters registered with [WithLimiter], read at
//     each refresh;
//   - the breaker state and counters of stores registered with
//     [WithHealth];
//   - the state of overload guards registered with [WithGuard]: the bound
//     each puts on requests in flight now, the requests in flight and the
//     latency it judges the service by (their sheds count as "shed");
//   - the sheds by priority: the requests overload guards shed, by the
//     priority their context carried (overload.PriorityOf), with the
//     metrics observers' names for them (sheddable, normal, critical, or
//     the number of another priority).
//
// The page is rendered on the server with html/template; a small inline
// script reads the JSON (the page's own path with ?format=json) once a
// second and updates the numbers, setting text only.
//
// # The JSON
//
// One object; counts by outcome are keyed by core.Outcome's String
// ("allowed", "shaped", "denied", "bad_key", "bad_cost", "error",
// "store_error", "canceled", "shed", and "other" for outcomes newer than this
// package), every outcome present:
//
//	time, since          RFC 3339 instants: now, and when the page was made
//	totals               counts by outcome since then
//	shadow_denied        denials among totals.denied that shadow mode let through
//	overflow             decisions made on a full limiter's shared overflow state
//	window               {start (Unix second), seconds, counts (by outcome, one
//	                     per second, oldest first), totals, per_second (average
//	                     of the last 10 whole seconds)}
//	key_form             "hashed" (Redact) or "custom" (WithKeyRedaction)
//	hot_keys,            {keys: [{key, count, error}], unmonitored, monitored}:
//	refused_keys         a key's true count lies in [count-error, count]; a key
//	                     not monitored has had at most unmonitored events; the
//	                     sketch monitors up to monitored keys
//	policies             [{limiter, limits: [{name, events, period, burst}]}]
//	health               [{name, state, stats: {primary_decisions,
//	                     local_decisions, primary_failures, opens,
//	                     lease_decisions, leases, returned_units,
//	                     returns}}]
//	guards               [{name, limit, in_flight, latency_ms}]
//	shed_by_priority     [{priority, level, count}]: the sheds among
//	                     totals.shed by priority, highest first; sheddable,
//	                     normal and critical always, another once it has one
//
// # Keys are personal data
//
// Rate-limit keys are often IP addresses, user IDs or API-key
// identifiers. The page shows each key as [Redact] gives it, the start of
// a keyed hash under a secret drawn at random for each process: the same
// client keeps the same label while the process runs, which is what one
// needs to follow an attack, and the label cannot be turned back into the
// key by trying likely ones. [WithKeyRedaction] shows them otherwise
// (as they are, or as a lookup of yours names them).
//
// Either way the page tells outsiders how your limits work and who your
// busiest clients are: nothing mounts it by default, and you must put it
// behind authentication, as you would net/http/pprof. Its responses are
// never cached and carry a Content Security Policy that runs only the
// page's own script and style.
//
// # Cost on the request path
//
// Observe runs on every request. It hashes the key, takes one of 8 locks
// chosen by that hash, bumps a total, the current second's counter and
// the sketches, and allocates nothing; no goroutine runs in the
// background (a second's counters are cleared when the slot comes round
// again). It keeps the event's key string (not a copy) while the key is
// monitored. Serving the page or its JSON copies the counters shard by
// shard; it is meant for a few operators, not for scraping by many: for
// metrics, use an observer that exports them.
package debugpage
