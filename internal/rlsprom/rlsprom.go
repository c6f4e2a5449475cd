package rlsprom

import (
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floodgate/floodgate/internal/rlsstats"
)

var _ rlsstats.Sink = (*Metrics)(nil)

// MaxSeries bounds the distinct (domain, key1, key2) label sets a Metrics
// keeps for rules' counters.
const MaxSeries = 10000

// Metrics holds the counters: an rlsstats.Sink, safe for concurrent use.
type Metrics struct {
	total, over, near, within, shadow *prometheus.CounterVec
	overCached                        *prometheus.CounterVec
	requests                          *prometheus.CounterVec
	responseTime                      *prometheus.HistogramVec
	errs                              *prometheus.CounterVec
	loadOK, loadErr                   prometheus.Counter

	mu     sync.RWMutex
	series map[string]*series // by stats key
	labels map[[3]string]bool // label sets made
}

// series are one label set's counters, resolved once.
type series struct {
	total, over, near, within, shadow, overCached prometheus.Counter
}

// New registers the counters with reg.
func New(reg prometheus.Registerer) (*Metrics, error) {
	rule := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ratelimit_service_rate_limit_" + name, Help: help}, []string{"domain", "key1", "key2"})
	}
	m := &Metrics{
		total:  rule("total_hits", "Hits asked of a rate limit (the sum of the descriptors' hits addends)."),
		over:   rule("over_limit", "Hits a rate limit refused."),
		near:   rule("near_limit", "Hits admitted past the near-limit ratio of a rate limit."),
		within: rule("within_limit", "Hits a rate limit admitted."),
		shadow: rule("shadow_mode", "Hits over a rate limit that shadow mode admitted."),
		// Upstream's default mapping has no rule for this one (see the
		// package documentation): it is named as the others are.
		overCached: rule("over_limit_with_local_cache", "Hits a rate limit refused from the local cache of refused keys, with no store asked (over_limit counts them too)."),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ratelimit_service_total_requests", Help: "Calls to the service, by gRPC method."},
			[]string{"grpc_method"}),
		responseTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "ratelimit_service_response_time_seconds", Help: "Time to answer a call, by gRPC method.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1}}, []string{"grpc_method"}),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ratelimit_service_should_rate_limit_error", Help: "Calls answered by the failure mode (redis_error) or failed (service_error)."},
			[]string{"err_type"}),
		loadOK:  prometheus.NewCounter(prometheus.CounterOpts{Name: "ratelimit_service_config_load_success", Help: "Configurations loaded."}),
		loadErr: prometheus.NewCounter(prometheus.CounterOpts{Name: "ratelimit_service_config_load_error", Help: "Configuration loads that found an error."}),
		series:  make(map[string]*series),
		labels:  make(map[[3]string]bool),
	}
	for _, c := range []prometheus.Collector{m.total, m.over, m.near, m.within, m.shadow, m.overCached, m.requests, m.responseTime, m.errs, m.loadOK, m.loadErr} {
		if err := reg.Register(c); err != nil {
			return nil, errors.Join(errors.New("rlsprom: registering upstream's metrics"), err)
		}
	}
	return m, nil
}

// Add counts c for the rule whose stats key is key: the domain and the
// rule's key path, dot-separated ("domain.key1_value1.key2").
func (m *Metrics) Add(key string, c rlsstats.Counts) {
	s := m.of(key)
	add(s.total, c.TotalHits)
	add(s.over, c.OverLimit)
	add(s.near, c.NearLimit)
	add(s.within, c.WithinLimit)
	add(s.shadow, c.ShadowMode)
	add(s.overCached, c.OverLimitWithLocalCache)
}

func add(c prometheus.Counter, n uint64) {
	if n > 0 {
		c.Add(float64(n))
	}
}

// of returns key's counters, making them on first use.
func (m *Metrics) of(key string) *series {
	m.mu.RLock()
	s := m.series[key]
	m.mu.RUnlock()
	if s != nil {
		return s
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.series[key]; s != nil {
		return s
	}
	l := rlsstats.Labels(key)
	if !m.labels[l] {
		if len(m.labels) >= MaxSeries {
			l = [3]string{l[0], "overflow", ""}
		}
		m.labels[l] = true
	}
	s = &series{
		total: m.total.WithLabelValues(l[:]...), over: m.over.WithLabelValues(l[:]...), near: m.near.WithLabelValues(l[:]...),
		within: m.within.WithLabelValues(l[:]...), shadow: m.shadow.WithLabelValues(l[:]...),
		overCached: m.overCached.WithLabelValues(l[:]...),
	}
	if len(m.series) < 2*MaxSeries { // keys past it resolve each time, bounded all the same
		m.series[key] = s
	}
	return s
}

// Request counts a call of method ("ShouldRateLimit") that took d.
func (m *Metrics) Request(method string, d time.Duration) {
	m.requests.WithLabelValues(method).Inc()
	m.responseTime.WithLabelValues(method).Observe(d.Seconds())
}

// Error counts a call that failed: "redis_error" when the store failed
// (the failure mode answered), "service_error" for any other failure.
func (m *Metrics) Error(kind string) {
	m.errs.WithLabelValues(kind).Inc()
}

// ConfigLoad counts a configuration load: ok when it found no error.
func (m *Metrics) ConfigLoad(ok bool) {
	if ok {
		m.loadOK.Inc()
	} else {
		m.loadErr.Inc()
	}
}
