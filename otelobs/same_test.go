package otelobs_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/otelobs"
	"github.com/floodgate/floodgate/promobs"
)

// promSamples gathers reg and flattens it as collect does.
func promSamples(t *testing.T, reg prometheus.Gatherer) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, lp := range m.GetLabel() {
				ls = append(ls, lp.GetName()+"="+lp.GetValue())
			}
			id := func(suffix string, extra ...string) string {
				return mf.GetName() + suffix + "{" + strings.Join(append(ls[:len(ls):len(ls)], extra...), ",") + "}"
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out[id("")] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[id("")] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				out[id("_count")] = float64(h.GetSampleCount())
				out[id("_sum")] = h.GetSampleSum()
				for _, b := range h.GetBucket() {
					out[id("_bucket", fmt.Sprintf("le=%g", b.GetUpperBound()))] = float64(b.GetCumulativeCount())
				}
			default:
				t.Fatalf("%s: unexpected type %v", mf.GetName(), mf.GetType())
			}
		}
	}
	return out
}

// promName is the name a Prometheus exporter gives an instrument under
// the OpenTelemetry compatibility rules: dots become underscores, a unit
// of seconds adds _seconds (an annotation in braces adds nothing), a
// counter adds _total.
func promName(f family) string {
	n := strings.ReplaceAll(f.name, ".", "_")
	if f.unit == "s" {
		n += "_seconds"
	}
	if f.kind == "counter" {
		n += "_total"
	}
	return n
}

// TestSameAsPromobs: fed the same events and the same stores' health,
// this package and promobs report the same series with the same values,
// once OpenTelemetry's names are put as a Prometheus exporter puts them.
func TestSameAsPromobs(t *testing.T) {
	t.Parallel()
	redis := &reporter{h: core.Health{Breaker: "half-open", StoreDecisions: 70, LocalDecisions: 3, Failures: 2, Opens: 1, LeaseDecisions: 900, Leases: 4, Returned: 11, Returns: 3}}
	obs, reader := sdkObserver(t, otelobs.WithHealth("redis", redis))
	reg := prometheus.NewRegistry()
	prom, err := promobs.New(reg, promobs.WithHealth("redis", redis))
	if err != nil {
		t.Fatal(err)
	}
	events := benchEvents(1024)
	for i, e := range events {
		// Durations of whole 512ths and 8ths of a second, whose sums
		// both packages hold exactly.
		e.Latency = time.Duration(1+i%7) * (time.Second / 512)
		if e.Held > 0 {
			e.Held = time.Duration(1+i%5) * (time.Second / 8)
		}
		if i%9 == 0 {
			e.Decision.Leased = true
		}
		obs.Observe(context.Background(), e)
		prom.Observe(context.Background(), e)
	}
	got, fams := collect(t, reader)
	translated := map[string]float64{}
	for k, v := range got {
		name, attrs, _ := strings.Cut(k, "{")
		suffix := ""
		if _, ok := fams[name]; !ok {
			i := strings.LastIndexByte(name, '_')
			name, suffix = name[:i], name[i:]
		}
		f, ok := fams[name]
		if !ok {
			t.Fatalf("%s: no instrument", k)
		}
		translated[promName(f)+suffix+"{"+attrs] = v
	}
	want := promSamples(t, reg)
	if len(want) < 500 {
		t.Fatalf("promobs reported %d samples: the test fed too little", len(want))
	}
	diff(t, translated, want)
}
