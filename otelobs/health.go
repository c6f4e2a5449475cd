package otelobs

import (
	"context"

	"github.com/floodgate/floodgate/internal/obsreg"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// The stores' health (WithHealth): asynchronous instruments whose callback
// reads each store's core.Health at every collection.

// breakerStates are the states a breaker can be in (core.Health.Breaker),
// each reported as a data point of floodgate.breaker.state.
var breakerStates = [...]string{"closed", "open", "half-open"}

// breakerAttrs are one breaker's attribute sets, made once.
type breakerAttrs struct {
	src                    obsreg.Breaker
	one                    metric.MeasurementOption                     // breaker
	state                  [len(breakerStates)]metric.MeasurementOption // breaker, state
	primary, local, leased metric.MeasurementOption                     // breaker, side
}

// registerHealth makes the health instruments on m and registers the
// callback that reads the breakers bs.
func registerHealth(m metric.Meter, bs []obsreg.Breaker) error {
	var errs []error
	counter := func(name, unit, desc string) metric.Int64ObservableCounter {
		c, err := m.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	state, err := m.Int64ObservableGauge("floodgate.breaker.state",
		metric.WithDescription("Circuit breaker state: 1 for the state the breaker is in (closed, open, half-open), 0 for the others."))
	errs = append(errs, err)
	decisions := counter("floodgate.fallback.decisions", "{decision}",
		"Decisions of a limiter on a shared store, by the side that made them: the primary (the store), the local limiter deciding while it fails, or a local quota lease.")
	failures := counter("floodgate.fallback.primary_failures", "{call}",
		"Calls to a limiter's shared store that failed.")
	opens := counter("floodgate.breaker.opens", "{open}",
		"How often the circuit breaker opened, from closed or after a failed probe.")
	leases := counter("floodgate.store.leases", "{lease}",
		"Local quota leases a limiter's shared store granted (each a round trip).")
	returned := counter("floodgate.store.returned_units", "{unit}",
		"Units local quota leases gave back to a limiter's shared store unspent.")
	returns := counter("floodgate.store.returns", "{call}",
		"Round trips that gave local quota units back to a limiter's shared store.")
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	attrs := make([]breakerAttrs, len(bs))
	for i, b := range bs {
		name := attribute.String("breaker", b.Name)
		side := func(s string) metric.MeasurementOption {
			return metric.WithAttributeSet(attribute.NewSet(name, attribute.String("side", s)))
		}
		a := breakerAttrs{src: b, one: metric.WithAttributeSet(attribute.NewSet(name)),
			primary: side("primary"), local: side("local"), leased: side("lease")}
		for j, s := range breakerStates {
			a.state[j] = metric.WithAttributeSet(attribute.NewSet(name, attribute.String("state", s)))
		}
		attrs[i] = a
	}
	_, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for _, a := range attrs {
			h := a.src.Health.Health()
			for j, s := range breakerStates {
				o.ObserveInt64(state, int64(b2i(s == h.Breaker)), a.state[j])
			}
			o.ObserveInt64(decisions, int64(h.StoreDecisions), a.primary)
			o.ObserveInt64(decisions, int64(h.LocalDecisions), a.local)
			o.ObserveInt64(decisions, int64(h.LeaseDecisions), a.leased)
			o.ObserveInt64(failures, int64(h.Failures), a.one)
			o.ObserveInt64(opens, int64(h.Opens), a.one)
			o.ObserveInt64(leases, int64(h.Leases), a.one)
			o.ObserveInt64(returned, int64(h.Returned), a.one)
			o.ObserveInt64(returns, int64(h.Returns), a.one)
		}
		return nil
	}, state, decisions, failures, opens, leases, returned, returns)
	return err
}
