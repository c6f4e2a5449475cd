package promobs

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/obsreg"
	"github.com/floodgate/floodgate/internal/option"
	"github.com/floodgate/floodgate/overload"
)

// Option configures an [Observer] made by [New].
type Option func(*options)

// namespace prefixes every metric's name. To tell two Observers on one
// registry apart, or to add fixed labels, wrap the registry:
// prometheus.WrapRegistererWithPrefix or prometheus.WrapRegistererWith.
const namespace = "floodgate"

// defaultLatencyBuckets are the buckets of the decision-latency
// histogram, in seconds: from 1 µs, where an in-memory decision falls,
// through the 0.1-5 ms of a Redis round trip, to the 100 ms of a slow
// store and beyond.
var defaultLatencyBuckets = []float64{1e-6, 5e-6, 25e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 100e-3, 250e-3, 1}

// defaultHoldBuckets are the buckets of the denial-hold histogram, in
// seconds: holds are capped by the adapters' WithDenialHold, typically a
// few seconds at most.
var defaultHoldBuckets = []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// options is what the Options set, with errs collecting their mistakes.
type options struct {
	namespace   string
	constLabels prometheus.Labels
	latency     []float64
	hold        []float64
	breakers    []obsreg.Breaker
	guards      []obsreg.Guard
	errs        option.Errors
}

// WithBuckets sets the upper bounds, in seconds and increasing, of the
// two histograms' buckets: latency for floodgate_decision_duration_seconds, hold
// for floodgate_denial_hold_seconds. A nil slice keeps that histogram's
// default: for latency 1 µs (an in-memory decision) through 0.1-5 ms (a
// Redis round trip) to 1 s,
//
//	1µs 5µs 25µs 100µs 250µs 500µs 1ms 2.5ms 5ms 10ms 25ms 100ms 250ms 1s
//
// and for hold, which the adapters' WithDenialHold caps at a few seconds,
//
//	10ms 50ms 100ms 250ms 500ms 1s 2.5s 5s 10s 30s
func WithBuckets(latency, hold []float64) Option {
	return func(o *options) {
		if latency != nil && o.errs.Require(increasing(latency), "WithBuckets(%v, ...): the latency bounds must be one or more positive numbers, strictly increasing; nil keeps the default", latency) {
			o.latency = slices.Clone(latency)
		}
		if hold != nil && o.errs.Require(increasing(hold), "WithBuckets(..., %v): the hold bounds must be one or more positive numbers, strictly increasing; nil keeps the default", hold) {
			o.hold = slices.Clone(hold)
		}
	}
}

// WithHealth exports the health of a limiter's shared store, read from r
// at each scrape (a redisstore Limiter, Stack or Dynamic: see
// core.HealthReporter), as floodgate_breaker_state{breaker=name,
// state=...}: 1 for the state its circuit breaker is in, 0 for the others;
// floodgate_fallback_decisions_total{breaker=name, side="primary"|"local"}:
// the decisions the store made and those made in memory while it failed;
// floodgate_fallback_primary_failures_total{breaker=name}: the calls to the
// store that failed; and floodgate_breaker_opens_total{breaker=name}. name
// tells stores apart ("redis") and must be unique among them.
func WithHealth(name string, r core.HealthReporter) Option {
	return func(o *options) {
		if o.errs.Require(r != nil, "WithHealth(%q, nil): give the limiter whose store to export, such as a redisstore.Limiter", name) {
			o.breakers = obsreg.AddBreaker(&o.errs, o.breakers, obsreg.Breaker{Name: name, Health: r})
		}
	}
}

// WithGuard exports the state of an overload guard (overload.Adaptive,
// overload.BBR), read at each scrape, as floodgate_guard_limit{guard=name}
// (the bound on requests in flight now; 0 while none applies),
// floodgate_guard_in_flight{guard=name} and
// floodgate_guard_latency_seconds{guard=name} (the latency it judges the
// service by). Its sheds are counted by floodgate_shed_total. name tells
// guards apart ("api") and must be unique among them.
func WithGuard(name string, g overload.Guard) Option {
	return func(o *options) {
		o.guards = obsreg.AddGuard(&o.errs, o.guards, obsreg.Guard{Name: name, Guard: g}, "WithGuard")
	}
}

func increasing(b []float64) bool {
	if len(b) == 0 || !(b[0] > 0) {
		return false
	}
	for i := 1; i < len(b); i++ {
		if !(b[i] > b[i-1]) {
			return false
		}
	}
	return true
}
