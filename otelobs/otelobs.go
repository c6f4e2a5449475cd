package otelobs

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/obsreg"
	"github.com/floodgate/floodgate/internal/option"
	"github.com/floodgate/floodgate/overload"
)

// Observer records what the adapters report on OpenTelemetry instruments
// and as events on the request's span (the package documentation lists
// both). Make one with [New] and hand it to an adapter's WithObserver. It
// is safe for concurrent use. After the first event of each limit and
// transport it builds no attribute set: it hands the instruments sets
// made once, so that what an event costs is the MeterProvider's.
type Observer struct {
	requests  metric.Int64Counter // limit, transport, outcome, shadow
	overflow  metric.Int64Counter // limit, transport
	leased    metric.Int64Counter // limit, transport
	storeErrs metric.Int64Counter // transport, failure
	shed      metric.Int64Counter // limit, transport, priority
	latency   metric.Float64Histogram
	held      metric.Float64Histogram

	// series maps a limit and transport to their attribute sets, added
	// as they are first seen.
	series obsreg.Series[series]
}

var _ core.Observer = (*Observer)(nil)

// scopeName names the meter the instruments belong to.
const scopeName = "github.com/floodgate/floodgate/otelobs"

// numOutcomes is how many outcomes core defines; an event's outcome beyond
// them takes the slow path.
const numOutcomes = int(core.OutcomeShed) + 1

// numFailures is how many failure modes core defines.
const numFailures = int(core.FailOpen) + 1

// defaultLatencyBuckets and defaultHoldBuckets are the histograms' bucket
// bounds in seconds, promobs's: from 1 µs (an in-memory decision) through
// a Redis round trip to 1 s; and holds, which WithDenialHold caps at a
// few seconds. They are advice: a View of the MeterProvider replaces
// them.
var (
	defaultLatencyBuckets = []float64{1e-6, 5e-6, 25e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 100e-3, 250e-3, 1}
	defaultHoldBuckets    = []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}
)

// series holds the measurement options of one limit and transport, each
// carrying an attribute set made once: a slice passed on as it is to the
// instruments' variadic options costs no allocation.
type series struct {
	requests [numOutcomes][2][]metric.AddOption // by outcome, then shadow
	add      []metric.AddOption                 // limit, transport
	record   []metric.RecordOption              // limit, transport
	// storeErrs are by failure mode, with the transport only: a store
	// error that names a limit adds to its transport's store errors.
	storeErrs [numFailures][]metric.AddOption
	// shed are by the named priorities, Sheddable (-1) to Critical (1)
	// at shed[p+1]; another priority's sheds are recorded slowly.
	shed [3][]metric.AddOption
}

// New makes an Observer whose instruments belong to the meter
// "github.com/floodgate/floodgate/otelobs" of the global MeterProvider, or
// of the one given [WithMeterProvider]. It fails if an option is invalid
// or the provider refuses an instrument. Two Observers on one provider
// share the instruments, and their counts add up.
func New(opts ...Option) (*Observer, error) {
	o := options{errs: option.Errors{Prefix: "otelobs: "}}
	if err := option.Apply(&o, &o.errs, opts); err != nil {
		return nil, err
	}
	if o.provider == nil {
		o.provider = otel.GetMeterProvider()
	}
	m := o.provider.Meter(scopeName)
	ob := &Observer{}
	var errs []error
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	histogram := func(name, desc string, bounds []float64) metric.Float64Histogram {
		h, err := m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(bounds...))
		errs = append(errs, err)
		return h
	}
	ob.requests = counter("floodgate.requests", "{request}",
		"Requests the rate limiter checked, by the limit that decided (\"\" when none did), transport, outcome, and whether shadow mode admitted them anyway.")
	ob.overflow = counter("floodgate.overflow_decisions", "{decision}",
		"Decisions made against the limiter's shared overflow state because its table of keys was full; a steady rate means the capacity is too small.")
	ob.leased = counter("floodgate.leased_decisions", "{decision}",
		"Decisions made in memory from local quota leases (redisstore's WithLocalQuota), with no round trip to the shared store.")
	ob.storeErrs = counter("floodgate.store.errors", "{request}",
		"Requests for which the store failed, by the failure mode applied (fail-open admitted them, fail-closed refused them).")
	ob.shed = counter("floodgate.shed", "{request}",
		"Requests an overload guard shed (outcome shed), by the limit that decided, transport and the priority of the request (overload.PriorityOf: sheddable, normal, critical, or the number).")
	ob.latency = histogram("floodgate.decision.duration",
		"How long the limiter took to answer (a store round trip included; the shaping wait and the denial hold excluded), on a sample of the decisions.",
		defaultLatencyBuckets)
	ob.held = histogram("floodgate.denial.hold",
		"How long refusals were held before they were answered (WithDenialHold); refusals answered at once are not recorded.",
		defaultHoldBuckets)
	if len(o.breakers) > 0 {
		errs = append(errs, registerHealth(m, o.breakers))
	}
	if len(o.guards) > 0 {
		errs = append(errs, registerGuards(m, o.guards))
	}
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("otelobs: making the instruments: %w", err)
		}
	}
	return ob, nil
}

// Observe records e on the instruments, passing them ctx (an SDK takes
// exemplars from the span it carries), and adds a span event to the span
// of ctx for a refusal or a store error. Its key is never used.
func (o *Observer) Observe(ctx context.Context, e core.Event) {
	s := o.seriesFor(e.Decision.Limit.Name, e.Transport)
	if int(e.Outcome) < numOutcomes {
		o.requests.Add(ctx, 1, s.requests[e.Outcome][b2i(e.Shadow)]...)
	} else {
		// An outcome this package does not know yet: recorded, slowly.
		o.requests.Add(ctx, 1, metric.WithAttributes(
			attribute.String("limit", e.Decision.Limit.Name), attribute.String("transport", e.Transport),
			attribute.String("outcome", e.Outcome.String()), attribute.Bool("shadow", e.Shadow)))
	}
	if e.Latency > 0 {
		o.latency.Record(ctx, e.Latency.Seconds(), s.record...)
	}
	if e.Decision.Leased {
		o.leased.Add(ctx, 1, s.add...)
	}
	if e.Decision.Overflow {
		o.overflow.Add(ctx, 1, s.add...)
	}
	if e.Held > 0 {
		o.held.Record(ctx, e.Held.Seconds(), s.record...)
	}
	switch e.Outcome {
	case core.OutcomeStoreError:
		if int(e.Failure) < numFailures {
			o.storeErrs.Add(ctx, 1, s.storeErrs[e.Failure]...)
		} else {
			o.storeErrs.Add(ctx, 1, metric.WithAttributes(
				attribute.String("transport", e.Transport), attribute.String("failure", e.Failure.String())))
		}
		storeErrorEvent(ctx, &e)
	case core.OutcomeDenied:
		refusalEvent(ctx, &e)
	case core.OutcomeShed:
		if p := overload.PriorityOf(ctx); p >= overload.Sheddable && p <= overload.Critical {
			o.shed.Add(ctx, 1, s.shed[p+1]...)
		} else {
			o.shed.Add(ctx, 1, metric.WithAttributes(attribute.String("limit", e.Decision.Limit.Name),
				attribute.String("transport", e.Transport), attribute.String("priority", obsreg.PriorityLabel(p))))
		}
	}
}

// seriesFor returns the series of limit and transport, adding it the
// first time they are seen.
func (o *Observer) seriesFor(limit, transport string) *series {
	k := obsreg.Key{Limit: limit, Transport: transport}
	if s := o.series.Get(k); s != nil {
		return s
	}
	return o.series.Add(k, func() *series { return newSeries(limit, transport) })
}

// newSeries makes the attribute sets of limit and transport.
func newSeries(limit, transport string) *series {
	s := &series{}
	l, t := attribute.String("limit", limit), attribute.String("transport", transport)
	for out := range numOutcomes {
		for shadow := range 2 {
			set := attribute.NewSet(l, t, attribute.String("outcome", core.Outcome(out).String()), attribute.Bool("shadow", shadow == 1))
			s.requests[out][shadow] = []metric.AddOption{metric.WithAttributeSet(set)}
		}
	}
	both := metric.WithAttributeSet(attribute.NewSet(l, t))
	s.add, s.record = []metric.AddOption{both}, []metric.RecordOption{both}
	for f := range numFailures {
		set := attribute.NewSet(t, attribute.String("failure", core.FailureMode(f).String()))
		s.storeErrs[f] = []metric.AddOption{metric.WithAttributeSet(set)}
	}
	for i := range s.shed {
		p := attribute.String("priority", obsreg.PriorityLabel(overload.Priority(i-1)))
		s.shed[i] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(l, t, p))}
	}
	return s
}

// b2i is 1 for true, 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
