package overloadsim

import (
	"testing"
	"time"
)

// BenchmarkRun measures the simulator: one second at 2× capacity on the
// default server (about 20,000 requests), per anchor, reported per request.
func BenchmarkRun(b *testing.B) {
	cfg := Config{Seed: 1, Duration: time.Second, Load: []Step{{0, 2}}}
	for _, a := range append(Anchors(), Anchor{Name: "core static", New: staticCore(50)}) {
		b.Run(a.Name, func(b *testing.B) {
			b.ReportAllocs()
			requests := 0
			for b.Loop() {
				r, err := Run(cfg, a.New)
				if err != nil {
					b.Fatal(err)
				}
				for _, bin := range r.Bins {
					requests += bin.Arrived
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(requests), "ns/request")
		})
	}
}
