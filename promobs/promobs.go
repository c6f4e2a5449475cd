package promobs

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/fallback"
	"github.com/floodgate/floodgate/internal/option"
)

// Observer counts what the adapters report into Prometheus metrics (the
// package documentation lists them). Make one with [New] and hand it to
// an adapter's WithObserver. It is safe for concurrent use, and after the
// first event of each limit and transport, observing an event allocates
// nothing and takes no lock.
type Observer struct {
	requests  *prometheus.CounterVec   // limit, transport, outcome, shadow
	overflow  *prometheus.CounterVec   // limit, transport
	storeErrs *prometheus.CounterVec   // transport, failure
	latency   *latencyCollector        // limit, transport
	held      *prometheus.HistogramVec // limit, transport

	// series maps a limit and transport to its children, resolved as
	// they are first needed. The map is copied on write, under mu, so
	// that reading it takes one atomic load and no lock.
	series atomic.Pointer[map[seriesKey]*series]
	mu     sync.Mutex
}

var _ core.Observer = (*Observer)(nil)

// numOutcomes is how many outcomes core defines; an event's outcome beyond
// them takes the slow path.
const numOutcomes = int(core.OutcomeCanceled) + 1

// numFailures is how many failure modes core defines.
const numFailures = int(core.FailOpen) + 1

type seriesKey struct{ limit, transport string }

// series holds the children of one limit and transport. Each is created on
// first use, so that a limit that never overflows, or a transport whose
// denials are never held, exports no series for it.
type series struct {
	limit, transport string
	requests         [numOutcomes][2]atomic.Pointer[counter] // by outcome, shadow
	storeErrs        [numFailures]atomic.Pointer[counter]    // by failure mode
	overflow         atomic.Pointer[counter]
	latency          atomic.Pointer[latencyCounts]
	held             atomic.Pointer[histogram]
}

// counter and histogram box a child so that an atomic.Pointer can hold it.
type counter struct{ prometheus.Counter }
type histogram struct{ prometheus.Observer }

// New makes an Observer and registers its metrics with reg (pass
// prometheus.DefaultRegisterer for the default registry, which
// promhttp.Handler serves). It fails if an option is invalid or if reg
// refuses a metric, such as one registered already: two Observers on one
// registry need different namespaces or const labels. On failure nothing
// stays registered.
func New(reg prometheus.Registerer, opts ...Option) (*Observer, error) {
	o := options{
		namespace: DefaultNamespace,
		latency:   DefaultLatencyBuckets,
		hold:      DefaultHoldBuckets,
		errs:      option.Errors{Prefix: "promobs: "},
	}
	if err := option.Apply(&o, &o.errs, opts); err != nil {
		return nil, err
	}
	if reg == nil {
		return nil, errors.New("promobs: nil Registerer; pass prometheus.DefaultRegisterer, or a registry of your own")
	}
	ob := &Observer{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: o.namespace, Name: "requests_total", ConstLabels: o.constLabels,
			Help: "Requests the rate limiter checked, by the limit that decided (\"\" when none did), transport, outcome, and whether shadow mode admitted them anyway.",
		}, []string{"limit", "transport", "outcome", "shadow"}),
		overflow: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: o.namespace, Name: "overflow_decisions_total", ConstLabels: o.constLabels,
			Help: "Decisions made against the limiter's shared overflow state because its table of keys was full; a steady rate means the capacity is too small.",
		}, []string{"limit", "transport"}),
		storeErrs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: o.namespace, Name: "store_errors_total", ConstLabels: o.constLabels,
			Help: "Requests for which the store failed, by the failure mode applied (fail-open admitted them, fail-closed refused them).",
		}, []string{"transport", "failure"}),
		latency: newLatencyCollector(prometheus.NewDesc(prometheus.BuildFQName(o.namespace, "", "decision_duration_seconds"),
			"How long the limiter took to answer (a store round trip included; the shaping wait and the denial hold excluded).",
			[]string{"limit", "transport"}, o.constLabels), o.latency),
		held: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: o.namespace, Name: "denial_hold_seconds", ConstLabels: o.constLabels, Buckets: o.hold,
			Help: "How long refusals were held before they were answered (WithDenialHold); refusals answered at once are not counted.",
		}, []string{"limit", "transport"}),
	}
	ob.series.Store(&map[seriesKey]*series{})
	ob.latency.series = &ob.series
	cs := []prometheus.Collector{ob.requests, ob.overflow, ob.storeErrs, ob.latency, ob.held}
	if len(o.breakers) > 0 {
		cs = append(cs, newBreakerCollector(o.namespace, o.constLabels, o.breakers))
	}
	for i, c := range cs {
		if err := reg.Register(c); err != nil {
			for _, done := range cs[:i] {
				reg.Unregister(done)
			}
			return nil, fmt.Errorf("promobs: registering the metrics: %w; two Observers on one registry need different namespaces (WithNamespace) or const labels (WithConstLabels)", err)
		}
	}
	return ob, nil
}

// Observe counts e. Its key is never used.
func (o *Observer) Observe(_ context.Context, e core.Event) {
	s := o.seriesFor(e.Decision.Limit.Name, e.Transport)
	if int(e.Outcome) < numOutcomes {
		p := &s.requests[e.Outcome][b2i(e.Shadow)]
		if c := p.Load(); c != nil {
			c.Inc()
		} else {
			o.newRequests(p, s, e.Outcome, e.Shadow).Inc()
		}
	} else {
		// An outcome this package does not know yet: counted, slowly.
		o.requests.WithLabelValues(s.limit, s.transport, e.Outcome.String(), shadowLabel(e.Shadow)).Inc()
	}
	if e.Latency > 0 {
		h := s.latency.Load()
		if h == nil {
			h = o.latency.counts(&s.latency)
		}
		h.observe(o.latency.bounds, int64(e.Latency))
	}
	if e.Decision.Overflow {
		if c := s.overflow.Load(); c != nil {
			c.Inc()
		} else {
			newCounter(&s.overflow, o.overflow, s.limit, s.transport).Inc()
		}
	}
	if e.Held > 0 {
		if h := s.held.Load(); h != nil {
			h.Observe(e.Held.Seconds())
		} else {
			newHistogram(&s.held, o.held, s).Observe(e.Held.Seconds())
		}
	}
	if e.Outcome == core.OutcomeStoreError {
		if int(e.Failure) < numFailures {
			p := &s.storeErrs[e.Failure]
			if c := p.Load(); c != nil {
				c.Inc()
			} else {
				newCounter(p, o.storeErrs, s.transport, e.Failure.String()).Inc()
			}
		} else {
			o.storeErrs.WithLabelValues(s.transport, e.Failure.String()).Inc()
		}
	}
}

// seriesFor returns the children of limit and transport, adding an entry
// the first time they are seen.
func (o *Observer) seriesFor(limit, transport string) *series {
	if s := (*o.series.Load())[seriesKey{limit, transport}]; s != nil {
		return s
	}
	return o.addSeries(limit, transport)
}

func (o *Observer) addSeries(limit, transport string) *series {
	o.mu.Lock()
	defer o.mu.Unlock()
	old := *o.series.Load()
	k := seriesKey{limit, transport}
	if s := old[k]; s != nil {
		return s
	}
	next := make(map[seriesKey]*series, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	s := &series{limit: limit, transport: transport}
	next[k] = s
	o.series.Store(&next)
	return s
}

func (o *Observer) newRequests(p *atomic.Pointer[counter], s *series, out core.Outcome, shadow bool) prometheus.Counter {
	return newCounter(p, o.requests, s.limit, s.transport, out.String(), shadowLabel(shadow))
}

// newCounter resolves vec's child for lvs into *p, unless another
// goroutine did first; both resolve the same child.
func newCounter(p *atomic.Pointer[counter], vec *prometheus.CounterVec, lvs ...string) prometheus.Counter {
	c := &counter{vec.WithLabelValues(lvs...)}
	if !p.CompareAndSwap(nil, c) {
		c = p.Load()
	}
	return c.Counter
}

func newHistogram(p *atomic.Pointer[histogram], vec *prometheus.HistogramVec, s *series) prometheus.Observer {
	h := &histogram{vec.WithLabelValues(s.limit, s.transport)}
	if !p.CompareAndSwap(nil, h) {
		h = p.Load()
	}
	return h.Observer
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func shadowLabel(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// breakerStates are the states a breaker can be in, each exported as a
// series of floodgate_breaker_state.
var breakerStates = []fallback.State{fallback.Closed, fallback.Open, fallback.HalfOpen}

// breakerCollector reads the breakers at scrape time.
type breakerCollector struct {
	state, decisions, failures, opens *prometheus.Desc
	breakers                          []breakerSource
}

func newBreakerCollector(ns string, constLabels prometheus.Labels, bs []breakerSource) *breakerCollector {
	return &breakerCollector{
		state: prometheus.NewDesc(prometheus.BuildFQName(ns, "breaker", "state"),
			"Circuit breaker state: 1 for the state the breaker is in (closed, open, half-open), 0 for the others.",
			[]string{"breaker", "state"}, constLabels),
		decisions: prometheus.NewDesc(prometheus.BuildFQName(ns, "fallback", "decisions_total"),
			"Decisions of a fallback limiter, by the side that made them: the primary (shared store) or the local limiter.",
			[]string{"breaker", "side"}, constLabels),
		failures: prometheus.NewDesc(prometheus.BuildFQName(ns, "fallback", "primary_failures_total"),
			"Calls to a fallback limiter's primary that failed with a store error or the timeout.",
			[]string{"breaker"}, constLabels),
		opens: prometheus.NewDesc(prometheus.BuildFQName(ns, "breaker", "opens_total"),
			"How often the circuit breaker opened, from closed or after a failed probe.",
			[]string{"breaker"}, constLabels),
		breakers: bs,
	}
}

// Describe implements prometheus.Collector.
func (c *breakerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.state
	for _, b := range c.breakers {
		if b.stats != nil {
			ch <- c.decisions
			ch <- c.failures
			ch <- c.opens
			return
		}
	}
}

// Collect implements prometheus.Collector.
func (c *breakerCollector) Collect(ch chan<- prometheus.Metric) {
	for _, b := range c.breakers {
		now := b.state()
		for _, s := range breakerStates {
			v := 0.0
			if s == now {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(c.state, prometheus.GaugeValue, v, b.name, s.String())
		}
		if b.stats == nil {
			continue
		}
		st := b.stats()
		ch <- prometheus.MustNewConstMetric(c.decisions, prometheus.CounterValue, float64(st.PrimaryDecisions), b.name, fallback.Primary.String())
		ch <- prometheus.MustNewConstMetric(c.decisions, prometheus.CounterValue, float64(st.LocalDecisions), b.name, fallback.Local.String())
		ch <- prometheus.MustNewConstMetric(c.failures, prometheus.CounterValue, float64(st.PrimaryFailures), b.name)
		ch <- prometheus.MustNewConstMetric(c.opens, prometheus.CounterValue, float64(st.Opens), b.name)
	}
}

// latencyCollector exports the decision-latency histograms. It is lighter
// than a prometheus.HistogramVec on the path every decision takes: two
// uncontended atomic additions of integers (the bucket, the sum in
// nanoseconds) where the client library's histogram makes four and a
// compare-and-swap loop on a float. The price: a scrape that runs during
// an observation may see it in the sum and not yet in the count, which
// the next scrape corrects.
type latencyCollector struct {
	desc    *prometheus.Desc
	bounds  []int64   // the buckets' upper bounds in nanoseconds
	seconds []float64 // the same, as exported
	series  *atomic.Pointer[map[seriesKey]*series]
}

func newLatencyCollector(desc *prometheus.Desc, buckets []float64) *latencyCollector {
	c := &latencyCollector{desc: desc}
	for _, b := range buckets {
		if math.IsInf(b, +1) {
			break // the +Inf bucket is implicit
		}
		c.bounds = append(c.bounds, int64(math.Round(b*1e9)))
		c.seconds = append(c.seconds, b)
	}
	return c
}

// latencyCounts is one series' histogram: a count per bucket (the last
// for observations above every bound) and the sum.
type latencyCounts struct {
	buckets []atomic.Uint64
	sumNs   atomic.Int64
}

// counts resolves *p, unless another goroutine did first.
func (c *latencyCollector) counts(p *atomic.Pointer[latencyCounts]) *latencyCounts {
	h := &latencyCounts{buckets: make([]atomic.Uint64, len(c.bounds)+1)}
	if !p.CompareAndSwap(nil, h) {
		h = p.Load()
	}
	return h
}

func (h *latencyCounts) observe(bounds []int64, ns int64) {
	i := 0
	for i < len(bounds) && ns > bounds[i] {
		i++
	}
	h.buckets[i].Add(1)
	h.sumNs.Add(ns)
}

// Describe implements prometheus.Collector.
func (c *latencyCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *latencyCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range *c.series.Load() {
		h := s.latency.Load()
		if h == nil {
			continue
		}
		cum := make(map[float64]uint64, len(c.seconds))
		var n uint64
		for i, b := range c.seconds {
			n += h.buckets[i].Load()
			cum[b] = n
		}
		n += h.buckets[len(c.seconds)].Load()
		sum := float64(h.sumNs.Load()) / 1e9
		ch <- prometheus.MustNewConstHistogram(c.desc, n, sum, cum, s.limit, s.transport)
	}
}
