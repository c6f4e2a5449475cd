package otelobs_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// family is what a collection says of one instrument besides its points.
type family struct {
	kind        string // "counter" (a monotonic sum), "gauge" or "histogram"
	unit, desc  string
	bounds      []float64 // a histogram's
	cumulative  bool
	scope, name string
}

// collect reads r and flattens what it holds to "name{key=value,...}" ->
// value: sums and gauges as they are, histograms as their _count, _sum and
// cumulative _bucket counts of the finite bounds (as Prometheus shows
// them). Attributes are sorted by key, as a set keeps them. It also
// returns each instrument's family.
func collect(t *testing.T, r *sdkmetric.ManualReader) (map[string]float64, map[string]family) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out, fams := map[string]float64{}, map[string]family{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			f := family{unit: m.Unit, desc: m.Description, scope: sm.Scope.Name, name: m.Name}
			id := func(suffix string, set attribute.Set, extra ...string) string {
				var kv []string
				for _, a := range set.ToSlice() {
					kv = append(kv, string(a.Key)+"="+a.Value.Emit())
				}
				return m.Name + suffix + "{" + strings.Join(append(kv, extra...), ",") + "}"
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				if !d.IsMonotonic {
					t.Fatalf("%s: a sum that is not monotonic", m.Name)
				}
				f.kind, f.cumulative = "counter", d.Temporality == metricdata.CumulativeTemporality
				for _, p := range d.DataPoints {
					out[id("", p.Attributes)] = float64(p.Value)
				}
			case metricdata.Gauge[int64]:
				f.kind, f.cumulative = "gauge", true
				for _, p := range d.DataPoints {
					out[id("", p.Attributes)] = float64(p.Value)
				}
			case metricdata.Gauge[float64]:
				f.kind, f.cumulative = "gauge", true
				for _, p := range d.DataPoints {
					out[id("", p.Attributes)] = p.Value
				}
			case metricdata.Histogram[float64]:
				f.kind, f.cumulative = "histogram", d.Temporality == metricdata.CumulativeTemporality
				for _, p := range d.DataPoints {
					f.bounds = p.Bounds
					out[id("_count", p.Attributes)] = float64(p.Count)
					out[id("_sum", p.Attributes)] = p.Sum
					var n uint64
					for i, b := range p.Bounds {
						n += p.BucketCounts[i]
						out[id("_bucket", p.Attributes, fmt.Sprintf("le=%g", b))] = float64(n)
					}
				}
			default:
				t.Fatalf("%s: unexpected data %T", m.Name, m.Data)
			}
			fams[m.Name] = f
		}
	}
	return out, fams
}

// only keeps the points whose names start with prefix.
func only(s map[string]float64, prefix string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range s {
		if strings.HasPrefix(k, prefix) {
			out[k] = v
		}
	}
	return out
}

func diff(t *testing.T, got, want map[string]float64) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if g, ok := got[k]; !ok || g != want[k] {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, want[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected %s = %v", k, got[k])
		}
	}
}

// tracing returns a tracer whose spans, once ended, land in the returned
// exporter.
func tracing() (trace.Tracer, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	return tp.Tracer("test"), exp
}

// events renders the events of the ended spans, each as its name and its
// attributes in the order they were given.
func events(exp *tracetest.InMemoryExporter) []string {
	var out []string
	for _, s := range exp.GetSpans() {
		for _, e := range s.Events {
			line := s.Name + ": " + e.Name
			for _, a := range e.Attributes {
				line += " " + string(a.Key) + "=" + a.Value.Emit()
			}
			out = append(out, line)
		}
	}
	return out
}
