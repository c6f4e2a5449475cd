// Package otelobs records what the floodgate adapters report (a
// [core.Observer]) through the OpenTelemetry metrics API, and adds an
// event to the request's span for each refusal and store failure. It
// counts what package promobs counts, under OpenTelemetry's names, for
// services that export through an OpenTelemetry SDK rather than a
// Prometheus registry. Of the library's packages it is the only one that
// imports OpenTelemetry: core, keyfunc and httpmw stay free of it, and a
// program that does not import otelobs compiles none of it.
//
// Make an Observer on the application's MeterProvider (by default the
// global one), hand it to the adapters, and put the tracing middleware,
// which starts the request's span, in front of them:
//
//	obs, err := otelobs.New(otelobs.WithMeterProvider(provider))
//	if err != nil {
//		log.Fatal(err)
//	}
//	mw, err := httpmw.New(lim, keyfunc.MustClientIP(), httpmw.WithObserver(obs))
//	if err != nil {
//		log.Fatal(err)
//	}
//	http.Handle("/", otelhttp.NewHandler(mw.Handler(app), "api"))
//
// To feed Prometheus and OpenTelemetry at once, join the two:
// core.JoinObservers(promObs, otelObs).
//
// # Metrics
//
// The meter is "github.com/floodgate/floodgate/otelobs". The instruments
// and their attributes are promobs's metrics and labels, one for one: an
// exporter to Prometheus that turns dots into underscores and adds the
// unit and _total suffixes gives promobs's names (floodgate.requests
// becomes floodgate_requests_total, floodgate.decision.duration
// floodgate_decision_duration_seconds), with the same label values
// (TestSameAsPromobs feeds both the same events and compares).
//
//   - floodgate.requests{limit, transport, outcome, shadow}: every request
//     an adapter checked. limit is the name of the limit that decided
//     (core.Limit.Name), "" when none did; transport is core.Event's
//     ("http", "grpc", or the service's "envoy-rls"); outcome is
//     core.Outcome.String (allowed, shaped, denied, bad_key, bad_cost,
//     error, store_error, canceled); shadow is a boolean, true for
//     requests shadow mode let through whatever the outcome says.
//   - floodgate.overflow_decisions{limit, transport}: decisions made
//     against the shared overflow state because the table of keys was
//     full. Any steady rate means the capacity is too small.
//   - floodgate.leased_decisions{limit, transport}: decisions made in
//     memory from local quota leases (redisstore's WithLocalQuota).
//   - floodgate.store.errors{transport, failure}: store failures, by the
//     failure mode applied ("fail-open" admitted the request,
//     "fail-closed" refused it).
//   - floodgate.decision.duration{limit, transport}, a histogram in
//     seconds: how long the limiter took to answer, on the sample of about
//     one decision in 8 that the adapters time (core.Event.Latency).
//   - floodgate.denial.hold{limit, transport}, a histogram in seconds: how
//     long refusals were held before they were answered (WithDenialHold).
//   - With [WithHealth], read at each collection:
//     floodgate.breaker.state{breaker, state}, 1 for the state each
//     store's circuit breaker is in and 0 for the others;
//     floodgate.fallback.decisions{breaker, side} (side primary, local or
//     lease), floodgate.fallback.primary_failures{breaker},
//     floodgate.breaker.opens{breaker}, floodgate.store.leases{breaker},
//     floodgate.store.returned_units{breaker} and
//     floodgate.store.returns{breaker}.
//   - floodgate.shed{limit, transport, priority}: requests an overload
//     guard shed, by the priority their context carried
//     (overload.PriorityOf: sheddable, normal, critical, or the number).
//   - With [WithGuard], read at each collection:
//     floodgate.guard.limit{guard} (an overload guard's bound on requests
//     in flight, 0 while none applies), floodgate.guard.in_flight{guard}
//     and floodgate.guard.latency{guard} (seconds). Sheds count in
//     floodgate.requests with outcome "shed".
//
// The histograms advise promobs's bucket bounds (1 µs to 1 s; 10 ms to
// 30 s); a View of the MeterProvider replaces them, as it can rename an
// instrument or drop an attribute.
//
// # Span events
//
// A refusal adds the event "floodgate.denied" to the span of the
// request's context (trace.SpanFromContext: the adapters pass the
// request's context to Observe), with floodgate.limit (the limit's
// name), floodgate.remaining, floodgate.retry_after (seconds),
// floodgate.held (seconds, when the refusal was held) and
// floodgate.shadow=true in shadow mode, where the request went through.
// A store failure adds "floodgate.store_error" with floodgate.failure,
// floodgate.admitted and floodgate.limit when the event names one; not the
// error's text, which can quote the key. No tracer is needed: the span is
// the one the application's tracing started, and nothing is added when it
// is not recording.
//
// # Keys are never attributes
//
// The event's key (an IP address, an API key) is personal data and would
// make one series per client: no instrument or span event carries it.
// Limit names become attribute values, so name limits after policies
// ("login", "api"), never after clients.
//
// # Cost
//
// Each limit and transport's attribute sets are made the first time they
// are seen, and kept; after that Observe takes no lock and builds no
// set, and the SDK finds the series by the set's precomputed identity.
// BenchmarkObserve measures it with the SDK and a ManualReader.
package otelobs
