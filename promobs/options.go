package promobs

import (
	"maps"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floodgate/floodgate/fallback"
	"github.com/floodgate/floodgate/internal/option"
)

// Option configures an [Observer] made by [New].
type Option func(*options)

// DefaultNamespace prefixes every metric's name unless [WithNamespace]
// says otherwise.
const DefaultNamespace = "floodgate"

// defaultLatencyBuckets are the buckets of the decision-latency
// histogram, in seconds: from 1 µs, where an in-memory decision falls,
// through the 0.1-5 ms of a Redis round trip, to the 100 ms of fallback's
// default timeout and beyond.
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
	breakers    []breakerSource
	errs        option.Errors
}

// breakerSource is one circuit breaker the collector reads at scrape time.
type breakerSource struct {
	name  string
	state func() fallback.State
	stats func() fallback.Stats // nil for a bare state function
}

// WithNamespace sets the prefix of every metric's name (default
// [DefaultNamespace], "floodgate"): "floodgate_requests_total". An empty
// namespace leaves the names unprefixed ("requests_total").
func WithNamespace(ns string) Option {
	return func(o *options) {
		if o.errs.Require(validName(ns), "WithNamespace(%q): a namespace is letters, digits and underscores, not starting with a digit", ns) {
			o.namespace = ns
		}
	}
}

// WithConstLabels adds labels with fixed values to every metric, such as
// the service or the instance's zone. Their names must not be one of the
// labels the metrics have already (limit, transport, outcome, shadow,
// failure, breaker, state, side); [New] reports a clash.
func WithConstLabels(l prometheus.Labels) Option {
	return func(o *options) {
		for name := range l {
			if !o.errs.Require(validName(name) && name != "", "WithConstLabels: label name %q is not letters, digits and underscores starting with a letter or underscore", name) {
				return
			}
		}
		o.constLabels = maps.Clone(l)
	}
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

// WithBreaker exports the state of a circuit breaker, read at each scrape
// from state, as floodgate_breaker_state{breaker=name, state=...}: 1 for
// the state it is in, 0 for the others. Pass a redisstore Limiter's or
// Stack's BreakerState method, or a fallback.Limiter's State (or use
// [WithFallback], which adds its counters). name tells
// breakers apart and must be unique among them.
func WithBreaker(name string, state func() fallback.State) Option {
	return func(o *options) {
		if o.errs.Require(state != nil, "WithBreaker(%q, nil): give the function that reads the state, such as a fallback.Limiter's State", name) {
			o.addBreaker(breakerSource{name: name, state: state})
		}
	}
}

// WithFallback exports l's breaker state as [WithBreaker] does and its
// counters (fallback.Limiter.Stats) as floodgate_fallback_decisions_total
// {breaker=name, side="primary"|"local"},
// floodgate_fallback_primary_failures_total and
// floodgate_breaker_opens_total, read at each scrape.
func WithFallback(name string, l *fallback.Limiter) Option {
	return func(o *options) {
		if o.errs.Require(l != nil, "WithFallback(%q, nil): give the fallback.Limiter to export", name) {
			o.addBreaker(breakerSource{name: name, state: l.State, stats: l.Stats})
		}
	}
}

// addBreaker adds b unless it has no name or the name of another.
func (o *options) addBreaker(b breakerSource) {
	if !o.errs.Require(b.name != "", "breaker name is empty; name it after what it guards (\"redis\")") {
		return
	}
	for _, x := range o.breakers {
		if !o.errs.Require(x.name != b.name, "two breakers are named %q; give each its own name", b.name) {
			return
		}
	}
	o.breakers = append(o.breakers, b)
}

// validName reports whether s is a metric or label name's part: letters,
// digits and underscores, not starting with a digit ("" is valid).
func validName(s string) bool {
	for i, r := range s {
		switch {
		case r == '_', 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z':
		case '0' <= r && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
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
