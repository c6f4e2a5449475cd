package otelobs

import (
	"go.opentelemetry.io/otel/metric"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/obsreg"
	"github.com/floodgate/floodgate/internal/option"
	"github.com/floodgate/floodgate/overload"
)

// Option configures an [Observer] made by [New].
type Option func(*options)

// options is what the Options set, with errs collecting their mistakes.
type options struct {
	provider metric.MeterProvider // nil: the global one, read at New
	breakers []obsreg.Breaker
	guards   []obsreg.Guard
	errs     option.Errors
}

// WithMeterProvider sets where the instruments are made (default: the
// global MeterProvider, otel.GetMeterProvider(), as read when [New] runs;
// until the application sets one, the global provider forwards to it once
// it does). The Observer asks it for the meter named
// "github.com/floodgate/floodgate/otelobs".
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(o *options) {
		if o.errs.Require(mp != nil, "WithMeterProvider(nil); leave the option out for the global MeterProvider") {
			o.provider = mp
		}
	}
}

// WithHealth reports the health of a limiter's shared store, read from r
// at each collection (a redisstore Limiter, Stack or Dynamic: see
// core.HealthReporter), as floodgate.breaker.state{breaker=name, state}:
// 1 for the state its circuit breaker is in, 0 for the others; and the
// store's counters floodgate.fallback.decisions{breaker=name, side},
// floodgate.fallback.primary_failures, floodgate.breaker.opens,
// floodgate.store.leases and floodgate.store.returned_units. name tells
// stores apart ("redis") and must be unique among them. The option means
// what promobs's WithHealth means.
func WithHealth(name string, r core.HealthReporter) Option {
	return func(o *options) {
		if o.errs.Require(r != nil, "WithHealth(%q, nil): give the limiter whose store to report, such as a redisstore.Limiter", name) {
			o.breakers = obsreg.AddBreaker(&o.errs, o.breakers, obsreg.Breaker{Name: name, Health: r})
		}
	}
}

// WithGuard reports the state of an overload guard (overload.Adaptive,
// overload.BBR), read at each collection, as the gauges
// floodgate.guard.limit{guard=name} (the bound on requests in flight now;
// 0 while none applies), floodgate.guard.in_flight and
// floodgate.guard.latency (the latency it judges the service by, in
// seconds). name tells guards apart ("api") and must be unique among
// them. The option means what promobs's WithGuard means.
func WithGuard(name string, g overload.Guard) Option {
	return func(o *options) {
		o.guards = obsreg.AddGuard(&o.errs, o.guards, obsreg.Guard{Name: name, Guard: g}, "WithGuard")
	}
}
