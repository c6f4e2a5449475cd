// Package promobs exports what the floodgate adapters report (a
// [core.Observer]) as Prometheus metrics. It is the only floodgate package
// that imports the Prometheus client: core, keyfunc and httpmw stay free of
// it.
//
// Register an Observer with a registry, hand it to the adapters, and serve
// the registry:
//
//	obs, err := promobs.New(prometheus.DefaultRegisterer)
//	if err != nil {
//		log.Fatal(err)
//	}
//	mw, err := httpmw.New(lim, keyfunc.MustClientIP(), httpmw.WithObserver(obs))
//	if err != nil {
//		log.Fatal(err)
//	}
//	http.Handle("/metrics", promhttp.Handler())
//	http.Handle("/", mw.Handler(app))
//
// # Metrics
//
// Names start with "floodgate_". To add fixed labels (the service, the
// zone) or to register a second Observer on one registry, wrap the
// registry, as for any collector: prometheus.WrapRegistererWith(labels,
// reg) or prometheus.WrapRegistererWithPrefix("edge_", reg).
//
//   - floodgate_requests_total{limit, transport, outcome, shadow}: every
//     request an adapter checked. limit is the name of the limit that
//     decided (core.Limit.Name, set with WithName), "" when no limit did:
//     a bad key or cost, an error, a store failure. transport is "http"
//     (net/http, Gin, Echo), "grpc", or "envoy-rls" (the Envoy rate-limit
//     service, cmd/floodgate-ratelimit); outcome is one of allowed, shaped,
//     denied, bad_key, bad_cost, error, store_error, canceled, shed
//     (core.Outcome.String); shadow is "true" for requests a limiter in
//     shadow mode let through whatever its outcome says.
//   - floodgate_shed_total{limit, transport, priority}: requests an
//     overload guard shed (outcome "shed"), by the priority their context
//     carried (overload.PriorityOf): sheddable, normal, critical, or the
//     number of another priority. Critical sheds mean the guard had
//     nothing lower left to shed.
//   - floodgate_guard_limit{guard}, floodgate_guard_in_flight{guard},
//     floodgate_guard_latency_seconds{guard}: with [WithGuard], an overload
//     guard's bound on requests in flight (0 while none applies), the
//     requests it holds, and the latency it judges the service by, read
//     at each scrape.
//   - floodgate_overflow_decisions_total{limit, transport}: decisions made
//     against the shared overflow state because the table of keys was
//     full. Any steady rate means the capacity is too small.
//   - floodgate_leased_decisions_total{limit, transport}: decisions made in
//     memory from local quota leases (redisstore's WithLocalQuota), with
//     no round trip; with [WithHealth], the leases granted and the units
//     given back are the store's (below).
//   - floodgate_store_errors_total{transport, failure}: store failures, by
//     the failure mode applied: "fail-open" admitted the request,
//     "fail-closed" refused it. The event carries no limit for a store
//     error, hence no limit label.
//   - floodgate_decision_duration_seconds{limit, transport}: how long the
//     limiter took to answer, a Redis round trip included; the shaping
//     wait and the denial hold are not part of it. The adapters time a
//     random sample of about one decision in 8 (core.Event.Latency), since
//     two clock reads cost as much as an in-memory decision: the
//     histogram's count is that sample's, and its shape the traffic's.
//     Requests that never reached the limiter (a bad key, a failed key
//     function) are not observed.
//   - floodgate_denial_hold_seconds{limit, transport}: how long refusals
//     were held before they were answered (the adapters' WithDenialHold);
//     refusals answered at once are not observed.
//   - floodgate_breaker_state{breaker, state}: with [WithHealth], 1 for
//     the state each store's circuit breaker is in (closed, open,
//     half-open) and 0 for the others, read at each scrape.
//   - floodgate_fallback_decisions_total{breaker, side},
//     floodgate_fallback_primary_failures_total{breaker} and
//     floodgate_breaker_opens_total{breaker}: with [WithHealth], the
//     store's counters (decisions the store made, side "primary", made
//     locally while it failed, "local", or made from a local quota lease,
//     "lease"; failed calls; times the breaker opened), read at each
//     scrape.
//   - floodgate_store_leases_total{breaker},
//     floodgate_store_returned_units_total{breaker} and
//     floodgate_store_returns_total{breaker}: with [WithHealth], the local
//     quota leases the store granted, the units they gave back unspent and
//     the round trips that gave them back (redisstore's WithLocalQuota).
//     Like every metric here, they carry no key.
//
// # Keys are never labels
//
// The event's key (an IP address, an API key) is personal data and would
// make one series per client: no metric uses it. Limit names become
// label values, so name limits after policies ("login", "api"), never
// after clients.
//
// # Cost
//
// Each limit and transport's series is made the first time they are seen;
// after that Observe takes no lock and allocates nothing: it finds the
// series, picks one of its cells at random, and makes two to four atomic
// integer additions there (the outcome's count, the latency's bucket and
// sum; a hold's bucket and sum, an overflow, a store error's failure
// mode). BenchmarkObserve measures it from every core at once, the case
// the budget of 50 ns and no allocation is for; BenchmarkObserveSeq
// from one goroutine.
//
// Two things make it cheap. Each series keeps its counts in 8 cells on
// cache lines of their own, so that cores counting the same series at once
// do not pass a cache line back and forth; a scrape adds the cells up and
// exports the sums. A scrape that runs during an observation may count
// part of it (its latency's sum before its bucket, say), which the next
// scrape corrects. And the series are found first by the identity of the
// names' strings (their memory), which recurs because limit names come
// from the core.Limit values a limiter holds, without hashing their bytes;
// a name seen in new memory is found by content and recorded under that
// identity too, while room lasts: a table of 4096 entries, each a few
// dozen bytes, filled once and never replaced. So names built afresh for
// every event cost a content lookup each and cannot grow it.
//
// A series takes 3 KiB of memory with the default buckets (up to 16 more
// buckets add 1 KiB), whichever of its metrics it uses; those it has not
// counted yet are not exported, as a metric does not exist before its
// first event.
//
// # Queries
//
// The share of requests refused, per limit, over five minutes:
//
//	sum by (limit) (rate(floodgate_requests_total{outcome="denied",shadow="false"}[5m]))
//	  / sum by (limit) (rate(floodgate_requests_total[5m]))
//
// What enforcing a shadow-mode limit would refuse:
//
//	sum by (limit) (rate(floodgate_requests_total{outcome="denied",shadow="true"}[5m]))
//
// The 99th percentile of decision latency, and an alert on an open
// breaker:
//
//	histogram_quantile(0.99, sum by (le, limit) (rate(floodgate_decision_duration_seconds_bucket[5m])))
//	max by (breaker) (floodgate_breaker_state{state="open"}) == 1
package promobs
