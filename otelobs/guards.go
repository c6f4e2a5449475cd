package otelobs

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/floodgate/floodgate/internal/obsreg"
)

// The overload guards' state (WithGuard): asynchronous gauges whose
// callback reads each guard at every collection.

// registerGuards makes the guards' instruments on m and registers the
// callback that reads the guards gs.
func registerGuards(m metric.Meter, gs []obsreg.Guard) error {
	limit, err1 := m.Int64ObservableGauge("floodgate.guard.limit", metric.WithUnit("{request}"),
		metric.WithDescription("The bound an overload guard puts on requests in flight now, for Normal priority; 0 while none applies (BBR with its CPU below the threshold)."))
	inFlight, err2 := m.Int64ObservableGauge("floodgate.guard.in_flight", metric.WithUnit("{request}"),
		metric.WithDescription("Requests (units) an overload guard admitted that have not ended."))
	latency, err3 := m.Float64ObservableGauge("floodgate.guard.latency", metric.WithUnit("s"),
		metric.WithDescription("The latency an overload guard judges the service by: Adaptive's baseline (without a queue), BBR's least bucket latency; 0 before any was measured."))
	for _, err := range []error{err1, err2, err3} {
		if err != nil {
			return err
		}
	}
	attrs := make([]metric.MeasurementOption, len(gs))
	for i, g := range gs {
		attrs[i] = metric.WithAttributeSet(attribute.NewSet(attribute.String("guard", g.Name)))
	}
	_, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for i, g := range gs {
			r := g.Guard.Reading()
			o.ObserveInt64(limit, int64(r.Limit), attrs[i])
			o.ObserveInt64(inFlight, int64(r.InFlight), attrs[i])
			o.ObserveFloat64(latency, r.Latency.Seconds(), attrs[i])
		}
		return nil
	}, limit, inFlight, latency)
	return err
}
