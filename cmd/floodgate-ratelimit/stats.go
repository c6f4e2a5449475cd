package main

import (
	"context"
	"log/slog"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/rls"
	"github.com/floodgate/floodgate/internal/rlsprom"
	"github.com/floodgate/floodgate/internal/rlsstats"
)

// newStats returns where upstream's counters go: Prometheus under
// upstream's names on reg, with the metrics on; statsd with USE_STATSD.
// nil: nowhere (DISABLE_STATS).
func newStats(ctx context.Context, s *settings, reg prometheus.Registerer, log *slog.Logger) (rlsstats.Sink, error) {
	if !s.metrics {
		return nil, nil
	}
	prom, err := rlsprom.New(reg)
	if err != nil {
		return nil, err
	}
	sinks := rlsstats.Tee{prom}
	if s.statsd.addr != "" {
		sd, err := rlsstats.NewStatsd(ctx, s.statsd.addr, s.statsd.interval, log)
		if err != nil {
			return nil, err
		}
		sinks = append(sinks, sd)
	}
	return sinks, nil
}

// storeErrors counts, in sink, each descriptor the failure mode answered
// because the store failed: upstream's should_rate_limit.redis_error.
func storeErrors(sink rlsstats.Sink) core.Observer {
	return core.ObserverFunc(func(_ context.Context, e core.Event) {
		if e.Outcome == core.OutcomeStoreError {
			sink.Error("redis_error")
		}
	})
}

// counted is a service whose calls sink counts and times
// (ratelimit_server.ShouldRateLimit.*), and whose failed calls it counts
// as service errors.
type counted struct {
	rlsv3.UnimplementedRateLimitServiceServer
	srv  rlsv3.RateLimitServiceServer
	sink rlsstats.Sink
}

func (c counted) ShouldRateLimit(ctx context.Context, req *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	start := time.Now()
	resp, err := c.srv.ShouldRateLimit(ctx, req)
	c.sink.Request("ShouldRateLimit", time.Since(start))
	if err != nil {
		c.sink.Error("service_error")
	}
	return resp, err
}

// droppedOverrides exports the limit overrides svc matched as if absent,
// past the bound on distinct overrides (see rls.Service.DroppedOverrides).
func droppedOverrides(reg prometheus.Registerer, svc *rls.Service) error {
	return reg.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "floodgate_rls_dropped_overrides_total",
		Help: "Descriptors whose limit override was ignored: the configuration held as many distinct overrides as it keeps.",
	}, func() float64 { return float64(svc.DroppedOverrides()) }))
}
