package promobs

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/obsreg"
	"github.com/floodgate/floodgate/internal/option"
	"github.com/floodgate/floodgate/overload"
)

// Observer counts what the adapters report into Prometheus metrics (the
// package documentation lists them). Make one with [New] and hand it to
// an adapter's WithObserver. It is safe for concurrent use, and after the
// first event of each limit and transport, observing an event takes no
// lock and allocates nothing (but for a bounded number of small entries
// the first time a name is seen in new memory; see the package
// documentation's Cost).
type Observer struct {
	requests  *cellCollector // limit, transport, outcome, shadow
	overflow  *cellCollector // limit, transport
	leased    *cellCollector // limit, transport
	storeErrs *cellCollector // transport, failure
	latency   *cellCollector // limit, transport
	held      *cellCollector // limit, transport

	// latencyBounds and holdBounds are the buckets' upper bounds in
	// nanoseconds; wordHeldSum is where the holds' histogram starts in a
	// cell, after the latency's.
	latencyBounds, holdBounds []int64
	wordHeldSum               int

	// unknownOutcomes and unknownFailures count, slowly, the outcomes and
	// failure modes newer than this package, which the cells have no
	// place for. They are collected by requests and storeErrs, not
	// registered themselves.
	unknownOutcomes *prometheus.CounterVec
	unknownFailures *prometheus.CounterVec

	// shed counts the requests overload guards shed, by the priority
	// their context carried (overload.PriorityOf): a shed is the
	// overloaded path, so it may take a label lookup.
	shed *prometheus.CounterVec

	// series maps a limit and transport to their counts, added as they
	// are first seen.
	series obsreg.Series[series]

	// byIdentity finds a series without hashing the names (see
	// seriesFor).
	byIdentity identityCache
}

var _ core.Observer = (*Observer)(nil)

// numOutcomes is how many outcomes core defines; an event's outcome beyond
// them takes the slow path.
const numOutcomes = int(core.OutcomeShed) + 1

// numFailures is how many failure modes core defines.
const numFailures = int(core.FailOpen) + 1

// seriesKey is a series' names, by content.
type seriesKey = obsreg.Key

// series holds the counts of one limit and transport: the requests by
// outcome and shadow, the overflow decisions, the store errors by failure
// mode, and the latency and hold histograms (see the word offsets in
// cells.go).
type series struct {
	limit, transport string
	counts           stripedCounts
}

// New makes an Observer and registers its metrics with reg (pass
// prometheus.DefaultRegisterer for the default registry, which
// promhttp.Handler serves). It fails if an option is invalid or if reg
// refuses a metric, such as one registered already: a second Observer on
// one registry needs a wrapped registry (see the package documentation).
// On failure nothing stays registered.
func New(reg prometheus.Registerer, opts ...Option) (*Observer, error) {
	o := options{
		namespace: namespace,
		latency:   defaultLatencyBuckets,
		hold:      defaultHoldBuckets,
		errs:      option.Errors{Prefix: "promobs: "},
	}
	if err := option.Apply(&o, &o.errs, opts); err != nil {
		return nil, err
	}
	if reg == nil {
		return nil, errors.New("promobs: nil Registerer; pass prometheus.DefaultRegisterer, or a registry of your own")
	}
	requestsOpts := prometheus.CounterOpts{
		Namespace: o.namespace, Name: "requests_total", ConstLabels: o.constLabels,
		Help: "Requests the rate limiter checked, by the limit that decided (\"\" when none did), transport, outcome, and whether shadow mode admitted them anyway.",
	}
	storeErrsOpts := prometheus.CounterOpts{
		Namespace: o.namespace, Name: "store_errors_total", ConstLabels: o.constLabels,
		Help: "Requests for which the store failed, by the failure mode applied (fail-open admitted them, fail-closed refused them).",
	}
	ob := &Observer{
		unknownOutcomes: prometheus.NewCounterVec(requestsOpts, []string{"limit", "transport", "outcome", "shadow"}),
		unknownFailures: prometheus.NewCounterVec(storeErrsOpts, []string{"transport", "failure"}),
	}
	latencySeconds, latencyNs := bucketsOf(o.latency)
	holdSeconds, holdNs := bucketsOf(o.hold)
	ob.latencyBounds, ob.holdBounds = latencyNs, holdNs
	ob.wordHeldSum = wordLatency + len(latencyNs) + 1
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(o.namespace, "", name), help, labels, o.constLabels)
	}
	ob.requests = &cellCollector{
		desc:   desc("requests_total", requestsOpts.Help, "limit", "transport", "outcome", "shadow"),
		series: &ob.series, emit: emitRequests, slow: ob.unknownOutcomes,
	}
	ob.overflow = &cellCollector{
		desc: desc("overflow_decisions_total",
			"Decisions made against the limiter's shared overflow state because its table of keys was full; a steady rate means the capacity is too small.",
			"limit", "transport"),
		series: &ob.series, emit: emitOverflow,
	}
	ob.leased = &cellCollector{
		desc: desc("leased_decisions_total",
			"Decisions made in memory from local quota leases (redisstore's WithLocalQuota), with no round trip to the shared store.",
			"limit", "transport"),
		series: &ob.series, emit: emitLeased,
	}
	ob.storeErrs = &cellCollector{
		desc:   desc("store_errors_total", storeErrsOpts.Help, "transport", "failure"),
		series: &ob.series, emit: emitStoreErrors, slow: ob.unknownFailures,
	}
	ob.latency = &cellCollector{
		desc: desc("decision_duration_seconds",
			"How long the limiter took to answer (a store round trip included; the shaping wait and the denial hold excluded).",
			"limit", "transport"),
		series: &ob.series, emit: histogramEmitter(wordLatencySum, latencySeconds),
	}
	ob.held = &cellCollector{
		desc: desc("denial_hold_seconds",
			"How long refusals were held before they were answered (WithDenialHold); refusals answered at once are not counted.",
			"limit", "transport"),
		series: &ob.series, emit: histogramEmitter(ob.wordHeldSum, holdSeconds),
	}
	ob.shed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: o.namespace, Name: "shed_total", ConstLabels: o.constLabels,
		Help: "Requests an overload guard shed (core.OutcomeShed), by the limit that decided, transport and the priority of the request (overload.PriorityOf: sheddable, normal, critical, or the number).",
	}, []string{"limit", "transport", "priority"})
	cs := []prometheus.Collector{ob.requests, ob.overflow, ob.leased, ob.storeErrs, ob.latency, ob.held, ob.shed}
	if len(o.breakers) > 0 {
		cs = append(cs, newBreakerCollector(o.namespace, o.constLabels, o.breakers))
	}
	if len(o.guards) > 0 {
		cs = append(cs, newGuardCollector(o.namespace, o.constLabels, o.guards))
	}
	for i, c := range cs {
		if err := reg.Register(c); err != nil {
			for _, done := range cs[:i] {
				reg.Unregister(done)
			}
			return nil, fmt.Errorf("promobs: registering the metrics: %w; give a second Observer on one registry a registry wrapped with prometheus.WrapRegistererWithPrefix or prometheus.WrapRegistererWith", err)
		}
	}
	return ob, nil
}

// Observe counts e, and a shed by the priority ctx carries. Its key is
// never used.
func (o *Observer) Observe(ctx context.Context, e core.Event) {
	s := o.seriesFor(e.Decision.Limit.Name, e.Transport)
	c := s.counts.cell()
	if int(e.Outcome) < numOutcomes {
		c[wordRequests+2*int(e.Outcome)+b2i(e.Shadow)].Add(1)
	} else {
		// An outcome this package does not know yet: counted, slowly.
		o.unknownOutcomes.WithLabelValues(s.limit, s.transport, e.Outcome.String(), shadowLabel(e.Shadow)).Inc()
	}
	if e.Latency > 0 {
		observe(c, wordLatencySum, o.latencyBounds, int64(e.Latency))
	}
	if e.Decision.Leased {
		c[wordLeased].Add(1)
	}
	if e.Decision.Overflow {
		c[wordOverflow].Add(1)
	}
	if e.Held > 0 {
		observe(c, o.wordHeldSum, o.holdBounds, int64(e.Held))
	}
	if e.Outcome == core.OutcomeShed {
		o.shed.WithLabelValues(s.limit, s.transport, obsreg.PriorityLabel(overload.PriorityOf(ctx))).Inc()
	}
	if e.Outcome == core.OutcomeStoreError {
		if int(e.Failure) < numFailures {
			c[wordStoreErrs+int(e.Failure)].Add(1)
		} else {
			o.unknownFailures.WithLabelValues(s.transport, e.Failure.String()).Inc()
		}
	}
}

// seriesFor returns the series of limit and transport, adding it the
// first time they are seen. It looks first by the strings' identity (see
// identityCache), then by their content.
func (o *Observer) seriesFor(limit, transport string) *series {
	h := identityHash(limit, transport)
	if s := o.byIdentity.find(h, limit, transport); s != nil {
		return s
	}
	s := o.series.Get(seriesKey{Limit: limit, Transport: transport})
	if s == nil {
		s = o.series.Add(seriesKey{Limit: limit, Transport: transport}, func() *series {
			return &series{limit: limit, transport: transport, counts: newStripedCounts(o.wordHeldSum + 1 + len(o.holdBounds) + 1)}
		})
	}
	o.byIdentity.add(h, limit, transport, s)
	return s
}

// b2i is 1 for true, 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// shadowLabel is the shadow label's value.
func shadowLabel(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
