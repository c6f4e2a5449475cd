package promobs

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/floodgate/floodgate/internal/obsreg"
)

// The overload guards' state (WithGuard): a collector that reads each
// guard at scrape time.

// guardCollector reads the guards at scrape time.
type guardCollector struct {
	limit, inFlight, latency *prometheus.Desc
	guards                   []obsreg.Guard
}

func newGuardCollector(ns string, constLabels prometheus.Labels, gs []obsreg.Guard) *guardCollector {
	return &guardCollector{
		limit: prometheus.NewDesc(prometheus.BuildFQName(ns, "guard", "limit"),
			"The bound an overload guard puts on requests in flight now, for Normal priority; 0 while none applies (BBR with its CPU below the threshold).",
			[]string{"guard"}, constLabels),
		inFlight: prometheus.NewDesc(prometheus.BuildFQName(ns, "guard", "in_flight"),
			"Requests (units) an overload guard admitted that have not ended.",
			[]string{"guard"}, constLabels),
		latency: prometheus.NewDesc(prometheus.BuildFQName(ns, "guard", "latency_seconds"),
			"The latency an overload guard judges the service by: Adaptive's baseline (without a queue), BBR's least bucket latency; 0 before any was measured.",
			[]string{"guard"}, constLabels),
		guards: gs,
	}
}

// Describe implements prometheus.Collector.
func (c *guardCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.limit
	ch <- c.inFlight
	ch <- c.latency
}

// Collect implements prometheus.Collector.
func (c *guardCollector) Collect(ch chan<- prometheus.Metric) {
	for _, g := range c.guards {
		r := g.Guard.Reading()
		ch <- prometheus.MustNewConstMetric(c.limit, prometheus.GaugeValue, float64(r.Limit), g.Name)
		ch <- prometheus.MustNewConstMetric(c.inFlight, prometheus.GaugeValue, float64(r.InFlight), g.Name)
		ch <- prometheus.MustNewConstMetric(c.latency, prometheus.GaugeValue, r.Latency.Seconds(), g.Name)
	}
}
