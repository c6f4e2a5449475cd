package main

import (
	"fmt"
	"net/http"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/floodgate/floodgate/otelobs"
)

// otelMetrics returns an OpenTelemetry observer, beside the Prometheus
// one, and an admin handler that shows what its instruments hold. A
// service gives otelobs the MeterProvider it already exports with (a
// periodic reader and an OTLP exporter, or the global provider); this
// example keeps to loopback: the SDK with a ManualReader, read at each
// request to the handler. With the application's tracing in front of the
// middleware (otelhttp), each refusal would also be an event on the
// request's span.
func otelMetrics() (*otelobs.Observer, http.Handler, error) {
	reader := sdkmetric.NewManualReader()
	obs, err := otelobs.New(otelobs.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	if err != nil {
		return nil, nil, err
	}
	show := func(w http.ResponseWriter, r *http.Request) {
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(r.Context(), &rm); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		var lines []string
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				lines = append(lines, points(m)...)
			}
		}
		slices.Sort(lines)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		for _, l := range lines {
			fmt.Fprintln(w, l)
		}
	}
	return obs, http.HandlerFunc(show), nil
}

// points renders an instrument's data points, one a line: the name, the
// attributes, and the value (a histogram's count and sum).
func points(m metricdata.Metrics) []string {
	var out []string
	line := func(attrs attribute.Set, value string) {
		out = append(out, fmt.Sprintf("%s{%s} %s", m.Name, attrs.Encoded(attribute.DefaultEncoder()), value))
	}
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			line(p.Attributes, fmt.Sprint(p.Value))
		}
	case metricdata.Gauge[int64]:
		for _, p := range d.DataPoints {
			line(p.Attributes, fmt.Sprint(p.Value))
		}
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			line(p.Attributes, fmt.Sprintf("count=%d sum=%gs", p.Count, p.Sum))
		}
	}
	return out
}
