package promobs

import (
	"github.com/floodgate/floodgate/internal/obsreg"
	"github.com/prometheus/client_golang/prometheus"
)

// The stores' health (WithHealth): a collector that reads each store's
// core.Health at scrape time.

// breakerStates are the states a breaker can be in (core.Health.Breaker),
// each exported as a series of floodgate_breaker_state.
var breakerStates = []string{"closed", "open", "half-open"}

// breakerCollector reads the breakers at scrape time.
type breakerCollector struct {
	state, decisions, failures, opens *prometheus.Desc
	leases, returned, returns         *prometheus.Desc
	breakers                          []obsreg.Breaker
}

// newBreakerCollector makes the collector of the breakers bs, its metrics'
// names prefixed by ns.
func newBreakerCollector(ns string, constLabels prometheus.Labels, bs []obsreg.Breaker) *breakerCollector {
	return &breakerCollector{
		state: prometheus.NewDesc(prometheus.BuildFQName(ns, "breaker", "state"),
			"Circuit breaker state: 1 for the state the breaker is in (closed, open, half-open), 0 for the others.",
			[]string{"breaker", "state"}, constLabels),
		decisions: prometheus.NewDesc(prometheus.BuildFQName(ns, "fallback", "decisions_total"),
			"Decisions of a limiter on a shared store, by the side that made them: the primary (the store), the local limiter deciding while it fails, or a local quota lease.",
			[]string{"breaker", "side"}, constLabels),
		failures: prometheus.NewDesc(prometheus.BuildFQName(ns, "fallback", "primary_failures_total"),
			"Calls to a limiter's shared store that failed.",
			[]string{"breaker"}, constLabels),
		opens: prometheus.NewDesc(prometheus.BuildFQName(ns, "breaker", "opens_total"),
			"How often the circuit breaker opened, from closed or after a failed probe.",
			[]string{"breaker"}, constLabels),
		leases: prometheus.NewDesc(prometheus.BuildFQName(ns, "store", "leases_total"),
			"Local quota leases a limiter's shared store granted (each a round trip).",
			[]string{"breaker"}, constLabels),
		returned: prometheus.NewDesc(prometheus.BuildFQName(ns, "store", "returned_units_total"),
			"Units local quota leases gave back to a limiter's shared store unspent.",
			[]string{"breaker"}, constLabels),
		returns: prometheus.NewDesc(prometheus.BuildFQName(ns, "store", "returns_total"),
			"Round trips that gave local quota units back to a limiter's shared store.",
			[]string{"breaker"}, constLabels),
		breakers: bs,
	}
}

// Describe implements prometheus.Collector.
func (c *breakerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.state
	ch <- c.decisions
	ch <- c.failures
	ch <- c.opens
	ch <- c.leases
	ch <- c.returned
	ch <- c.returns
}

// Collect implements prometheus.Collector.
func (c *breakerCollector) Collect(ch chan<- prometheus.Metric) {
	for _, b := range c.breakers {
		h := b.Health.Health()
		for _, s := range breakerStates {
			v := 0.0
			if s == h.Breaker {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(c.state, prometheus.GaugeValue, v, b.Name, s)
		}
		ch <- prometheus.MustNewConstMetric(c.decisions, prometheus.CounterValue, float64(h.StoreDecisions), b.Name, "primary")
		ch <- prometheus.MustNewConstMetric(c.decisions, prometheus.CounterValue, float64(h.LocalDecisions), b.Name, "local")
		ch <- prometheus.MustNewConstMetric(c.decisions, prometheus.CounterValue, float64(h.LeaseDecisions), b.Name, "lease")
		ch <- prometheus.MustNewConstMetric(c.leases, prometheus.CounterValue, float64(h.Leases), b.Name)
		ch <- prometheus.MustNewConstMetric(c.returned, prometheus.CounterValue, float64(h.Returned), b.Name)
		ch <- prometheus.MustNewConstMetric(c.returns, prometheus.CounterValue, float64(h.Returns), b.Name)
		ch <- prometheus.MustNewConstMetric(c.failures, prometheus.CounterValue, float64(h.Failures), b.Name)
		ch <- prometheus.MustNewConstMetric(c.opens, prometheus.CounterValue, float64(h.Opens), b.Name)
	}
}
